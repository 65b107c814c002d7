//! The float helpers numpy's results depend on: log2 and pairwise sums.

use super::*;

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
                if rng.is_multiple_of(3) {
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
