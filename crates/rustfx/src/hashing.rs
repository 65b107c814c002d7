//! Byte-string hashes that match TensorFlow and scikit-learn bit for bit.
//!
//! * [`fingerprint64`] is TensorFlow's `Fingerprint64`
//!   (`tensorflow/core/platform/fingerprint.h`), which is farmhash's
//!   `farmhashna::Hash64`. It is what `tf.strings.to_hash_bucket_fast`
//!   reduces modulo the number of buckets, so
//!   `fingerprint64(s) % m == tf.strings.to_hash_bucket_fast(s, m)`.
//! * [`murmur3_x86_32`] is MurmurHash3_x86_32, the function behind
//!   `sklearn.utils.murmurhash3_32` (and `HashingVectorizer` /
//!   `FeatureHasher`).
//!
//! Both are pure functions of the input bytes, independent of the host's
//! endianness and of the input's alignment, contain no `unsafe`, and do not
//! panic on any input. Golden vectors produced by the real TensorFlow and
//! scikit-learn live in `tests/golden/` (see `tests/golden/generate.py`).

// ---------------------------------------------------------------------------
// Fingerprint64 (farmhash farmhashna::Hash64)
// ---------------------------------------------------------------------------

/// Some primes between 2^63 and 2^64, from farmhash.
const K0: u64 = 0xc3a5_c85c_97cb_3127;
const K1: u64 = 0xb492_b66f_be98_f273;
const K2: u64 = 0x9ae1_6a3b_2f90_404f;

/// Little-endian 64-bit load of `s[i..i + 8]`.
///
/// Every call site passes an in-range `i`; the `0` fallback only exists so
/// that there is no panic path at all.
#[inline(always)]
fn fetch64(s: &[u8], i: usize) -> u64 {
    debug_assert!(i.checked_add(8).is_some_and(|end| end <= s.len()));
    s.get(i..)
        .and_then(<[u8]>::first_chunk::<8>)
        .map_or(0, |b| u64::from_le_bytes(*b))
}

/// Little-endian 32-bit load of `s[i..i + 4]`, widened to `u64`.
#[inline(always)]
fn fetch32(s: &[u8], i: usize) -> u64 {
    debug_assert!(i.checked_add(4).is_some_and(|end| end <= s.len()));
    s.get(i..)
        .and_then(<[u8]>::first_chunk::<4>)
        .map_or(0, |b| u64::from(u32::from_le_bytes(*b)))
}

/// The two little-endian words of 16 bytes (zeros if there are none).
#[inline(always)]
fn chunk16(bytes: Option<&[u8; 16]>) -> (u64, u64) {
    bytes.map_or((0, 0), |b| (fetch64(b, 0), fetch64(b, 8)))
}

/// The eight little-endian words of a 64-byte block.
#[inline(always)]
fn block_words(block: &[u8; 64]) -> [u64; 8] {
    core::array::from_fn(|k| fetch64(block, 8 * k))
}

#[inline(always)]
fn shift_mix(val: u64) -> u64 {
    val ^ (val >> 47)
}

/// farmhash's `HashLen16(u, v, mul)`: Murmur-inspired 128 -> 64 mixing.
#[inline(always)]
fn hash_len16(u: u64, v: u64, mul: u64) -> u64 {
    let a = shift_mix((u ^ v).wrapping_mul(mul));
    let b = shift_mix((v ^ a).wrapping_mul(mul));
    b.wrapping_mul(mul)
}

/// `len` as `u64` (lossless on every supported target).
#[inline(always)]
fn len64(s: &[u8]) -> u64 {
    s.len() as u64
}

