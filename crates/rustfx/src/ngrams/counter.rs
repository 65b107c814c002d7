//! Bags of n-grams: [`NgramCounter`]'s sparse rows and [`NgramCounts`]'
//! dense ones.

use super::config::{CountOptions, HashFamily, Norm, MAX_DENSE_BUCKETS};
use super::count::{normalize_dense, CountScratch};
use super::grams::Order;
use super::hash::{Bucket, BucketStream};
use super::hasher::NgramHasher;
use super::scratch::{with_gram_scratch, with_scratch};
use crate::extractor::{check_width, RowExtractor};
use crate::output::SparseRow;
use crate::{Error, ErrorKind, Result};
use std::ops::ControlFlow;

/// Bags of n-grams, weighted as scikit-learn's `HashingVectorizer` does.
#[derive(Clone, Debug)]
pub struct NgramCounter {
    hasher: NgramHasher,
    options: CountOptions,
}

impl NgramCounter {
    /// Counts with `options`. `alternate_sign` needs [`HashFamily::Murmur3`]:
    /// Fingerprint64 has no sign.
    pub fn new(hasher: NgramHasher, options: CountOptions) -> Result<Self> {
        if options.alternate_sign && hasher.config().hash != HashFamily::Murmur3 {
            return Err(Error::invalid_argument(
                "alternate_sign=True needs hash='murmur3' (Fingerprint64 has no sign)",
            ));
        }
        Ok(NgramCounter { hasher, options })
    }

    /// The hasher that makes the buckets.
    pub fn hasher(&self) -> &NgramHasher {
        &self.hasher
    }

    /// The bag of n-grams of `doc` as a sparse row, like one row of
    /// scikit-learn's `HashingVectorizer` / `FeatureHasher` output: counts
    /// summed exactly, then `binary`, then `norm` (in f64, rounded to f32 at
    /// the end). Like scipy's `sum_duplicates`, a bucket whose signed
    /// occurrences cancel keeps an explicit 0, so `binary` makes it 1.
    pub fn counts(&self, doc: &[u8], row: &mut SparseRow) {
        with_scratch(|scratch| self.counts_with(doc, row, scratch));
    }

    /// [`counts`](Self::counts) with the caller's buffers, reused from one
    /// document to the next.
    ///
    /// ```
    /// use rustfx::ngrams::*;
    /// use rustfx::output::SparseRow;
    /// let hasher = NgramHasher::new(NgramConfig {
    ///     tokenizer: Tokenizer::Whitespace,
    ///     widths: vec![1],
    ///     lowercase: false,
    ///     hash: HashFamily::Fingerprint64,
    ///     num_buckets: 1 << 20,
    /// })
    /// .unwrap();
    /// let options = CountOptions { binary: false, alternate_sign: false, norm: Norm::None };
    /// let counter = NgramCounter::new(hasher, options).unwrap();
    /// let (mut scratch, mut row) = (CountScratch::new(), SparseRow::default());
    /// counter.counts_with(b"to be or not to be", &mut row, &mut scratch);
    /// assert_eq!(row.values.iter().sum::<f32>(), 6.0);
    /// ```
    pub fn counts_with(&self, doc: &[u8], row: &mut SparseRow, scratch: &mut CountScratch) {
        let signed = self.options.alternate_sign;
        scratch.begin(self.hasher.config.num_buckets, signed);
        let mut buckets = BucketStream::new(&self.hasher, |_, bucket: Bucket| {
            scratch.add(bucket.index, bucket.sign < 0);
        });
        with_gram_scratch(|gram_scratch| {
            let _ = self
                .hasher
                .grams(doc, Order::OnePass, gram_scratch, &mut |_, gram| {
                    buckets.push(0, gram);
                    ControlFlow::Continue(())
                });
        });
        buckets.finish();
        finish_sparse_row(scratch.finish(), self.options, row);
    }

    /// The counting options.
    pub(super) fn options(&self) -> CountOptions {
        self.options
    }
}

/// The sparse row of a document's `(bucket, sum)` pairs sorted by bucket
/// (each sum the n-grams of the bucket, signed with `alternate_sign`):
/// `binary`, then `norm`, in f64, rounded to f32 at the end. Also how an
/// explanation finishes its summed contributions.
#[inline]
pub(super) fn finish_sparse_row(summed: &[(u64, i64)], options: CountOptions, row: &mut SparseRow) {
    // Sorted, so norms add up in scikit-learn's (CSR) order.
    let binary = options.binary;
    let value = |sum: i64| if binary { 1.0 } else { sum as f64 };
    let scale = match options.norm {
        Norm::None => 1.0,
        Norm::L1 => summed.iter().map(|&(_, v)| value(v).abs()).sum::<f64>(),
        Norm::L2 => summed
            .iter()
            .map(|&(_, v)| value(v) * value(v))
            .sum::<f64>()
            .sqrt(),
    };
    // Two extends of exact length (each one allocation at most).
    row.indices.clear();
    row.indices.extend(summed.iter().map(|&(index, _)| index));
    row.values.clear();
    row.values.extend(summed.iter().map(|&(_, sum)| {
        let value = value(sum);
        (if scale > 0.0 { value / scale } else { value }) as f32
    }));
}

