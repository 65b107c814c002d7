//! [`NgramSequence`]: the first ids of each document, padded to a
//! fixed-width row.

use super::config::MAX_SEQUENCE_TOKENS;
use super::grams::Order;
use super::hash::{Bucket, BucketStream};
use super::hasher::NgramHasher;
use super::scratch::with_gram_scratch;
use crate::extractor::{check_width, RowExtractor};
use crate::{Error, Result};
use std::ops::ControlFlow;

/// The first `max_tokens` ids of each document, padded: a fixed-width row
/// for embedding layers. Hashing stops as soon as the row is full.
#[derive(Clone, Debug)]
pub struct NgramSequence {
    hasher: NgramHasher,
    max_tokens: usize,
    pad_value: i64,
}

impl NgramSequence {
    /// Rows of `max_tokens` ids (in `1..=`[`MAX_SEQUENCE_TOKENS`]) padded
    /// with `pad_value`, which must not be a bucket id (`< 0` or
    /// `>= num_buckets`), so padding never looks like an n-gram.
    pub fn new(hasher: NgramHasher, max_tokens: usize, pad_value: i64) -> Result<Self> {
        if !(1..=MAX_SEQUENCE_TOKENS).contains(&max_tokens) {
            return Err(Error::invalid_argument(format!(
                "max_tokens must be in [1, {MAX_SEQUENCE_TOKENS}], got {max_tokens}"
            )));
        }
        let num_buckets = hasher.config().num_buckets;
        if u64::try_from(pad_value).is_ok_and(|pad| pad < num_buckets) {
            return Err(Error::invalid_argument(format!(
                "pad_value must not be a bucket id: it must be < 0 or >= num_buckets \
                 ({num_buckets}), got {pad_value}"
            )));
        }
        Ok(NgramSequence {
            hasher,
            max_tokens,
            pad_value,
        })
    }

    /// The hasher that makes the ids.
    pub fn hasher(&self) -> &NgramHasher {
        &self.hasher
    }

    /// The pad id.
    pub fn pad_value(&self) -> i64 {
        self.pad_value
    }

    /// Writes the first ids of `doc` into `out` (any length) and fills the
    /// rest with the pad id. Returns how many ids were written.
    pub fn fill(&self, doc: &[u8], out: &mut [i64]) -> usize {
        let mut written = 0;
        let width = out.len();
        if width > 0 {
            let mut buckets = BucketStream::new(&self.hasher, |at, bucket: Bucket| {
                if let Some(slot) = out.get_mut(at) {
                    *slot = bucket.index as i64;
                }
            });
            with_gram_scratch(|gram_scratch| {
                let _ = self
                    .hasher
                    .grams(doc, Order::Output, gram_scratch, &mut |_, gram| {
                        buckets.push(written, gram);
                        written += 1;
                        if written == width {
                            ControlFlow::Break(())
                        } else {
                            ControlFlow::Continue(())
                        }
                    });
            });
            buckets.finish();
        }
        out[written..].fill(self.pad_value);
        written
    }
}

impl RowExtractor for NgramSequence {
    type Value = i64;

    fn width(&self) -> usize {
        self.max_tokens
    }

    fn write_row(&self, doc: &[u8], out: &mut [i64]) -> Result<()> {
        check_width(out.len(), self.max_tokens)?;
        self.fill(doc, out);
        Ok(())
    }

    /// One stream of buckets for the whole batch, as
    /// [`NgramHasher::id_rows`] does: a bucket's tag is its slot in `out`.
    fn write_rows(&self, docs: &[&[u8]], out: &mut [i64]) -> Result<()> {
        let width = self.max_tokens;
        check_width(out.len(), docs.len().saturating_mul(width))?;
        let mut written_per_row = Vec::with_capacity(docs.len());
        let mut buckets = BucketStream::new(&self.hasher, |at, bucket: Bucket| {
            if let Some(slot) = out.get_mut(at) {
                *slot = bucket.index as i64;
            }
        });
        with_gram_scratch(|gram_scratch| {
            for (row, doc) in docs.iter().enumerate() {
                let first = row * width;
                let mut written = 0;
                let _ = self
                    .hasher
                    .grams(doc, Order::Output, gram_scratch, &mut |_, gram| {
                        buckets.push(first + written, gram);
                        written += 1;
                        if written == width {
                            ControlFlow::Break(())
                        } else {
                            ControlFlow::Continue(())
                        }
                    });
                written_per_row.push(written);
            }
        });
        buckets.finish();
        for (row, written) in out.chunks_exact_mut(width).zip(written_per_row) {
            row[written..].fill(self.pad_value);
        }
        Ok(())
    }

    /// An estimate, not a bound: the row is full after `max_tokens` ids,
    /// at most one token each, and a token with its separator rarely takes
    /// more than 16 bytes.
    fn work_bytes_hint(&self) -> Option<usize> {
        Some(self.max_tokens.saturating_mul(SEQUENCE_BYTES_PER_ID))
    }
}

/// Bytes of input per id assumed by [`NgramSequence`]'s work hint.
const SEQUENCE_BYTES_PER_ID: usize = 16;
