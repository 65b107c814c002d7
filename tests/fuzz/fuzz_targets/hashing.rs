//! Fuzz target `hashing`: `fingerprint64` and `murmur3_x86_32` on arbitrary
//! bytes.
//!
//! Checks: no panic; the same result for the same bytes at every alignment
//! (the input is copied into a buffer at offsets 1..=15); `murmur3_x86_32`
//! equals the core's oracle, a straightforward transcription of Austin
//! Appleby's reference MurmurHash3_x86_32 (`rustfx::oracles::murmur3`;
//! seed taken from the input); both are deterministic
//! (no hidden state); `Fingerprint64Batch` (AVX-512 lanes where the CPU has
//! them) gives `fingerprint64` of every substring pushed, padded with
//! whatever follows it in the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rustfx::hashing::{fingerprint64, murmur3_x86_32, Fingerprint64Batch, FINGERPRINT64_BATCH};
use rustfx::oracles::murmur3;

fuzz_target!(|data: &[u8]| {
    let fp = fingerprint64(data);
    let seed = data
        .first_chunk::<4>()
        .map_or(0, |b| u32::from_le_bytes(*b));
    let mm0 = murmur3_x86_32(data, 0);
    let mms = murmur3_x86_32(data, seed);

    assert_eq!(mm0, murmur3::murmur3_x86_32(data, 0));
    assert_eq!(mms, murmur3::murmur3_x86_32(data, seed));
    assert_eq!(
        fp,
        fingerprint64(data),
        "fingerprint64 is not deterministic"
    );

    // Same bytes, other alignments (and with junk before/after the slice).
    let mut buf = vec![0xa5u8; data.len() + 32];
    for offset in 1..16 {
        buf[offset..offset + data.len()].copy_from_slice(data);
        let s = &buf[offset..offset + data.len()];
        assert_eq!(
            fingerprint64(s),
            fp,
            "fingerprint64 differs at offset {offset}"
        );
        assert_eq!(
            murmur3_x86_32(s, 0),
            mm0,
            "murmur3 differs at offset {offset}"
        );
        assert_eq!(murmur3_x86_32(s, seed), mms);
    }

    // Substrings at every start, of lengths taken from the input's bytes
    // (0..=40, around the lanes' 32-byte limit), through batches.
    let mut batch = Fingerprint64Batch::new();
    let mut pushed = Vec::new();
    for start in 0..data.len() {
        let len = usize::from(data[start]) % 41;
        batch.push(&data[start..], len);
        pushed.push(&data[start..(start + len).min(data.len())]);
        if batch.is_full() || start + 1 == data.len() {
            let hashes = batch.hashes().to_vec();
            assert!(pushed.len() <= FINGERPRINT64_BATCH);
            assert_eq!(hashes.len(), pushed.len());
            for (s, h) in pushed.drain(..).zip(hashes) {
                assert_eq!(h, fingerprint64(s), "batch differs on {s:?}");
            }
        }
    }

    // Every prefix length around the algorithm's size classes (0..=16,
    // 17..=32, 33..=64, 65+) of the input: no panic, and the reference agrees.
    for len in [
        0, 1, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129,
    ] {
        if let Some(p) = data.get(..len) {
            let _ = fingerprint64(p);
            assert_eq!(murmur3_x86_32(p, seed), murmur3::murmur3_x86_32(p, seed));
        }
    }
});
