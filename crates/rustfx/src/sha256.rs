//! SHA-256 (FIPS 180-4), the key every malware dataset uses for a file.
//!
//! Corpus extraction (`python -m rustfx.extract`, docs/corpus.md) writes one
//! row per file keyed by its SHA-256, computed in Rust over the bytes that
//! were read for the features, so the hash and the features always describe
//! the same bytes. [`Sha256`] streams; [`sha256`] and [`sha256_hex`] hash
//! one buffer.
//!
//! Three block functions, no dependency: x86's SHA extensions or Armv8's
//! SHA2 instructions where the CPU has them (detected at run time), else a
//! portable one. A corpus row hashes every byte it extracts, and the
//! portable code's ~230 MB/s per core was as slow as the whole EMBER2024
//! strings group on Windows DLLs; the SHA extensions do the same blocks
//! several times faster on x86-64 (Armv8's speed is not measured: no Arm
//! hardware here). All are tested against the NIST example vectors and
//! against each other here (the Arm one under qemu-user, `make
//! test-aarch64`), and against Python's `hashlib` through the op
//! (tests/python/test_corpus.py).

/// Round constants: the first 32 bits of the fractional parts of the cube
/// roots of the first 64 primes.
const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// Initial hash value: the first 32 bits of the fractional parts of the
/// square roots of the first 8 primes.
const H0: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// A streaming SHA-256: [`update`](Sha256::update) any number of times,
/// then [`finish`](Sha256::finish).
///
/// ```
/// let mut h = rustfx::sha256::Sha256::new();
/// h.update(b"ab");
/// h.update(b"c");
/// assert_eq!(h.finish(), rustfx::sha256::sha256(b"abc"));
/// ```
#[derive(Clone, Debug)]
pub struct Sha256 {
    state: [u32; 8],
    block: [u8; 64],
    block_len: usize,
    total_len: u64,
    compress: CompressBlocks,
}

/// Hashes whole 64-byte blocks (`blocks.len()` is a multiple of 64) into the
/// state.
type CompressBlocks = fn(&mut [u32; 8], &[u8]);

impl Default for Sha256 {
    fn default() -> Self {
        Self::new()
    }
}

impl Sha256 {
    /// An empty hash.
    pub fn new() -> Self {
        Self::with_compress(fastest_compress())
    }

    fn with_compress(compress: CompressBlocks) -> Self {
        Sha256 {
            state: H0,
            block: [0; 64],
            block_len: 0,
            total_len: 0,
            compress,
        }
    }

    /// Hashes `data` after what came before.
    pub fn update(&mut self, mut data: &[u8]) {
        self.total_len = self.total_len.wrapping_add(data.len() as u64);
        if self.block_len > 0 {
            let take = (64 - self.block_len).min(data.len());
            self.block[self.block_len..self.block_len + take].copy_from_slice(&data[..take]);
            self.block_len += take;
            data = &data[take..];
            if self.block_len < 64 {
                return;
            }
            let block = self.block;
            (self.compress)(&mut self.state, &block);
            self.block_len = 0;
        }
        let whole = data.len() / 64 * 64;
        (self.compress)(&mut self.state, &data[..whole]);
        let rest = &data[whole..];
        self.block[..rest.len()].copy_from_slice(rest);
        self.block_len = rest.len();
    }

    /// The digest of everything given to [`update`](Sha256::update).
    pub fn finish(mut self) -> [u8; 32] {
        let bit_len = self.total_len.wrapping_mul(8);
        // Padding: 0x80, zeros up to 56 mod 64, then the length in bits.
        let mut pad = [0u8; 72];
        pad[0] = 0x80;
        let zeros = (119 - self.block_len) % 64;
        pad[1 + zeros..9 + zeros].copy_from_slice(&bit_len.to_be_bytes());
        let total_len = self.total_len;
        self.update(&pad[..9 + zeros]);
        debug_assert_eq!(self.block_len, 0);
        self.total_len = total_len;
        let mut out = [0u8; 32];
        for (chunk, word) in out.chunks_exact_mut(4).zip(self.state) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        out
    }
}

/// The SHA instructions' block function where this CPU has them (x86's SHA
/// extensions, Armv8's SHA2), else the portable one.
fn fastest_compress() -> CompressBlocks {
    #[cfg(target_arch = "x86_64")]
    if has_sha_ni() {
        return compress_sha_ni;
    }
    #[cfg(target_arch = "aarch64")]
    if has_arm_sha2() {
        return compress_arm_sha2;
    }
    compress_portable
}

#[cfg(target_arch = "aarch64")]
fn has_arm_sha2() -> bool {
    std::arch::is_aarch64_feature_detected!("sha2")
}

