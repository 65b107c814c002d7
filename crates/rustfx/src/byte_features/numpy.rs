//! numpy's float arithmetic, reproduced operation for operation: pairwise
//! summation, the correctly rounded float32 log2, and EMBER's entropy in
//! numpy 1.x's dtypes (see the module docs of `byte_features`).

use super::NUMPY1_FLOAT32_DIVISOR_LIMIT;
use core::ops::Add;

/// numpy's pairwise summation (`np.add.reduce` on a contiguous float array),
/// in the same order of operations, starting from `-0.0` like numpy.
pub(super) fn numpy_pairwise_sum<T: Copy + Add<Output = T>>(a: &[T], neg_zero: T) -> T {
    if a.len() < 8 {
        a.iter().fold(neg_zero, |acc, &x| acc + x)
    } else if a.len() <= 128 {
        let Some((first, rest)) = a.split_first_chunk::<8>() else {
            return neg_zero; // unreachable: a.len() >= 8
        };
        let mut r = *first;
        let mut blocks = rest.chunks_exact(8);
        for block in &mut blocks {
            for (acc, &x) in r.iter_mut().zip(block) {
                *acc = *acc + x;
            }
        }
        let [r0, r1, r2, r3, r4, r5, r6, r7] = r;
        let mut res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7));
        for &x in blocks.remainder() {
            res = res + x;
        }
        res
    } else {
        let half = a.len() / 2;
        let split = half - half % 8;
        let (lo, hi) = a.split_at(split);
        numpy_pairwise_sum(lo, neg_zero) + numpy_pairwise_sum(hi, neg_zero)
    }
}

/// `np.sum` of a float32 array: the reduction starts from its identity 0.0.
pub(super) fn numpy_sum_f32(a: &[f32]) -> f32 {
    0.0 + numpy_pairwise_sum(a, -0.0f32)
}

/// `np.sum` of a float64 array.
pub(crate) fn numpy_sum_f64(a: &[f64]) -> f64 {
    0.0 + numpy_pairwise_sum(a, -0.0f64)
}

/// The correctly rounded `float32` log2 of `p` in (0, 1] (see the module
/// docs for why going through `f64` is exact for every such `float32`).
pub(super) fn log2_f32(p: f32) -> f32 {
    (f64::from(p)).log2() as f32
}

/// `-p·log2(p)` in `float32` for `p = count / divisor` (EMBER's term).
pub(super) fn entropy_term_f32(count: u64, divisor: f32) -> f32 {
    let p = count as f32 / divisor;
    -p * log2_f32(p)
}

/// `np.sum` of the `float32` terms of the nonzero `counts`, in bin order.
pub(super) fn entropy_f32<const N: usize>(
    counts: &[u64; N],
    mut term: impl FnMut(u64) -> f32,
) -> f32 {
    let mut terms = [0f32; N];
    let mut n = 0;
    for (t, &c) in terms.iter_mut().zip(counts.iter().filter(|&&c| c != 0)) {
        *t = term(c);
        n += 1;
    }
    numpy_sum_f32(terms.get(..n).unwrap_or(&[]))
}

/// EMBER's entropy of the nonzero `counts` over `divisor` in bits:
/// `Σ -p·log2(p)` with `p = count / divisor`, in numpy 1.x's dtype for
/// `float32_array / divisor` (`float32` below 65536, else `float64`).
/// `N` is the number of bins (16 or 96).
pub(super) fn numpy1_entropy<const N: usize>(counts: &[u64; N], divisor: u64) -> f64 {
    if divisor < NUMPY1_FLOAT32_DIVISOR_LIMIT {
        let d = divisor as f32;
        f64::from(entropy_f32(counts, |c| entropy_term_f32(c, d)))
    } else {
        let d = divisor as f64;
        let mut terms = [0f64; N];
        let mut n = 0;
        for (t, &c) in terms.iter_mut().zip(counts.iter().filter(|&&c| c != 0)) {
            // `c.astype(np.float32)` first, then promoted to float64.
            let p = f64::from(c as f32) / d;
            *t = -p * p.log2();
            n += 1;
        }
        numpy_sum_f64(terms.get(..n).unwrap_or(&[]))
    }
}
