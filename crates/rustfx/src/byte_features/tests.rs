//! The optimised byte features against the naive oracles, at every
//! alignment and length around every block boundary, plus known values.

use super::counting::{byte_counts, nibble_counts};
use super::entropy_histogram::Overlap;
use super::naive::*;
use super::numpy::*;
use super::strings::*;
use super::*;
use proptest::prelude::*;

// -- Helpers ---------------------------------------------------------

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

const OVERLAPS: [Overlap; 3] = [
    Overlap::ByteByByte,
    Overlap::SumSteps,
    Overlap::SlideBySteps,
];

/// The entropy histogram, after checking that every way of counting
/// overlapping blocks gives the same bits as the default one.
fn entropy_histogram(data: &[u8], window: usize, step: usize, empty: EmptyInput) -> Vec<f32> {
    let params = EntropyHistogram::new(window, step).unwrap();
    let mut out = [1.5f32; 256];
    params.compute(data, empty, &mut out);
    for overlap in OVERLAPS {
        let mut other = [2.5f32; 256];
        params.compute_with(data, empty, &mut other, overlap);
        assert_eq!(
            bits(&other),
            bits(&out),
            "{overlap:?} len {} window {window} step {step}",
            data.len()
        );
    }
    out.to_vec()
}

fn check_all(data: &[u8], params: &[(usize, usize)]) {
    for empty in [EmptyInput::Zeros, EmptyInput::Nan] {
        let mut out = [1.5f32; 256];
        byte_histogram(data, empty, &mut out);
        assert_eq!(
            bits(&out),
            bits(&oracle_byte_histogram(data, empty)),
            "byte_histogram len {}",
            data.len()
        );
        for &(w, s) in params {
            assert_eq!(
                bits(&entropy_histogram(data, w, s, empty)),
                bits(&oracle_entropy_histogram(data, w, s, empty)),
                "entropy histogram len {} window {w} step {s}",
                data.len()
            );
        }
        let mut sf = [1.5f32; 104];
        string_features(data, empty, &mut sf);
        assert_eq!(
            bits(&sf),
            bits(&oracle_string_features(data)),
            "strings len {}",
            data.len()
        );
    }
}

/// Deterministic mixture of random bytes, printable runs of every
/// length and the patterns the string features count.
fn mixed_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    const PATTERNS: &[&[u8]] = &[
        b"MZ",
        b"MZMZ",
        b"HKEY_",
        b"hkey_",
        b"c:\\",
        b"C:\\",
        b"http://",
        b"HtTpS://",
        b"https:/",
        b"://",
        b":\\",
        b"xhttp://",
        b"httpss://",
        b"\x7f\x7f\x7f",
        b"\x1f",
        b"\x80",
    ];
    let mut v = Vec::with_capacity(len + 16);
    while v.len() < len {
        let r = next();
        match r % 5 {
            0 => v.extend((0..r % 13).map(|_| next() as u8)),
            1 | 2 => v.extend((0..(r >> 8) % 12).map(|_| 0x20 + (next() % 96) as u8)),
            3 => v.extend_from_slice(PATTERNS[((r >> 8) as usize) % PATTERNS.len()]),
            _ => v.extend((0..(r >> 8) % 9).map(|_| ((next() % 4) as u8) << 4)),
        }
    }
    v.truncate(len);
    v
}

const SMALL_PARAMS: &[(usize, usize)] = &[
    (1, 1),
    (2, 1),
    (3, 2),
    (4, 4),
    (5, 7),
    (8, 3),
    (16, 8),
    (16, 16),
    (32, 5),
    (64, 1),
    (7, 64),
];

// -- Tests -----------------------------------------------------------

#[test]
fn every_alignment_and_tail_length() {
    let buf = mixed_bytes(1, 16 + 80);
    let buf2: Vec<u8> = (0..96u32).map(|i| (i * 37 + 11) as u8).collect();
    for b in [&buf, &buf2] {
        for offset in 0..16 {
            for len in 0..=70 {
                check_all(&b[offset..offset + len], SMALL_PARAMS);
            }
        }
    }
}