#[inline(always)]
fn hash_len_0_to_16(s: &[u8]) -> u64 {
    let len = s.len();
    if len >= 8 {
        let mul = K2.wrapping_add(len64(s).wrapping_mul(2));
        let a = fetch64(s, 0).wrapping_add(K2);
        let b = fetch64(s, len - 8);
        let c = b.rotate_right(37).wrapping_mul(mul).wrapping_add(a);
        let d = a.rotate_right(25).wrapping_add(b).wrapping_mul(mul);
        return hash_len16(c, d, mul);
    }
    if len >= 4 {
        let mul = K2.wrapping_add(len64(s).wrapping_mul(2));
        let a = fetch32(s, 0);
        return hash_len16(len64(s).wrapping_add(a << 3), fetch32(s, len - 4), mul);
    }
    match (s.first(), s.get(len >> 1), s.last()) {
        (Some(&a), Some(&b), Some(&c)) => {
            // 32-bit intermediates, exactly as in farmhash.
            let y = u32::from(a).wrapping_add(u32::from(b) << 8);
            let z = (len as u32).wrapping_add(u32::from(c) << 2);
            shift_mix(u64::from(y).wrapping_mul(K2) ^ u64::from(z).wrapping_mul(K0))
                .wrapping_mul(K2)
        }
        _ => K2,
    }
}

fn hash_len_17_to_32(s: &[u8]) -> u64 {
    let len = s.len();
    let mul = K2.wrapping_add(len64(s).wrapping_mul(2));
    let a = fetch64(s, 0).wrapping_mul(K1);
    let b = fetch64(s, 8);
    let c = fetch64(s, len - 8).wrapping_mul(mul);
    let d = fetch64(s, len - 16).wrapping_mul(K2);
    hash_len16(
        a.wrapping_add(b)
            .rotate_right(43)
            .wrapping_add(c.rotate_right(30))
            .wrapping_add(d),
        a.wrapping_add(b.wrapping_add(K2).rotate_right(18))
            .wrapping_add(c),
        mul,
    )
}

fn hash_len_33_to_64(s: &[u8]) -> u64 {
    let len = s.len();
    let mul = K2.wrapping_add(len64(s).wrapping_mul(2));
    let a = fetch64(s, 0).wrapping_mul(K2);
    let b = fetch64(s, 8);
    let c = fetch64(s, len - 8).wrapping_mul(mul);
    let d = fetch64(s, len - 16).wrapping_mul(K2);
    let y = a
        .wrapping_add(b)
        .rotate_right(43)
        .wrapping_add(c.rotate_right(30))
        .wrapping_add(d);
    let z = hash_len16(
        y,
        a.wrapping_add(b.wrapping_add(K2).rotate_right(18))
            .wrapping_add(c),
        mul,
    );
    let e = fetch64(s, 16).wrapping_mul(mul);
    let f = fetch64(s, 24);
    let g = y.wrapping_add(fetch64(s, len - 32)).wrapping_mul(mul);
    let h = z.wrapping_add(fetch64(s, len - 24)).wrapping_mul(mul);
    hash_len16(
        e.wrapping_add(f)
            .rotate_right(43)
            .wrapping_add(g.rotate_right(30))
            .wrapping_add(h),
        e.wrapping_add(f.wrapping_add(a).rotate_right(18))
            .wrapping_add(g),
        mul,
    )
}

/// farmhash's `WeakHashLen32WithSeeds(w, x, y, z, a, b)`.
#[inline(always)]
fn weak_hash_len32_with_seeds(w: u64, x: u64, y: u64, z: u64, a: u64, b: u64) -> (u64, u64) {
    let a = a.wrapping_add(w);
    let b = b.wrapping_add(a).wrapping_add(z).rotate_right(21);
    let c = a;
    let a = a.wrapping_add(x).wrapping_add(y);
    let b = b.wrapping_add(a.rotate_right(44));
    (a.wrapping_add(z), b.wrapping_add(c))
}