#[cfg(target_arch = "x86_64")]
fn has_sha_ni() -> bool {
    std::arch::is_x86_feature_detected!("sha")
        && std::arch::is_x86_feature_detected!("sse4.1")
        && std::arch::is_x86_feature_detected!("ssse3")
}

/// FIPS 180-4's block function, one block at a time.
fn compress_portable(state: &mut [u32; 8], blocks: &[u8]) {
    for block in blocks.chunks_exact(64) {
        compress_block(state, block);
    }
}

fn compress_block(state: &mut [u32; 8], block: &[u8]) {
    let mut w = [0u32; 64];
    for (word, bytes) in w.iter_mut().zip(block.chunks_exact(4)) {
        *word = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    }
    for t in 16..64 {
        let s0 = w[t - 15].rotate_right(7) ^ w[t - 15].rotate_right(18) ^ (w[t - 15] >> 3);
        let s1 = w[t - 2].rotate_right(17) ^ w[t - 2].rotate_right(19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16]
            .wrapping_add(s0)
            .wrapping_add(w[t - 7])
            .wrapping_add(s1);
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    for t in 0..64 {
        let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
        let ch = (e & f) ^ (!e & g);
        let t1 = h
            .wrapping_add(s1)
            .wrapping_add(ch)
            .wrapping_add(K[t])
            .wrapping_add(w[t]);
        let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        let t2 = s0.wrapping_add(maj);
        h = g;
        g = f;
        f = e;
        e = d.wrapping_add(t1);
        d = c;
        c = b;
        b = a;
        a = t1.wrapping_add(t2);
    }
    for (s, v) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *s = s.wrapping_add(v);
    }
}

/// [`compress_portable`] with x86's SHA instructions (Intel's "SHA
/// extensions" white paper, 2013): `sha256rnds2` does two rounds on the
/// state held as (a, b, e, f) and (c, d, g, h), `sha256msg1`/`msg2` extend
/// the message schedule four words at a time.
#[cfg(target_arch = "x86_64")]
fn compress_sha_ni(state: &mut [u32; 8], blocks: &[u8]) {
    // SAFETY: the only precondition of a `target_feature` function is that
    // the CPU has the features; this function is only used (by
    // `fastest_compress` and the tests) after `has_sha_ni` detected them.
    #[allow(unsafe_code)]
    unsafe {
        sha_ni_blocks(state, blocks)
    }
}

/// The blocks of [`compress_sha_ni`], in the SHA extensions.
///
/// # Safety
///
/// Safe to call only from code compiled with these target features;
/// elsewhere (an `unsafe` call), the CPU must have SHA, SSE2, SSSE3 and
/// SSE4.1 (what `has_sha_ni` detects).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn sha_ni_blocks(state: &mut [u32; 8], blocks: &[u8]) {
    use std::arch::x86_64::*;

    // Four big-endian words, the first in lane 0 (no pointer loads: the
    // intrinsics used here are safe in this function).
    let words = |bytes: &[u8]| {
        let w = |i: usize| {
            let b = bytes.get(4 * i..4 * i + 4).unwrap_or(&[0; 4]);
            u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as i32
        };
        _mm_set_epi32(w(3), w(2), w(1), w(0))
    };
    let k = |i: usize| {
        let k = |j: usize| K[(4 * i + j) % 64] as i32;
        _mm_set_epi32(k(3), k(2), k(1), k(0))
    };
    // Four rounds with message words `w` (+ their constants).
    macro_rules! rounds4 {
        ($abef:ident, $cdgh:ident, $w:expr, $i:expr) => {{
            let wk = _mm_add_epi32($w, k($i));
            $cdgh = _mm_sha256rnds2_epu32($cdgh, $abef, wk);
            $abef = _mm_sha256rnds2_epu32($abef, $cdgh, _mm_shuffle_epi32::<0x0E>(wk));
        }};
    }
    // The next four schedule words from the last sixteen.
    let schedule = |w0, w1, w2, w3| {
        let t = _mm_add_epi32(_mm_sha256msg1_epu32(w0, w1), _mm_alignr_epi8::<4>(w3, w2));
        _mm_sha256msg2_epu32(t, w3)
    };

    let s = |i: usize| state[i] as i32;
    let dcba = _mm_set_epi32(s(3), s(2), s(1), s(0));
    let hgfe = _mm_set_epi32(s(7), s(6), s(5), s(4));
    let cdab = _mm_shuffle_epi32::<0xB1>(dcba);
    let efgh = _mm_shuffle_epi32::<0x1B>(hgfe);
    let mut abef = _mm_alignr_epi8::<8>(cdab, efgh);
    let mut cdgh = _mm_blend_epi16::<0xF0>(efgh, cdab);

    for block in blocks.chunks_exact(64) {
        let (abef_before, cdgh_before) = (abef, cdgh);
        let mut w = [
            words(&block[0..16]),
            words(&block[16..32]),
            words(&block[32..48]),
            words(&block[48..64]),
        ];
        for (i, &wi) in w.iter().enumerate() {
            rounds4!(abef, cdgh, wi, i);
        }
        for i in 4..16 {
            let next = schedule(w[i % 4], w[(i + 1) % 4], w[(i + 2) % 4], w[(i + 3) % 4]);
            w[i % 4] = next;
            rounds4!(abef, cdgh, next, i);
        }
        abef = _mm_add_epi32(abef, abef_before);
        cdgh = _mm_add_epi32(cdgh, cdgh_before);
    }

    let feba = _mm_shuffle_epi32::<0x1B>(abef);
    let dchg = _mm_shuffle_epi32::<0xB1>(cdgh);
    let dcba = _mm_blend_epi16::<0xF0>(feba, dchg);
    let hgef = _mm_alignr_epi8::<8>(dchg, feba);
    *state = [
        _mm_extract_epi32::<0>(dcba) as u32,
        _mm_extract_epi32::<1>(dcba) as u32,
        _mm_extract_epi32::<2>(dcba) as u32,
        _mm_extract_epi32::<3>(dcba) as u32,
        _mm_extract_epi32::<0>(hgef) as u32,
        _mm_extract_epi32::<1>(hgef) as u32,
        _mm_extract_epi32::<2>(hgef) as u32,
        _mm_extract_epi32::<3>(hgef) as u32,
    ];
}