#[test]
fn lengths_around_window_and_step_boundaries() {
    for &(w, s) in &[
        (EMBER_WINDOW, EMBER_STEP),
        (100, 30),
        (64, 64),
        (50, 120),
        (37, 1),
    ] {
        check_around_boundaries(w, s, &[0, 1, w - 1, w, w + 1], 1..4, 7, 3);
    }
}

/// The entropy histogram against the oracle for inputs of the `lengths`
/// given and of `w + k·s - 1`, `w + k·s`, `w + k·s + 1` for each `k`, at
/// `offsets` alignments.
fn check_around_boundaries(
    w: usize,
    s: usize,
    lengths: &[usize],
    steps: std::ops::Range<usize>,
    seed: u64,
    offsets: usize,
) {
    let mut lengths = lengths.to_vec();
    for k in steps {
        lengths.extend([w + k * s - 1, w + k * s, w + k * s + 1]);
    }
    for (i, &len) in lengths.iter().enumerate() {
        let data = mixed_bytes(i as u64 + seed, len + offsets);
        for offset in 0..offsets {
            let d = &data[offset..offset + len];
            assert_eq!(
                bits(&entropy_histogram(d, w, s, EmptyInput::Nan)),
                bits(&oracle_entropy_histogram(d, w, s, EmptyInput::Nan)),
                "len {len} window {w} step {s}"
            );
        }
    }
}

#[test]
fn larger_inputs_with_ember_parameters() {
    for seed in 0..4 {
        let data = mixed_bytes(seed, 50_000 + seed as usize * 777);
        check_all(
            &data,
            &[(EMBER_WINDOW, EMBER_STEP), (256, 100), (1000, 3000)],
        );
    }
}

#[test]
fn numpy1_float64_paths_from_65536() {
    // The entropy histogram switches to float64 at window 65536 and the
    // string entropy at 65536 printables (numpy 1.x value-based casting).
    let data = mixed_bytes(99, 220_000);
    for (w, s) in [
        (65535, 40_000),
        (65536, 40_000),
        (65536, 65536),
        (70_000, 1 << 24),
    ] {
        assert_eq!(
            bits(&entropy_histogram(&data, w, s, EmptyInput::Zeros)),
            bits(&oracle_entropy_histogram(&data, w, s, EmptyInput::Zeros)),
            "window {w} step {s}"
        );
    }
    let mut sf = [0f32; 104];
    string_features(&data, EmptyInput::Zeros, &mut sf);
    assert!(sf[2] >= 65536.0, "printables {}", sf[2]);
    assert_eq!(bits(&sf), bits(&oracle_string_features(&data)));
    // And just below and at the switch.
    for total in [65535usize, 65536] {
        let mut text: Vec<u8> = (0..total)
            .map(|i| b"abcdefghij0123456789 ~"[i * 7 % 22])
            .collect();
        text.push(0);
        string_features(&text, EmptyInput::Zeros, &mut sf);
        assert_eq!(sf[2], total as f32);
        assert_eq!(bits(&sf), bits(&oracle_string_features(&text)));
    }
}

#[test]
fn empty_input_in_both_modes() {
    let mut out = [1.5f32; 256];
    byte_histogram(b"", EmptyInput::Zeros, &mut out);
    assert!(out.iter().all(|&x| x.to_bits() == 0));
    byte_histogram(b"", EmptyInput::Nan, &mut out);
    assert!(out.iter().all(|&x| x.to_bits() == 0xFFC0_0000));
    let h = EntropyHistogram::default();
    h.compute(b"", EmptyInput::Zeros, &mut out);
    assert!(out.iter().all(|&x| x.to_bits() == 0));
    h.compute(b"", EmptyInput::Nan, &mut out);
    assert!(out.iter().all(|&x| x.is_nan()));
    // EMBER's string features of an empty input are zeros, never NaN.
    for empty in [EmptyInput::Zeros, EmptyInput::Nan] {
        let mut sf = [1.5f32; 104];
        string_features(b"", empty, &mut sf);
        assert!(sf.iter().all(|&x| x.to_bits() == 0));
    }
    assert_eq!(EmptyInput::default(), EmptyInput::Zeros);
}