/// Inputs longer than 64 bytes (farmhash's loop with seed 81).
fn hash_len_65_plus(s: &[u8], last: &[u8; 64]) -> u64 {
    const SEED: u64 = 81;
    let len = s.len();
    let mut x = SEED;
    let mut y = SEED.wrapping_mul(K1).wrapping_add(113);
    let mut z = shift_mix(y.wrapping_mul(K2).wrapping_add(113)).wrapping_mul(K2);
    let mut v = (0u64, 0u64);
    let mut w = (0u64, 0u64);
    x = x.wrapping_mul(K2).wrapping_add(fetch64(s, 0));

    // farmhash's do/while runs over the first ((len - 1) / 64) full blocks,
    // leaving 1..=64 bytes, which are then covered by the last 64 bytes of
    // the input (overlapping the final block when len % 64 != 0).
    let n_blocks = (len - 1) / 64;
    let body = s.get(..n_blocks * 64).unwrap_or(&[]);
    for block in body
        .chunks_exact(64)
        .filter_map(|c| <&[u8; 64]>::try_from(c).ok())
    {
        let q = block_words(block);
        x = x
            .wrapping_add(y)
            .wrapping_add(v.0)
            .wrapping_add(q[1])
            .rotate_right(37)
            .wrapping_mul(K1);
        y = y
            .wrapping_add(v.1)
            .wrapping_add(q[6])
            .rotate_right(42)
            .wrapping_mul(K1);
        x ^= w.1;
        y = y.wrapping_add(v.0).wrapping_add(q[5]);
        z = z.wrapping_add(w.0).rotate_right(33).wrapping_mul(K1);
        v = weak_hash_len32_with_seeds(
            q[0],
            q[1],
            q[2],
            q[3],
            v.1.wrapping_mul(K1),
            x.wrapping_add(w.0),
        );
        w = weak_hash_len32_with_seeds(
            q[4],
            q[5],
            q[6],
            q[7],
            z.wrapping_add(w.1),
            y.wrapping_add(q[2]),
        );
        core::mem::swap(&mut z, &mut x);
    }

    let mul = K1.wrapping_add((z & 0xff) << 1);
    let q = block_words(last);
    w.0 = w.0.wrapping_add(((len - 1) & 63) as u64);
    v.0 = v.0.wrapping_add(w.0);
    w.0 = w.0.wrapping_add(v.0);
    x = x
        .wrapping_add(y)
        .wrapping_add(v.0)
        .wrapping_add(q[1])
        .rotate_right(37)
        .wrapping_mul(mul);
    y = y
        .wrapping_add(v.1)
        .wrapping_add(q[6])
        .rotate_right(42)
        .wrapping_mul(mul);
    x ^= w.1.wrapping_mul(9);
    y = y.wrapping_add(v.0.wrapping_mul(9)).wrapping_add(q[5]);
    z = z.wrapping_add(w.0).rotate_right(33).wrapping_mul(mul);
    v = weak_hash_len32_with_seeds(
        q[0],
        q[1],
        q[2],
        q[3],
        v.1.wrapping_mul(mul),
        x.wrapping_add(w.0),
    );
    w = weak_hash_len32_with_seeds(
        q[4],
        q[5],
        q[6],
        q[7],
        z.wrapping_add(w.1),
        y.wrapping_add(q[2]),
    );
    core::mem::swap(&mut z, &mut x);
    hash_len16(
        hash_len16(v.0, w.0, mul)
            .wrapping_add(shift_mix(y).wrapping_mul(K0))
            .wrapping_add(z),
        hash_len16(v.1, w.1, mul).wrapping_add(x),
        mul,
    )
}

/// TensorFlow's `Fingerprint64`: farmhash `farmhashna::Hash64` of `bytes`.
///
/// This is the hash behind `tf.strings.to_hash_bucket_fast`, so for any
/// `num_buckets >= 1`,
/// `fingerprint64(s) % num_buckets == tf.strings.to_hash_bucket_fast(s, num_buckets)`.
/// The result is identical on every platform (little-endian loads are used
/// regardless of the host) and for every alignment of `bytes`.
///
/// ```
/// use rustfx::hashing::fingerprint64;
///
/// // farmhash returns its constant k2 for the empty string.
/// assert_eq!(fingerprint64(b""), 0x9ae1_6a3b_2f90_404f);
/// assert_eq!(fingerprint64(b"hello"), 0xb48b_e5a9_3138_0ce8);
/// // tf.strings.to_hash_bucket_fast("hello", 1000) == fingerprint64("hello") % 1000
/// let bucket = fingerprint64(b"hello") % 1000;
/// assert!(bucket < 1000);
/// ```
#[inline]
pub fn fingerprint64(bytes: &[u8]) -> u64 {
    let len = bytes.len();
    if len <= 16 {
        hash_len_0_to_16(bytes)
    } else if len <= 32 {
        hash_len_17_to_32(bytes)
    } else if len <= 64 {
        hash_len_33_to_64(bytes)
    } else {
        match bytes.last_chunk::<64>() {
            Some(last) => hash_len_65_plus(bytes, last),
            // Unreachable: len > 64 here.
            None => K2,
        }
    }
}

