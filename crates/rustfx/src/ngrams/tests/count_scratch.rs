//! `CountScratch`: sorting wide keys, reuse, and batches against a naive sum.

use super::*;

#[test]
fn count_scratch_sorts_wide_keys_and_is_reused() {
    let mut scratch = CountScratch::new();
    // 62-bit keys (six radix passes, five with a single digit), in reverse.
    scratch.begin(1 << 62, false);
    for bucket in (0..5000u64).rev() {
        scratch.add(bucket, false);
        scratch.add(bucket, false);
    }
    let want: Vec<(u64, i64)> = (0..5000).map(|b| (b, 2)).collect();
    assert_eq!(scratch.finish(), &want[..]);
    // Signed, with sums that cancel, after the previous document.
    scratch.begin(10, true);
    for (bucket, negative) in [(3, true), (9, false), (3, false), (0, true), (9, false)] {
        scratch.add(bucket, negative);
    }
    assert_eq!(scratch.finish(), &[(0, -1), (3, 0), (9, 2)]);
    scratch.begin(10, false);
    assert_eq!(scratch.finish(), &[]);
}

/// The naive definition of [`CountScratch`]'s sums: a sorted map from each
/// bucket to its +1s and -1s.
fn naive_sums(signed: bool, adds: &[(u64, bool)]) -> Vec<(u64, i64)> {
    let mut sums = std::collections::BTreeMap::new();
    for &(bucket, negative) in adds {
        *sums.entry(bucket).or_insert(0) += if signed && negative { -1 } else { 1 };
    }
    sums.into_iter().collect()
}

/// Counts `adds` with `scratch` and compares with [`naive_sums`].
fn check_scratch(
    scratch: &mut CountScratch,
    num_buckets: u64,
    signed: bool,
    adds: &[(u64, bool)],
) -> std::result::Result<(), String> {
    scratch.begin(num_buckets, signed);
    for &(bucket, negative) in adds {
        scratch.add(bucket, negative);
    }
    if scratch.finish() == naive_sums(signed, adds) {
        Ok(())
    } else {
        Err(format!(
            "sums differ for {} adds, num_buckets {num_buckets}, signed {signed}",
            adds.len()
        ))
    }
}

/// Bucket counts at the edges of the key widths: one bucket, the largest
/// 32-bit keys (signed and not) and the first 33-bit ones, and the most.
const EDGE_BUCKETS: [u64; 12] = [
    1,
    2,
    3,
    97,
    1 << 12,
    1 << 20,
    (1 << 31) - 1,
    1 << 31,
    (1 << 31) + 1,
    1 << 32,
    (1 << 32) + 1,
    i64::MAX as u64,
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

    /// Any sequence of buckets, drawn from a few (long runs of repeats after
    /// sorting) or from all of them (mostly distinct), of lengths around
    /// the comparison-sort threshold: the sums of the naive definition.
    #[test]
    fn count_scratch_sums_equal_the_naive_sums(
        num_buckets in proptest::sample::select(EDGE_BUCKETS.to_vec()),
        signed in proptest::prelude::any::<bool>(),
        pool in proptest::prop_oneof![1u64..4, 4u64..300, proptest::strategy::Just(u64::MAX)],
        draws in proptest::collection::vec(
            (proptest::prelude::any::<u64>(), proptest::prelude::any::<bool>()), 0..1500),
        // The top bucket, 0 and the picks above, in turn.
        edges in proptest::prelude::any::<bool>(),
    ) {
        let mut scratch = CountScratch::new();
        let adds: Vec<(u64, bool)> = draws
            .iter()
            .enumerate()
            .map(|(i, &(r, negative))| {
                let bucket = match i % 3 {
                    0 if edges => num_buckets - 1,
                    1 if edges => 0,
                    _ => (r % pool.min(num_buckets)).wrapping_mul(0x9e37_79b9_7f4a_7c15) % num_buckets,
                };
                (bucket, negative)
            })
            .collect();
        let result = check_scratch(&mut scratch, num_buckets, signed, &adds);
        proptest::prop_assert!(result.is_ok(), "{}", result.unwrap_err());
        // Reused, with no trace of the previous document.
        let result = check_scratch(&mut scratch, num_buckets, !signed, &adds[..adds.len() / 2]);
        proptest::prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

/// Documents of every length around the batch size: all buckets distinct,
/// all the same, and in between, for 32-bit and wider keys.
#[test]
fn count_scratch_across_batches() {
    let mut scratch = CountScratch::new();
    let batch = count::BATCH;
    for len in [batch - 1, batch, batch + 1, 2 * batch + 7] {
        for num_buckets in [1, 1 << 20, 1 << 40] {
            for signed in [false, true] {
                for step in [1u64, 0, 0x9e37_79b9_7f4a_7c15] {
                    let adds: Vec<(u64, bool)> = (0..len as u64)
                        .map(|i| (i.wrapping_mul(step) % num_buckets, i % 3 == 0))
                        .collect();
                    check_scratch(&mut scratch, num_buckets, signed, &adds).unwrap();
                }
            }
        }
    }
}