#[test]
fn known_values() {
    let mut out = [0f32; 256];
    byte_histogram(b"aab", EmptyInput::Zeros, &mut out);
    assert_eq!(out[b'a' as usize], 2.0f32 / 3.0);
    assert_eq!(out[b'b' as usize], 1.0f32 / 3.0);
    assert_eq!(out.iter().filter(|&&x| x != 0.0).count(), 2);

    // One nibble only: H = 0, bin 0.
    let h = EntropyHistogram::new(16, 16).unwrap();
    h.compute(&[0x05; 40], EmptyInput::Zeros, &mut out);
    assert_eq!(out[0], 1.0);
    // All 16 nibbles equally: H = 8 bits, 2H = 16, clamped to bin 15.
    let uniform: Vec<u8> = (0..16u8).map(|n| n << 4 | n).collect();
    h.compute(&uniform, EmptyInput::Zeros, &mut out);
    for (i, &x) in out.iter().enumerate() {
        assert_eq!(x, if i >= 15 * 16 { 1.0 / 16.0 } else { 0.0 }, "index {i}");
    }
    // Two nibbles half and half: H = 2, bin 4. A short block still
    // divides by the window: 8 bytes in a window of 16 give p = 1/4 each,
    // H = 2·(2·0.5) = 2 as well.
    h.compute(&[0x00, 0x10].repeat(8), EmptyInput::Zeros, &mut out);
    assert_eq!((out[4 * 16], out[4 * 16 + 1]), (0.5, 0.5));
    h.compute(&[0x00, 0x10].repeat(4), EmptyInput::Zeros, &mut out);
    assert_eq!((out[4 * 16], out[4 * 16 + 1]), (0.5, 0.5));

    let data = b"hello\x00abcd\x00C:\\Windows\x00HTTPS://a.b\x00MZ\x00c:\\ HKEY_x";
    let mut sf = [0f32; 104];
    string_features(data, EmptyInput::Zeros, &mut sf);
    // Strings: "hello", "C:\Windows", "HTTPS://a.b", "c:\ HKEY_x".
    assert_eq!(sf[0], 4.0);
    assert_eq!(sf[2], 36.0);
    assert_eq!(sf[1], 9.0);
    assert_eq!(sf[3 + (b'l' - 0x20) as usize], (2.0f64 / 36.0) as f32);
    assert_eq!(&sf[100..], &[2.0, 1.0, 1.0, 1.0]);
    assert_eq!(bits(&sf), bits(&oracle_string_features(data)));
}

#[test]
fn log2_is_correctly_rounded_where_glibc_log2f_is_not() {
    // p = c / 2048 where glibc 2.36's log2f is one ulp off; the expected
    // bits are the correctly rounded results (from an 80-bit log2l).
    let cases = [
        (782, 0xbfb1c9f0u32),
        (1630, 0xbea89fbe),
        (1887, 0xbdf1e993),
        (1993, 0xbd20ddc7),
        (2013, 0xbccbb91d),
        (2014, 0xbcc5da7b),
        (2015, 0xbcbffc98),
        (2029, 0xbc5c502e),
        (2038, 0xbbe76588),
        (2043, 0xbb671d0b),
    ];
    for (c, expected) in cases {
        assert_eq!(log2_f32(c as f32 / 2048.0).to_bits(), expected, "c = {c}");
    }
    assert_eq!(log2_f32(1.0), 0.0);
    assert_eq!(log2_f32(0.5), -1.0);
}