// ---------------------------------------------------------------------------
// Fingerprint64 of many short strings at once
// ---------------------------------------------------------------------------

/// How many strings a [`Fingerprint64Batch`] holds.
pub const FINGERPRINT64_BATCH: usize = 32;

/// The longest string hashed in the batch's lanes; longer ones are hashed
/// one at a time as they are pushed.
const MAX_LANE_LEN: usize = 32;

/// `len` of a string already hashed at push time: its hash is in `first`.
const HASHED: u64 = u64::MAX;

/// Fingerprint64 of up to [`FINGERPRINT64_BATCH`] strings, computed
/// together, equal to [`fingerprint64`] of each bit for bit.
///
/// One string at a time, farmhash's branches on the length (0-3, 4-7, 8-16,
/// 17-32 bytes) follow n-gram lengths, which are a coin toss in real text,
/// and every mispredicted branch also throws away the hashes in flight
/// behind it. A batch keeps, for each string of at most 32 bytes, the four
/// words farmhash can read from it, and [`hashes`](Self::hashes) computes
/// every length class for all of them in vector lanes and keeps the right
/// one: no branch on any length, eight strings per instruction. Lanes are
/// AVX-512 (`avx512f` and `avx512dq`, for the 64-bit multiplies), detected
/// at run time; elsewhere [`Fingerprint64Batch::pays`] is false and `push`
/// hashes each string at once, with the same results.
///
/// ```
/// use rustfx::hashing::{fingerprint64, Fingerprint64Batch};
///
/// // Padded: each string's bytes run on, so whole words load without a
/// // branch; the hash only depends on the first `len` bytes.
/// let text = b"to be or not to be, that is the question................";
/// let mut batch = Fingerprint64Batch::new();
/// batch.push(&text[0..], 2);
/// batch.push(&text[3..], 5); // "be or"
/// assert_eq!(batch.hashes(), [fingerprint64(b"to"), fingerprint64(b"be or")]);
/// ```
#[derive(Clone, Debug)]
pub struct Fingerprint64Batch {
    // For each string: its bytes 0..8 and 8..16, its last 8 and last 16
    // bytes' first word (offsets clamped at 0), read past its end when it
    // is short (those bytes never reach the hash), and its length.
    first: [u64; FINGERPRINT64_BATCH],
    second: [u64; FINGERPRINT64_BATCH],
    last8: [u64; FINGERPRINT64_BATCH],
    last16: [u64; FINGERPRINT64_BATCH],
    len: [u64; FINGERPRINT64_BATCH],
    count: usize,
    lanes: bool,
}

impl Default for Fingerprint64Batch {
    fn default() -> Self {
        Self::new()
    }
}

impl Fingerprint64Batch {
    /// An empty batch, in vector lanes if this CPU has them.
    pub fn new() -> Self {
        Self::with_lanes(Self::pays())
    }

    /// An empty batch; `lanes` false hashes each string as it is pushed
    /// (what `new` does on a CPU without AVX-512).
    fn with_lanes(lanes: bool) -> Self {
        Fingerprint64Batch {
            first: [0; FINGERPRINT64_BATCH],
            second: [0; FINGERPRINT64_BATCH],
            last8: [0; FINGERPRINT64_BATCH],
            last16: [0; FINGERPRINT64_BATCH],
            len: [HASHED; FINGERPRINT64_BATCH],
            count: 0,
            lanes,
        }
    }