/// [`compress_portable`] with Armv8's SHA2 instructions (the Arm ARM's
/// "SHA256H"): `sha256h`/`sha256h2` do four rounds on the state held as
/// (a, b, c, d) and (e, f, g, h), `sha256su0`/`su1` extend the message
/// schedule four words at a time. Tested as `compress_sha_ni` is, under
/// qemu-user (`make test-aarch64`).
#[cfg(target_arch = "aarch64")]
fn compress_arm_sha2(state: &mut [u32; 8], blocks: &[u8]) {
    // SAFETY: the only precondition of a `target_feature` function is that
    // the CPU has the feature; this function is only used (by
    // `fastest_compress` and the tests) after `has_arm_sha2` detected it.
    #[allow(unsafe_code)]
    unsafe {
        arm_sha2_blocks(state, blocks)
    }
}

/// The blocks of [`compress_arm_sha2`], in the ARMv8 SHA2 instructions.
///
/// # Safety
///
/// Safe to call only from code compiled with these target features;
/// elsewhere (an `unsafe` call), the CPU must have NEON and SHA2 (what
/// `has_arm_sha2` detects).
#[cfg(target_arch = "aarch64")]
#[target_feature(enable = "neon,sha2")]
fn arm_sha2_blocks(state: &mut [u32; 8], blocks: &[u8]) {
    use std::arch::aarch64::*;

    // Four words, the first in lane 0 (no pointer loads: the intrinsics
    // used here are safe in this function).
    let lanes = |w: [u32; 4]| {
        let low = u64::from(w[0]) | u64::from(w[1]) << 32;
        let high = u64::from(w[2]) | u64::from(w[3]) << 32;
        vcombine_u32(vcreate_u32(low), vcreate_u32(high))
    };
    let words = |bytes: &[u8]| {
        lanes(std::array::from_fn(|i| {
            let b = bytes.get(4 * i..4 * i + 4).unwrap_or(&[0; 4]);
            u32::from_be_bytes([b[0], b[1], b[2], b[3]])
        }))
    };
    let k = |i: usize| lanes(std::array::from_fn(|j| K[(4 * i + j) % 64]));
    // Four rounds with message words `w` (+ their constants).
    macro_rules! rounds4 {
        ($abcd:ident, $efgh:ident, $w:expr, $i:expr) => {{
            let wk = vaddq_u32($w, k($i));
            let abcd_before = $abcd;
            $abcd = vsha256hq_u32($abcd, $efgh, wk);
            $efgh = vsha256h2q_u32($efgh, abcd_before, wk);
        }};
    }
    // The next four schedule words from the last sixteen.
    let schedule = |w0, w1, w2, w3| vsha256su1q_u32(vsha256su0q_u32(w0, w1), w2, w3);

    let mut abcd = lanes([state[0], state[1], state[2], state[3]]);
    let mut efgh = lanes([state[4], state[5], state[6], state[7]]);
    for block in blocks.chunks_exact(64) {
        let (abcd_before, efgh_before) = (abcd, efgh);
        let mut w = [
            words(&block[0..16]),
            words(&block[16..32]),
            words(&block[32..48]),
            words(&block[48..64]),
        ];
        for (i, &wi) in w.iter().enumerate() {
            rounds4!(abcd, efgh, wi, i);
        }
        for i in 4..16 {
            let next = schedule(w[i % 4], w[(i + 1) % 4], w[(i + 2) % 4], w[(i + 3) % 4]);
            w[i % 4] = next;
            rounds4!(abcd, efgh, next, i);
        }
        abcd = vaddq_u32(abcd, abcd_before);
        efgh = vaddq_u32(efgh, efgh_before);
    }
    *state = [
        vgetq_lane_u32::<0>(abcd),
        vgetq_lane_u32::<1>(abcd),
        vgetq_lane_u32::<2>(abcd),
        vgetq_lane_u32::<3>(abcd),
        vgetq_lane_u32::<0>(efgh),
        vgetq_lane_u32::<1>(efgh),
        vgetq_lane_u32::<2>(efgh),
        vgetq_lane_u32::<3>(efgh),
    ];
}