#[test]
fn pairwise_sum_follows_numpy_order() {
    // Values whose sum depends on the order: 1 + 2^-24 + ... in float32.
    let mut rng = 12345u64;
    for n in 0..400 {
        let a: Vec<f32> = (0..n)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let m = (rng % 1000) as f32;
                if rng % 3 == 0 {
                    m * 1e7
                } else {
                    m * 1e-3
                }
            })
            .collect();
        assert_eq!(
            numpy_sum_f32(&a).to_bits(),
            (0.0 + oracle_pairwise(&a, -0.0f32)).to_bits(),
            "n = {n}"
        );
        let b: Vec<f64> = a.iter().map(|&x| x as f64 * 1.000_000_1).collect();
        assert_eq!(
            numpy_sum_f64(&b).to_bits(),
            (0.0 + oracle_pairwise(&b, -0.0f64)).to_bits()
        );
    }
    // 8 accumulators then a sequential remainder: 8 ones, then 2^24.
    let mut a = vec![1.0f32; 8];
    a.push(16_777_216.0);
    assert_eq!(numpy_sum_f32(&a), 16_777_224.0);
    assert_eq!(numpy_sum_f32(&[-0.0]).to_bits(), 0.0f32.to_bits());
}

#[test]
fn parameter_validation() {
    assert!(EntropyHistogram::new(EMBER_WINDOW, EMBER_STEP).is_ok());
    assert!(EntropyHistogram::new(MAX_WINDOW, MAX_WINDOW).is_ok());
    let e = EntropyHistogram::new(0, 1).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
    assert!(
        e.message().contains("window must be in 1..=16777216"),
        "{e}"
    );
    let e = EntropyHistogram::new(MAX_WINDOW + 1, 1).unwrap_err();
    assert!(e.message().contains("got 16777217"), "{e}");
    let e = EntropyHistogram::new(1, 0).unwrap_err();
    assert!(e.message().contains("step must be in 1..=16777216"), "{e}");
    assert!(EntropyHistogram::new(1, usize::MAX).is_err());
    let d = EntropyHistogram::default();
    assert_eq!((d.window(), d.step()), (2048, 1024));
}

#[test]
fn printable_mask_matches_the_byte_class() {
    for b in 0..=255u8 {
        let w = u64::from_le_bytes([b, 0, 0x20, 0x7f, 0x80, b, 0x1f, b]);
        let m = printable_mask(w);
        assert_eq!(m & 0x80 != 0, is_printable(b), "byte {b:#x}");
        assert_eq!(m >> 8 & 0xff, 0);
        assert_eq!(m >> 16 & 0xff, 0x80);
        assert_eq!(m >> 24 & 0xff, 0x80);
        assert_eq!(m >> 32 & 0xff, 0);
        assert_eq!(m >> 48 & 0xff, 0);
        assert_eq!(m >> 40 & 0x80 != 0, is_printable(b));
        assert_eq!(m >> 56 & 0x80 != 0, is_printable(b));
    }
}

#[test]
fn counts_at_every_alignment_and_length() {
    // Lengths across the group (4), the nibble run (60) and the nibble flush
    // (240) boundaries, on mixed and on single-valued data (where every
    // narrow counter fills fastest).
    let mixed = mixed_bytes(5, 16 + 500);
    let same = vec![0xA7u8; 16 + 500];
    for buf in [&mixed, &same] {
        for offset in 0..16 {
            for len in 0..=500 {
                let d = &buf[offset..offset + len];
                assert_eq!(byte_counts(d).to_vec(), oracle_byte_counts(d), "len {len}");
                assert_eq!(
                    nibble_counts(d).to_vec(),
                    oracle_nibble_counts(d),
                    "len {len}"
                );
            }
        }
    }
}

