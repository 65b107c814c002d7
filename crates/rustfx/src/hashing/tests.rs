use super::fingerprint64_batch::{hash_batch_lanes, hash_lanes};
use super::*;

const FINGERPRINT64_TSV: &str = include_str!("../../../../tests/golden/fingerprint64.tsv");
const MURMUR3_TSV: &str = include_str!("../../../../tests/golden/murmur3.tsv");

/// Seeds of the columns of murmur3.tsv, in order.
const MURMUR_SEEDS: [u32; 4] = [0, 1, 42, 0xFFFF_FFFF];
/// Moduli of the bucket columns of fingerprint64.tsv, in order.
const FP_MODULI: [u64; 4] = [(1 << 63) - 1, (1 << 63) - 25, 1_000_003, 1 << 20];

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length: {s:?}");
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
    /// The fuzz target's oracle (rustfx::oracles::murmur3) is the real
    /// function, on any bytes and seed.
    #[test]
    fn murmur3_equals_the_reference_transcription(
        data in proptest::collection::vec(proptest::num::u8::ANY, 0..100),
        seed in proptest::num::u32::ANY,
    ) {
        proptest::prop_assert_eq!(
            murmur3_x86_32(&data, seed),
            crate::oracles::murmur3::murmur3_x86_32(&data, seed)
        );
    }

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