    /// Whether this CPU hashes a batch in vector lanes, so batching beats
    /// calling [`fingerprint64`] on each string.
    pub fn pays() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512dq")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// Strings pushed since the last [`hashes`](Self::hashes).
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no string was pushed since the last `hashes`.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether the batch holds [`FINGERPRINT64_BATCH`] strings: the next
    /// push must wait for [`hashes`](Self::hashes).
    pub fn is_full(&self) -> bool {
        self.count == FINGERPRINT64_BATCH
    }

    /// Adds the string `padded[..len]` (all of `padded` if shorter).
    /// Strings of at most 32 bytes go to the lanes when `padded` holds at
    /// least 16 bytes; anything else is hashed now. Pushing to a full
    /// batch overwrites its first string (a caller's bug, never a panic).
    #[inline(always)]
    pub fn push(&mut self, padded: &[u8], len: usize) {
        let i = self.count % FINGERPRINT64_BATCH;
        match padded.get(..len.max(16)) {
            // Two 16-byte loads, the string's first and last (its first
            // when shorter), and the last 8 bytes of at least 8: one bounds
            // check each, known to pass but for the last.
            Some(s) if self.lanes && len <= MAX_LANE_LEN => {
                let (head, tail) = (chunk16(s.first_chunk()), chunk16(s.last_chunk()));
                self.first[i] = head.0;
                self.second[i] = head.1;
                self.last16[i] = tail.0;
                self.last8[i] = s
                    .get(..len.max(8))
                    .and_then(<[u8]>::last_chunk::<8>)
                    .map_or(0, |b| u64::from_le_bytes(*b));
                self.len[i] = len as u64;
            }
            _ => self.push_hashed(padded, len, i),
        }
        self.count = i + 1;
    }

    #[inline(never)]
    fn push_hashed(&mut self, padded: &[u8], len: usize, i: usize) {
        self.first[i] = fingerprint64(padded.get(..len).unwrap_or(padded));
        self.len[i] = HASHED;
    }

    /// The hashes of the strings pushed since the last call, in order;
    /// empties the batch.
    pub fn hashes(&mut self) -> &[u64] {
        let count = std::mem::take(&mut self.count);
        if self.lanes {
            hash_batch_lanes(self);
        }
        // Lanes leave each hash in `first`, where push_hashed put the long
        // strings' ones.
        &self.first[..count]
    }
}