#[test]
fn counters_at_their_flush_points() {
    // byte_counts flushes its u16 counters every 65535 groups of 4 bytes:
    // one value fills a counter of every table to exactly 65535.
    const FLUSH: usize = 65535 * 4;
    let mut lengths = vec![];
    for k in 1..=2 {
        lengths.extend([k * FLUSH - 1, k * FLUSH, k * FLUSH + 1, k * FLUSH + 4]);
    }
    for b in [0u8, 0xFF, 0x41] {
        let data = vec![b; 2 * FLUSH + 16];
        for &len in &lengths {
            for offset in [0, 3] {
                let d = &data[offset..offset + len];
                let counts = byte_counts(d);
                assert_eq!(counts[usize::from(b)], len as u64, "byte {b} len {len}");
                assert_eq!(counts.iter().sum::<u64>(), len as u64);
                let nibbles = nibble_counts(d);
                assert_eq!(nibbles[usize::from(b >> 4)], len as u64, "len {len}");
                assert_eq!(nibbles.iter().sum::<u64>(), len as u64);
            }
        }
    }
    // A period-4 pattern: each table sees one value only.
    let data: Vec<u8> = (0..FLUSH + 100).map(|i| (i % 4) as u8 * 0x51).collect();
    assert_eq!(byte_counts(&data).to_vec(), oracle_byte_counts(&data));
    assert_eq!(nibble_counts(&data).to_vec(), oracle_nibble_counts(&data));
}

#[test]
fn every_overlap_strategy_around_window_and_step_multiples() {
    // `entropy_histogram` runs the three strategies; these parameters cover
    // step dividing the window or not, one or many steps per window, steps
    // on either side of the byte-by-byte threshold, step >= window, and
    // inputs shorter than a window.
    for &(w, s) in &[
        (2, 1),
        (5, 2),
        (16, 8),
        (17, 8),
        (20, 7),
        (64, 63),
        (100, 30),
        (100, 99),
        (128, 64),
        (130, 64),
        (257, 1),
        (300, 100),
        (EMBER_WINDOW, EMBER_STEP),
        (EMBER_WINDOW, 1000),
        (3000, EMBER_STEP),
        (64, 64),
        (50, 120),
    ] {
        check_around_boundaries(w, s, &[0, 1, s, w - 1, w, w + 1], 1..5, 3, 2);
    }
}

#[test]
fn default_strategy_for_each_step_size() {
    // Steps below 64 slide byte by byte, more than 256 steps per window
    // recount the leaving step, and the rest sum steps: run each through
    // `compute` on enough data for many blocks.
    let data = mixed_bytes(17, 64 * 300 + 1000);
    for (w, s) in [(100, 10), (1000, 100), (64 * 257, 64), (64 * 257 + 5, 64)] {
        assert_eq!(
            bits(&entropy_histogram(&data, w, s, EmptyInput::Zeros)),
            bits(&oracle_entropy_histogram(&data, w, s, EmptyInput::Zeros)),
            "window {w} step {s}"
        );
    }
}

#[test]
fn printable_bits_match_the_byte_class() {
    let background: Vec<u8> = (0..64u32).map(|i| (i * 37 + 11) as u8).collect();
    for b in 0..=255u8 {
        for pos in 0..64 {
            let mut chunk = [0u8; 64];
            chunk.copy_from_slice(&background);
            chunk[pos] = b;
            let expected = chunk
                .iter()
                .enumerate()
                .fold(0u64, |m, (i, &c)| m | (u64::from(is_printable(c)) << i));
            assert_eq!(printable_bits(&chunk), expected, "byte {b:#x} at {pos}");
        }
    }
}

