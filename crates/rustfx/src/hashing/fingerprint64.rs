//! Fingerprint64 (farmhash farmhashna::Hash64), one string at a time.

/// Some primes between 2^63 and 2^64, from farmhash.
pub(super) const K0: u64 = 0xc3a5_c85c_97cb_3127;
pub(super) const K1: u64 = 0xb492_b66f_be98_f273;
pub(super) const K2: u64 = 0x9ae1_6a3b_2f90_404f;

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
pub(super) fn chunk16(bytes: Option<&[u8; 16]>) -> (u64, u64) {
    bytes.map_or((0, 0), |b| (fetch64(b, 0), fetch64(b, 8)))
}

/// The eight little-endian words of a 64-byte block.
#[inline(always)]
fn block_words(block: &[u8; 64]) -> [u64; 8] {
    core::array::from_fn(|k| fetch64(block, 8 * k))
}

#[inline(always)]
pub(super) fn shift_mix(val: u64) -> u64 {
    val ^ (val >> 47)
}

/// farmhash's `HashLen16(u, v, mul)`: Murmur-inspired 128 -> 64 mixing.
#[inline(always)]
pub(super) fn hash_len16(u: u64, v: u64, mul: u64) -> u64 {
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