/// The SHA-256 digest of `data`.
///
/// ```
/// assert_eq!(rustfx::sha256::sha256(b"")[..4], [0xe3, 0xb0, 0xc4, 0x42]);
/// ```
pub fn sha256(data: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(data);
    h.finish()
}

/// The SHA-256 digest of `data` as 64 lowercase hex digits (the form
/// `hashlib.sha256(data).hexdigest()` and `sha256sum` print).
///
/// ```
/// assert!(rustfx::sha256::sha256_hex(b"abc").starts_with("ba7816bf"));
/// ```
pub fn sha256_hex(data: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(64);
    for byte in sha256(data) {
        out.push(HEX[usize::from(byte >> 4)] as char);
        out.push(HEX[usize::from(byte & 15)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NIST FIPS 180-4 examples (csrc.nist.gov, "SHA256.pdf" and the SHAVS
    /// short messages) and the empty message.
    #[test]
    fn nist_vectors() {
        let million_a = vec![b'a'; 1_000_000];
        let cases: [(&[u8], &str); 5] = [
            (
                b"",
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            ),
            (
                b"abc",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
            ),
            (
                b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
                "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1",
            ),
            (
                &million_a,
                "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
            ),
        ];
        for (data, want) in cases {
            assert_eq!(sha256_hex(data), want, "{} bytes", data.len());
            for (name, compress) in block_functions() {
                let mut h = Sha256::with_compress(compress);
                h.update(data);
                let hex: String = h.finish().iter().map(|b| format!("{b:02x}")).collect();
                assert_eq!(hex, want, "{name}, {} bytes", data.len());
            }
        }
    }

    /// Every block function this CPU can run.
    fn block_functions() -> Vec<(&'static str, CompressBlocks)> {
        let mut found: Vec<(&str, CompressBlocks)> = vec![("portable", compress_portable)];
        #[cfg(target_arch = "x86_64")]
        if has_sha_ni() {
            found.push(("sha_ni", compress_sha_ni));
        }
        #[cfg(target_arch = "aarch64")]
        if has_arm_sha2() {
            found.push(("arm_sha2", compress_arm_sha2));
        }
        found
    }

    /// The SHA instructions give the portable digest on every length and
    /// content (an unused lane or a wrong shuffle shows on some of them).
    #[test]
    fn block_functions_agree() {
        let functions = block_functions();
        if functions.len() == 1 {
            eprintln!("this CPU has no SHA instructions: only the portable code is tested");
        }
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let data: Vec<u8> = (0..5000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        for len in (0..300).chain([1000, 4096, 4999, 5000]) {
            let digests: Vec<[u8; 32]> = functions
                .iter()
                .map(|&(_, compress)| {
                    let mut h = Sha256::with_compress(compress);
                    h.update(&data[..len]);
                    h.finish()
                })
                .collect();
            assert!(digests.windows(2).all(|d| d[0] == d[1]), "len {len}");
        }
    }

    /// Streaming in pieces of every size gives the one-shot digest, across
    /// every padding boundary (lengths 0..200 cover 55, 56, 63, 64, ...).
    #[test]
    fn streaming_matches_one_shot() {
        let data: Vec<u8> = (0..200u32).map(|i| (i * 31 + 7) as u8).collect();
        for len in 0..data.len() {
            let whole = sha256(&data[..len]);
            for piece in [1, 3, 63, 64, 65] {
                let mut h = Sha256::new();
                for chunk in data[..len].chunks(piece) {
                    h.update(chunk);
                }
                assert_eq!(h.finish(), whole, "len {len} piece {piece}");
            }
        }
    }
}