#[test]
fn strings_across_chunk_boundaries() {
    // Runs of every length around 5 (the minimum), 32 (where a chunk is
    // counted whole) and 64 (a chunk), starting at every offset around the
    // first two chunk boundaries, between non-printable bytes of each kind.
    let mut run_lengths: Vec<usize> = (1..=9).collect();
    run_lengths.extend(30..=34);
    run_lengths.extend(62..=66);
    run_lengths.extend([127, 128, 129]);
    for &gap in &[0x00u8, 0x0A, 0x1F, 0x80, 0xFF] {
        for &run in &run_lengths {
            for start in 0..=140 {
                let mut data = vec![gap; start + run + 3];
                let text = b"MZ c:\\http://HKEY_~\x7f az";
                for (i, b) in data[start..start + run].iter_mut().enumerate() {
                    *b = text[i % text.len()];
                }
                let mut sf = [1.5f32; 104];
                string_features(&data, EmptyInput::Zeros, &mut sf);
                assert_eq!(
                    bits(&sf),
                    bits(&oracle_string_features(&data)),
                    "gap {gap:#x} run {run} start {start}"
                );
            }
        }
    }
    // Two runs separated by one gap byte, the gap at every position.
    for cut in 0..=140 {
        let mut data = vec![b'x'; 141];
        data[cut] = 0;
        let mut sf = [1.5f32; 104];
        string_features(&data, EmptyInput::Zeros, &mut sf);
        assert_eq!(bits(&sf), bits(&oracle_string_features(&data)), "cut {cut}");
        assert_eq!(scanned_strings(&data), naive_strings(&data), "cut {cut}");
    }
    for len in [0, 1, 4, 5, 63, 64, 65, 127, 128, 129] {
        let data = vec![b'x'; len];
        assert_eq!(scanned_strings(&data), naive_strings(&data), "len {len}");
    }
}

/// The strings `string_statistics` hands out, in order.
fn scanned_strings(data: &[u8]) -> Vec<&[u8]> {
    let mut strings = Vec::new();
    super::string_statistics(data, |s| strings.push(s));
    strings
}

/// The regex `[\x20-\x7f]{5,}` over bytes, its definition written out.
fn naive_strings(data: &[u8]) -> Vec<&[u8]> {
    data.split(|b| !(0x20..=0x7f).contains(b))
        .filter(|run| run.len() >= 5)
        .collect()
}

fn token() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..8),
        proptest::collection::vec(0x20u8..=0x7f, 0..12),
        proptest::sample::select(vec![
            b"MZ".to_vec(),
            b"HKEY_".to_vec(),
            b"c:\\".to_vec(),
            b"C:\\".to_vec(),
            b"http://".to_vec(),
            b"hTTps://".to_vec(),
            b"://".to_vec(),
            b":".to_vec(),
        ]),
        proptest::collection::vec(prop_oneof![Just(0u8), Just(0x10), Just(0xf0)], 0..20),
    ]
}

proptest! {
    #[test]
    fn prop_histograms_equal_oracles(
        data in proptest::collection::vec(any::<u8>(), 0..700),
        window in 1usize..80,
        step in 1usize..80,
    ) {
        check_all(&data, &[(window, step)]);
    }

    #[test]
    fn prop_structured_inputs_equal_oracles(
        tokens in proptest::collection::vec(token(), 0..60),
        window in 1usize..40,
        step in 1usize..40,
    ) {
        let data = tokens.concat();
        check_all(&data, &[(window, step)]);
        prop_assert_eq!(scanned_strings(&data), naive_strings(&data));
    }

    #[test]
    fn prop_outputs_are_distributions(data in proptest::collection::vec(any::<u8>(), 1..3000)) {
        let mut out = [0f32; 256];
        byte_histogram(&data, EmptyInput::Nan, &mut out);
        let s: f64 = out.iter().map(|&x| x as f64).sum();
        prop_assert!((s - 1.0).abs() < 1e-5);
        EntropyHistogram::default().compute(&data, EmptyInput::Nan, &mut out);
        let s: f64 = out.iter().map(|&x| x as f64).sum();
        prop_assert!((s - 1.0).abs() < 1e-5);
    }
}

/// Short records take their own histogram path: every length up to past
/// its limit, with few and with all 256 byte values, against the oracle.
#[test]
fn short_records_histogram_matches_the_oracle() {
    for len in 1..=600 {
        let every_value: Vec<u8> = (0..len).map(|i| (i * 7 % 256) as u8).collect();
        for data in [mixed_bytes(len as u64, len), every_value, vec![b'a'; len]] {
            let mut out = [1.5f32; 256];
            byte_histogram(&data, EmptyInput::Nan, &mut out);
            assert_eq!(
                bits(&out),
                bits(&oracle_byte_histogram(&data, EmptyInput::Nan)),
                "len {len}"
            );
        }
    }
}
