//! MurmurHash3_x86_32.

const MURMUR_C1: u32 = 0xcc9e_2d51;
const MURMUR_C2: u32 = 0x1b87_3593;

#[inline(always)]
fn murmur_mix_k(k: u32) -> u32 {
    k.wrapping_mul(MURMUR_C1)
        .rotate_left(15)
        .wrapping_mul(MURMUR_C2)
}

#[inline(always)]
fn murmur_fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// scikit-learn's bucket among `n` (`FeatureHasher`, `HashingVectorizer`)
/// for the one hash whose `abs` overflows, `i32::MIN`: it defines
/// `abs(-2**31) % n` as `(2**31 - 1 - (n - 1)) % n`. Every other hash `h`
/// goes to `h.unsigned_abs() % n`.
pub fn sklearn_bucket_of_i32_min(n: u64) -> u64 {
    (i32::MAX as u64 - (n - 1)) % n
}

/// MurmurHash3_x86_32 of `bytes` with `seed`, as in Austin Appleby's
/// reference implementation.
///
/// This equals scikit-learn's
/// `sklearn.utils.murmurhash3_32(bytes, seed=seed, positive=True)`; the
/// `positive=False` result (the default there) is the same bits read as
/// `i32`, i.e. `murmur3_x86_32(bytes, seed) as i32`. For a Python `str`
/// key scikit-learn hashes its UTF-8 encoding. Blocks are read
/// little-endian, so the result does not depend on the host.
///
/// ```
/// use rustfx::hashing::murmur3_x86_32;
///
/// assert_eq!(murmur3_x86_32(b"", 0), 0);
/// assert_eq!(murmur3_x86_32(b"", 1), 0x514e_28b7);
/// assert_eq!(murmur3_x86_32(b"test", 0), 0xba6b_d213);
/// // sklearn.utils.murmurhash3_32(b"test", seed=0) (positive=False)
/// assert_eq!(murmur3_x86_32(b"test", 0) as i32, -1167338989);
/// ```
pub fn murmur3_x86_32(bytes: &[u8], seed: u32) -> u32 {
    let mut h = seed;
    let blocks = bytes.chunks_exact(4);
    let tail = blocks.remainder();
    for block in blocks {
        let k = block
            .first_chunk::<4>()
            .map_or(0, |b| u32::from_le_bytes(*b));
        h ^= murmur_mix_k(k);
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    if !tail.is_empty() {
        let k = tail
            .iter()
            .enumerate()
            .fold(0u32, |k, (i, &b)| k ^ (u32::from(b) << (8 * i)));
        h ^= murmur_mix_k(k);
    }
    // The reference implementation mixes in the length as a 32-bit int.
    h ^= bytes.len() as u32;
    murmur_fmix32(h)
}

/// [`murmur3_x86_32`] of `head[..len]` (`len <= 16`; the bytes after it
/// are ignored), with no branch on `len`.
///
/// The loop of the general hash runs once per 4-byte block and then on the
/// 1-3 tail bytes, and both trip counts follow n-gram lengths, which are a
/// coin toss in real text (scikit-learn's n-grams of 3-5 characters, 1-3
/// bytes each): a mispredicted branch per n-gram or so cost more than the
/// hash itself. Here all four rounds run and the ones past the string's
/// whole blocks are dropped by a select, the tail block masked to its tail
/// bytes (`mix_k(0)` is 0, so an empty tail changes nothing).
///
/// ```
/// use rustfx::hashing::{murmur3_x86_32, murmur3_x86_32_short};
///
/// let head = b"be or not to be, that is";
/// let head = head.first_chunk::<16>().unwrap();
/// assert_eq!(murmur3_x86_32_short(head, 5, 0), murmur3_x86_32(b"be or", 0));
/// ```
#[inline(always)]
pub fn murmur3_x86_32_short(head: &[u8; 16], len: usize, seed: u32) -> u32 {
    let block = |b: usize| {
        let word = head
            .get(4 * b..4 * b + 4)
            .and_then(|w| w.first_chunk::<4>());
        word.map_or(0, |w| u32::from_le_bytes(*w))
    };
    let whole = len.min(16) / 4;
    let mut h = seed;
    let mut tail = 0;
    for b in 0..4 {
        let word = block(b);
        let next = (h ^ murmur_mix_k(word))
            .rotate_left(13)
            .wrapping_mul(5)
            .wrapping_add(0xe654_6b64);
        h = if b < whole { next } else { h };
        tail = if b == whole { word } else { tail };
    }
    let mask = (1u32 << (8 * (len & 3))).wrapping_sub(1);
    h ^= murmur_mix_k(tail & mask);
    murmur_fmix32(h ^ len as u32)
}