/// The sparse output of `hashed_ngrams`: a row as wide as the buckets.
impl crate::extractor::SparseRowsExtractor for NgramCounter {
    fn width(&self) -> usize {
        usize::try_from(self.hasher.config().num_buckets).unwrap_or(usize::MAX)
    }

    fn write_sparse_row(&self, doc: &[u8], row: &mut SparseRow) {
        self.counts(doc, row);
    }
}

/// [`NgramCounter`] rows as dense float32 vectors of `num_buckets` values.
#[derive(Clone, Debug)]
pub struct NgramCounts {
    counter: NgramCounter,
    width: usize,
}

impl NgramCounts {
    /// The counter whose rows these are, dense.
    pub(super) fn counter(&self) -> &NgramCounter {
        &self.counter
    }

    /// Dense rows need `num_buckets <= `[`MAX_DENSE_BUCKETS`] (4 MiB of
    /// float32 per document); use [`NgramCounter`] for sparse rows beyond.
    pub fn new(counter: NgramCounter) -> Result<Self> {
        let num_buckets = counter.hasher().config().num_buckets;
        let width = usize::try_from(num_buckets)
            .ok()
            .filter(|&n| n <= MAX_DENSE_BUCKETS)
            .ok_or_else(|| {
                Error::invalid_argument(format!(
                    "num_buckets must be in [1, {MAX_DENSE_BUCKETS}] for dense counts \
                     (one float32 row per element), got {num_buckets}; use output='sparse'"
                ))
            })?;
        Ok(NgramCounts { counter, width })
    }
}

impl RowExtractor for NgramCounts {
    type Value = f32;

    fn width(&self) -> usize {
        self.width
    }

    fn write_row(&self, doc: &[u8], out: &mut [f32]) -> Result<()> {
        check_width(out.len(), self.width)?;
        self.sum_into(doc, out, EXACT_F32_SUMS)
    }
}

impl NgramCounts {
    /// The row of `doc`, summed in `out` (of `width` values) when it has at
    /// most `exact_sums` n-grams (a parameter so tests reach both paths).
    pub(super) fn sum_into(&self, doc: &[u8], out: &mut [f32], exact_sums: usize) -> Result<()> {
        out.fill(0.0);
        let hasher = &self.counter.hasher;
        let options = self.counter.options;
        let mut grams = 0usize;
        let mut outside = None;
        // Summed straight into the row: f32 holds every integer up to 2^24
        // exactly, and no partial sum exceeds the number of n-grams.
        let mut buckets = BucketStream::new(hasher, |_, bucket: Bucket| {
            // Every index is below num_buckets = out.len(); checked anyway,
            // and a broken invariant is reported, never written past.
            let Some(slot) = usize::try_from(bucket.index)
                .ok()
                .and_then(|i| out.get_mut(i))
            else {
                outside = Some(bucket.index);
                return;
            };
            add_dense(slot, options, bucket.sign);
        });
        with_gram_scratch(|gram_scratch| {
            let _ = hasher.grams(doc, Order::OnePass, gram_scratch, &mut |_, gram| {
                buckets.push(0, gram);
                grams += 1;
                ControlFlow::Continue(())
            });
        });
        buckets.finish();
        if let Some(index) = outside {
            return Err(Error::new(
                ErrorKind::Internal,
                format!("bucket {index} out of range (a bug in rustfx)"),
            ));
        }
        if !options.binary && grams > exact_sums {
            // Some sum may have rounded: take the exact sparse row instead.
            let mut row = SparseRow::default();
            self.counter.counts(doc, &mut row);
            out.fill(0.0);
            for (&index, &value) in row.indices.iter().zip(&row.values) {
                if let Some(slot) = usize::try_from(index).ok().and_then(|i| out.get_mut(i)) {
                    *slot = value;
                }
            }
            return Ok(());
        }
        normalize_dense(out, options.norm);
        Ok(())
    }
}

/// Adds one n-gram of hash sign `sign` to its bucket's `slot` of a dense
/// row (an explanation's too).
#[inline(always)]
pub(super) fn add_dense(slot: &mut f32, options: CountOptions, sign: i8) {
    if options.binary {
        *slot = 1.0;
    } else if options.alternate_sign {
        *slot += f32::from(sign);
    } else {
        *slot += 1.0;
    }
}

/// The most n-grams whose counts f32 sums hold exactly (2^24).
pub(super) const EXACT_F32_SUMS: usize = 1 << 24;