/// Hashes every string of `batch` in place (into `first`), in AVX-512
/// lanes.
#[cfg(target_arch = "x86_64")]
fn hash_batch_lanes(batch: &mut Fingerprint64Batch) {
    // SAFETY: the only precondition of a `target_feature` function is that
    // the CPU has the features, and `lanes` is only true when
    // `Fingerprint64Batch::pays` detected them.
    #[allow(unsafe_code)]
    unsafe {
        hash_lanes_avx512(batch)
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn hash_batch_lanes(batch: &mut Fingerprint64Batch) {
    hash_lanes(batch)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
#[allow(unsafe_code)]
unsafe fn hash_lanes_avx512(batch: &mut Fingerprint64Batch) {
    hash_lanes(batch)
}

/// farmhash's 0-32 byte cases for every string of `batch`, each computed
/// for all strings and the one of each string's length kept: straight-line
/// code over arrays, which the compiler turns into vector lanes (and, with
/// AVX-512, 64-bit vector multiplies). The value of a `HASHED` string is
/// left as it is.
#[inline(always)]
fn hash_lanes(batch: &mut Fingerprint64Batch) {
    for i in 0..FINGERPRINT64_BATCH {
        let len = batch.len[i];
        let (first, second) = (batch.first[i], batch.second[i]);
        let (last8, last16) = (batch.last8[i], batch.last16[i]);
        let mul = K2.wrapping_add(len.wrapping_mul(2));
        // 17-32 bytes (hash_len_17_to_32).
        let a = first.wrapping_mul(K1);
        let c = last8.wrapping_mul(mul);
        let d = last16.wrapping_mul(K2);
        let u17 = a
            .wrapping_add(second)
            .rotate_right(43)
            .wrapping_add(c.rotate_right(30))
            .wrapping_add(d);
        let v17 = a
            .wrapping_add(second.wrapping_add(K2).rotate_right(18))
            .wrapping_add(c);
        // 8-16 bytes (hash_len_0_to_16, len >= 8).
        let a8 = first.wrapping_add(K2);
        let u8_16 = last8.rotate_right(37).wrapping_mul(mul).wrapping_add(a8);
        let v8_16 = a8.rotate_right(25).wrapping_add(last8).wrapping_mul(mul);
        // 4-7 bytes: the first and the last four, both inside `first`.
        let u4_7 = len.wrapping_add((first & 0xffff_ffff) << 3);
        let v4_7 = (first >> (8 * (len.wrapping_sub(4) & 7))) & 0xffff_ffff;
        let (u, v) = if len > 16 {
            (u17, v17)
        } else if len >= 8 {
            (u8_16, v8_16)
        } else {
            (u4_7, v4_7)
        };
        let long = hash_len16(u, v, mul);
        // 1-3 bytes: the first, middle and last byte, all inside `first`.
        let byte = |k: u64| (first >> (8 * (k & 7))) & 0xff;
        let y = byte(0).wrapping_add(byte(len >> 1) << 8);
        let z = len.wrapping_add(byte(len.wrapping_sub(1)) << 2);
        let short = shift_mix(y.wrapping_mul(K2) ^ z.wrapping_mul(K0)).wrapping_mul(K2);
        batch.first[i] = if len == HASHED {
            first
        } else if len >= 4 {
            long
        } else if len > 0 {
            short
        } else {
            K2
        };
    }
}

// ---------------------------------------------------------------------------
// MurmurHash3_x86_32
// ---------------------------------------------------------------------------

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

#[cfg(test)]
mod tests {
    use super::*;

    const FINGERPRINT64_TSV: &str = include_str!("../../../tests/golden/fingerprint64.tsv");
    const MURMUR3_TSV: &str = include_str!("../../../tests/golden/murmur3.tsv");

    /// Seeds of the columns of murmur3.tsv, in order.
    const MURMUR_SEEDS: [u32; 4] = [0, 1, 42, 0xFFFF_FFFF];
    /// Moduli of the bucket columns of fingerprint64.tsv, in order.
    const FP_MODULI: [u64; 4] = [(1 << 63) - 1, (1 << 63) - 25, 1_000_003, 1 << 20];

    fn unhex(s: &str) -> Vec<u8> {
        assert!(s.len() % 2 == 0, "odd hex length: {s:?}");
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("bad hex"))
            .collect()
    }

    /// Non-comment rows of a golden TSV, split on tabs.
    fn rows(tsv: &str) -> impl Iterator<Item = Vec<&str>> {
        tsv.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| l.split('\t').collect())
    }

    #[test]
    fn fingerprint64_known_vectors() {
        // Values from TensorFlow 2.21 (to_hash_bucket_fast, reconstructed by CRT).
        let cases: &[(&[u8], u64)] = &[
            (b"", 0x9ae1_6a3b_2f90_404f),
            (b"a", 0xb345_4265_b6df_75e3),
            (b"abc", 0x24a5_b3a0_74e7_f369),
            (b"hello", 0xb48b_e5a9_3138_0ce8),
            (b"hello world", 0x588f_b747_8bd6_b01b),
            (
                b"The quick brown fox jumps over the lazy dog",
                0xabbe_83f3_3b1b_5134,
            ),
            (&[b'a'; 64], 0x51c9_24ce_bd9a_6379),
            (&[b'a'; 128], 0xbe1d_0984_6d31_43f6),
        ];
        for &(input, expected) in cases {
            assert_eq!(fingerprint64(input), expected, "input {input:?}");
        }
        let ramp: Vec<u8> = (0..1024u32).map(|i| i as u8).collect();
        assert_eq!(fingerprint64(&ramp), 0x8756_f6a4_3766_8508);
    }

    #[test]
    fn murmur3_known_vectors() {
        // Reference vectors for MurmurHash3_x86_32.
        let cases: &[(&[u8], u32, u32)] = &[
            (b"", 0, 0),
            (b"", 1, 0x514e_28b7),
            (b"", 0xffff_ffff, 0x81f1_6f39),
            (&[0, 0, 0, 0], 0, 0x2362_f9de),
            (b"test", 0, 0xba6b_d213),
            (b"Hello, world!", 1234, 0xfaf6_cdb3),
            (
                b"The quick brown fox jumps over the lazy dog",
                0x9747_b28c,
                0x2fa8_26cd,
            ),
            (b"aaaa", 0x9747_b28c, 0x5a97_808a),
            (b"aaa", 0x9747_b28c, 0x283e_0130),
            (b"aa", 0x9747_b28c, 0x5d21_1726),
            (b"a", 0x9747_b28c, 0x7fa0_9ea6),
        ];
        for &(input, seed, expected) in cases {
            assert_eq!(
                murmur3_x86_32(input, seed),
                expected,
                "input {input:?} seed {seed:#x}"
            );
        }
    }

    #[test]
    fn fingerprint64_golden() {
        let mut n = 0;
        for row in rows(FINGERPRINT64_TSV) {
            assert_eq!(row.len(), 2 + FP_MODULI.len(), "row {row:?}");
            let input = unhex(row[0]);
            let got = fingerprint64(&input);
            let full: u64 = row[1].parse().expect("bad u64");
            assert_eq!(got, full, "len {} input {}", input.len(), row[0]);
            for (m, cell) in FP_MODULI.iter().zip(&row[2..]) {
                let bucket: u64 = cell.parse().expect("bad bucket");
                assert_eq!(got % m, bucket, "len {} modulus {m}", input.len());
            }
            n += 1;
        }
        assert!(n >= 350, "only {n} golden fingerprint64 rows");
    }

    #[test]
    fn murmur3_golden() {
        let mut n = 0;
        for row in rows(MURMUR3_TSV) {
            assert_eq!(row.len(), 1 + MURMUR_SEEDS.len(), "row {row:?}");
            let input = unhex(row[0]);
            for (&seed, cell) in MURMUR_SEEDS.iter().zip(&row[1..]) {
                let expected: u32 = cell.parse().expect("bad u32");
                assert_eq!(
                    murmur3_x86_32(&input, seed),
                    expected,
                    "len {} seed {seed:#x} input {}",
                    input.len(),
                    row[0]
                );
            }
            n += 1;
        }
        assert!(n >= 350, "only {n} golden murmur3 rows");
    }

    #[test]
    fn golden_inputs_cover_every_length_and_multiples_of_64() {
        let lens: std::collections::BTreeSet<usize> =
            rows(FINGERPRINT64_TSV).map(|r| r[0].len() / 2).collect();
        for len in (0..=300).chain([1000, 4096]) {
            assert!(lens.contains(&len), "no golden input of length {len}");
        }
        assert_eq!(
            FINGERPRINT64_TSV
                .lines()
                .filter(|l| !l.starts_with('#'))
                .count(),
            MURMUR3_TSV.lines().filter(|l| !l.starts_with('#')).count()
        );
    }

    #[test]
    fn independent_of_alignment() {
        let data: Vec<u8> = (0..600u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in [
            0usize, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 257,
        ] {
            let expected_fp = fingerprint64(&data[..len]);
            let expected_mm = murmur3_x86_32(&data[..len], 7);
            for offset in 1..9 {
                let mut buf = vec![0u8; offset];
                buf.extend_from_slice(&data[..len]);
                assert_eq!(fingerprint64(&buf[offset..]), expected_fp, "len {len}");
                assert_eq!(murmur3_x86_32(&buf[offset..], 7), expected_mm, "len {len}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn hashes_never_panic_and_are_deterministic(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..700),
            seed in proptest::num::u32::ANY,
        ) {
            proptest::prop_assert_eq!(fingerprint64(&bytes), fingerprint64(&bytes.clone()));
            proptest::prop_assert_eq!(
                murmur3_x86_32(&bytes, seed),
                murmur3_x86_32(&bytes.clone(), seed)
            );
        }
    }

    /// The strings `(start, len)` of `text` through a batch (its lanes
    /// computed by `lanes`, or one at a time), against `fingerprint64`.
    fn check_batch(
        text: &[u8],
        strings: &[(usize, usize)],
        lanes: Option<fn(&mut Fingerprint64Batch)>,
    ) {
        let mut batch = Fingerprint64Batch::with_lanes(lanes.is_some());
        for chunk in strings.chunks(FINGERPRINT64_BATCH) {
            for &(start, len) in chunk {
                batch.push(&text[start..], len);
            }
            let count = batch.len();
            let hashes: Vec<u64> = match lanes {
                Some(compute) => {
                    compute(&mut batch);
                    batch.count = 0;
                    batch.first[..count].to_vec()
                }
                None => batch.hashes().to_vec(),
            };
            assert!(batch.is_empty());
            for (&(start, len), hash) in chunk.iter().zip(hashes) {
                let end = (start + len).min(text.len());
                assert_eq!(
                    hash,
                    fingerprint64(&text[start..end]),
                    "start {start} len {len}"
                );
            }
        }
    }

    /// Every length 0..=40 at every offset of random text, with random
    /// bytes after each string (what the lanes load past its end), and
    /// strings running to the end of the text (too little padding).
    fn batch_cases() -> (Vec<u8>, Vec<(usize, usize)>) {
        let text: Vec<u8> = (0u64..600)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 57) as u8 ^ (i as u8))
            .collect();
        let mut strings = Vec::new();
        for len in 0..=40 {
            for start in 0..70 {
                strings.push((start * 7 % 500, len));
            }
            for tail in 0..=len {
                strings.push((text.len() - tail, len));
            }
        }
        (text, strings)
    }

    #[test]
    fn fingerprint64_batch_equals_one_at_a_time() {
        let (text, strings) = batch_cases();
        // The lanes' code as plain scalar code, on every machine.
        check_batch(&text, &strings, Some(hash_lanes));
        // What this CPU runs (AVX-512 where available).
        if Fingerprint64Batch::pays() {
            check_batch(&text, &strings, Some(hash_batch_lanes));
        }
        check_batch(&text, &strings, None);
        assert!(Fingerprint64Batch::new().hashes().is_empty());
    }

    #[test]
    fn murmur3_short_equals_murmur3() {
        let (text, strings) = batch_cases();
        let mut checked = 0;
        for (start, len) in strings {
            let Some(head) = text.get(start..).and_then(|t| t.first_chunk::<16>()) else {
                continue;
            };
            if len <= 16 {
                for seed in MURMUR_SEEDS {
                    assert_eq!(
                        murmur3_x86_32_short(head, len, seed),
                        murmur3_x86_32(&text[start..start + len], seed),
                        "start {start} len {len} seed {seed}"
                    );
                }
                checked += 1;
            }
        }
        assert!(checked > 1000);
    }

    proptest::proptest! {
        #[test]
        fn fingerprint64_batch_equals_fingerprint64(
            text in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
            picks in proptest::collection::vec((0usize..200, 0usize..70), 1..80),
        ) {
            let strings: Vec<(usize, usize)> = picks
                .into_iter()
                .map(|(start, len)| (start.min(text.len()), len))
                .collect();
            check_batch(&text, &strings, Some(hash_lanes));
            let mut batch = Fingerprint64Batch::new();
            for chunk in strings.chunks(FINGERPRINT64_BATCH) {
                for &(start, len) in chunk {
                    batch.push(&text[start..], len);
                }
                proptest::prop_assert!(batch.len() == chunk.len());
                let hashes = batch.hashes().to_vec();
                for (&(start, len), hash) in chunk.iter().zip(hashes) {
                    let end = (start + len).min(text.len());
                    proptest::prop_assert_eq!(hash, fingerprint64(&text[start..end]));
                }
            }
        }
    }
}
