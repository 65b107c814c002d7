//! Property tests: random and structured inputs against the oracles.

use super::*;

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
        prop_assert_eq!(scanned_strings(&data), oracle_strings(&data));
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
