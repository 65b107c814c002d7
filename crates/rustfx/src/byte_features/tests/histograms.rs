//! The byte and entropy histograms against their oracles, plus known
//! values, empty inputs and parameter checks.

use super::*;

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
