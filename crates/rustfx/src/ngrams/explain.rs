//! Explanations of the hashed n-grams: one contribution per n-gram
//! occurrence, in the order the extractor emits its ids, with the span of
//! the document from its first unit's start to its last unit's end and its
//! text as hashed (lowercased, joined). The n-grams come from the simple
//! walk of `spans` and are hashed one at a time ([`NgramHasher::bucket`]),
//! so reassembly checks extraction's streaming, batched paths against it.
//! Counts are finished by the counter's own code (`add_dense` and
//! `normalize_dense`, `finish_sparse_row`).

use super::count::normalize_dense;
use super::counter::{add_dense, finish_sparse_row, EXACT_F32_SUMS};
use super::spans::spanned_grams;
use super::{Bucket, NgramCounter, NgramCounts, NgramHasher, NgramSequence};
use crate::explain::{
    float32_row, not_explained, slot_of, Contribution, Contributions, Explain, ExplainOptions,
    Explanation, MAX_CONTRIBUTIONS,
};
use crate::extractor::{RowExtractor, SparseRowsExtractor};
use crate::output::{Batch, SparseRow};
use crate::Result;
use std::collections::BTreeMap;
use std::ops::ControlFlow;

// An explanation that reassembles has every n-gram, so dense counts are
// exact f32 sums, as extraction's are below this many n-grams.
const _: () = assert!(MAX_CONTRIBUTIONS <= EXACT_F32_SUMS);

/// The largest id a contribution's f64 value holds exactly (2^53).
const MAX_EXACT_ID: u64 = 1 << 53;

/// The contributions of the first `limit` n-grams of `doc`; `make` gives
/// each its index and value from its position and bucket.
fn contributions(
    hasher: &NgramHasher,
    doc: &[u8],
    options: &ExplainOptions,
    limit: usize,
    make: impl Fn(usize, Bucket) -> (u64, f64),
) -> Contributions {
    let mut out = Contributions::new(options);
    let mut position = 0;
    if limit == 0 {
        return out;
    }
    let _ = spanned_grams(&hasher.config, doc, &mut |gram| {
        let (index, value) = make(position, hasher.bucket(gram.text));
        let length = gram.end.saturating_sub(gram.start) as u64;
        if !out.push(index, gram.start as u64, length, value, gram.text) {
            return ControlFlow::Break(());
        }
        position += 1;
        match position == limit {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    });
    out
}

/// A contribution's index as a slot of a row of `width`, or the bug it is.
fn slot(c: &Contribution, width: usize) -> Result<usize> {
    slot_of(c, 0, width)
}

/// The hash sign a count contribution carries (+1 without
/// `alternate_sign`).
fn sign(c: &Contribution) -> i8 {
    if c.value < 0.0 {
        -1
    } else {
        1
    }
}

/// The count contributions of `counter`: the bucket, +1 or the hash sign.
fn count_contributions(
    counter: &NgramCounter,
    doc: &[u8],
    options: &ExplainOptions,
) -> Contributions {
    let signed = counter.options().alternate_sign;
    contributions(counter.hasher(), doc, options, usize::MAX, |_, bucket| {
        let value = if signed { f64::from(bucket.sign) } else { 1.0 };
        (bucket.index, value)
    })
}

impl Explain for NgramHasher {
    /// Index: the n-gram's bucket id; value 1.
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        let out = contributions(self, doc, options, usize::MAX, |_, bucket| {
            (bucket.index, 1.0)
        });
        let assemble = |contributions: &[Contribution]| {
            let ids: Vec<i64> = contributions.iter().map(|c| c.index as i64).collect();
            Ok(Batch::ragged_row(ids.into()))
        };
        Ok(Explanation::new(
            out,
            "one n-gram occurrence each; the ids are the indices, in order",
            Box::new(assemble),
        ))
    }
}

impl Explain for NgramSequence {
    /// Index: the position in the row; value: the n-gram's bucket id. One
    /// per n-gram of the first `max_tokens`.
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        if self.hasher().config().num_buckets > MAX_EXACT_ID {
            return Err(not_explained(
                "hashed_ngrams",
                "output='sequence' with num_buckets above 2**53: an id would not fit \
                 a contribution's float64 value exactly",
            ));
        }
        let width = RowExtractor::width(self);
        let out = contributions(self.hasher(), doc, options, width, |position, bucket| {
            (position as u64, bucket.index as f64)
        });
        let pad = self.pad_value();
        let assemble = move |contributions: &[Contribution]| {
            let mut values = vec![pad; width];
            for c in contributions {
                // Exact: ids are below 2^53.
                values[slot(c, width)?] = c.value as i64;
            }
            Ok(Batch::dense_row(values))
        };
        Ok(Explanation::new(
            out,
            "the id of the n-gram at that position; positions past the last n-gram \
             hold pad_value",
            Box::new(assemble),
        ))
    }
}

impl Explain for NgramCounts {
    /// Index: the n-gram's bucket; value 1, or its hash sign with
    /// `alternate_sign`.
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        let counter = self.counter();
        let out = count_contributions(counter, doc, options);
        let (width, count_options) = (RowExtractor::width(self), counter.options());
        let assemble = move |contributions: &[Contribution]| {
            // Summed in order into f32, as extraction sums (exact: fewer
            // than 2^24 n-grams), then normalised by its code.
            let mut row = vec![0.0f32; width];
            for c in contributions {
                add_dense(&mut row[slot(c, width)?], count_options, sign(c));
            }
            normalize_dense(&mut row, count_options.norm);
            Ok(float32_row(row))
        };
        Ok(Explanation::new(
            out,
            "the n-gram's +1 (its hash sign with alternate_sign) to its bucket's count; \
             output = the counts, 1 where binary, then the row norm",
            Box::new(assemble),
        ))
    }
}

impl Explain for NgramCounter {
    /// Index: the n-gram's bucket; value 1, or its hash sign with
    /// `alternate_sign`.
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        let out = count_contributions(self, doc, options);
        let (width, count_options) = (SparseRowsExtractor::width(self), self.options());
        let assemble = move |contributions: &[Contribution]| {
            // Integer sums per bucket, sorted, finished as extraction
            // finishes them.
            let mut sums = BTreeMap::<u64, i64>::new();
            for c in contributions {
                *sums.entry(c.index).or_default() += i64::from(sign(c));
            }
            let summed: Vec<(u64, i64)> = sums.into_iter().collect();
            let mut row = SparseRow::default();
            finish_sparse_row(&summed, count_options, &mut row);
            Ok(Batch::Sparse {
                width,
                offsets: crate::output::Offsets::from_lengths([row.indices.len()]),
                indices: row.indices,
                values: row.values.into(),
            })
        };
        Ok(Explanation::new(
            out,
            "the n-gram's +1 (its hash sign with alternate_sign) to its bucket's count; \
             output = the counts, 1 where binary, then the row norm",
            Box::new(assemble),
        ))
    }
}
