//! Fingerprint64 of many short strings at once.

use super::fingerprint64::{chunk16, fingerprint64, hash_len16, shift_mix, K0, K1, K2};

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
    pub(super) first: [u64; FINGERPRINT64_BATCH],
    second: [u64; FINGERPRINT64_BATCH],
    last8: [u64; FINGERPRINT64_BATCH],
    last16: [u64; FINGERPRINT64_BATCH],
    len: [u64; FINGERPRINT64_BATCH],
    pub(super) count: usize,
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
    pub(super) fn with_lanes(lanes: bool) -> Self {
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
pub(super) fn hash_batch_lanes(batch: &mut Fingerprint64Batch) {
    // SAFETY: the only precondition of a `target_feature` function is that
    // the CPU has the features, and `lanes` is only true when
    // `Fingerprint64Batch::pays` detected them.
    #[allow(unsafe_code)]
    unsafe {
        hash_lanes_avx512(batch)
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) fn hash_batch_lanes(batch: &mut Fingerprint64Batch) {
    hash_lanes(batch)
}

/// [`hash_lanes`] compiled for AVX-512.
///
/// # Safety
///
/// The CPU must have AVX-512F and AVX-512DQ (what
/// `Fingerprint64Batch::pays` detects).
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
pub(super) fn hash_lanes(batch: &mut Fingerprint64Batch) {
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
