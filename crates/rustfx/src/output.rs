//! What extractors output: a [`Batch`] of documents' values in one of the
//! output layouts, which [`Extractor::extract_batch`] returns and every host
//! converts into its own form (tensors, numpy arrays, text, a model's input).
//!
//! ```
//! use rustfx::output::Batch;
//! use rustfx::spec::FeatureSpec;
//! let spec = FeatureSpec::from_json(r#"{"extractor": "byte_histogram"}"#).unwrap();
//! let batch = spec.build().unwrap().extract_batch(&[b"aab", b""]).unwrap();
//! let Batch::Float32Rows(rows) = &batch else { panic!("dense float32 rows") };
//! assert_eq!((batch.rows(), rows.width), (2, 256));
//! assert_eq!(rows.row(0)[usize::from(b'a')], 2.0 / 3.0);
//! ```
//!
//! [`Extractor::extract_batch`]: crate::extractor::Extractor::extract_batch

/// A sparse row: sorted, distinct bucket indices of the n-grams that occurred
/// and their values (0 where signed occurrences cancel).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SparseRow {
    /// Sorted distinct bucket indices.
    pub indices: Vec<u64>,
    /// The value of each index, same length as `indices`.
    pub values: Vec<f32>,
}

/// Fixed-width rows end to end: row `i` is `values[i * width..(i + 1) * width]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DenseRows<T> {
    /// How many rows (documents).
    pub rows: usize,
    /// Values per row.
    pub width: usize,
    /// `rows * width` values.
    pub values: Vec<T>,
}

impl<T> DenseRows<T> {
    /// The values of row `i`.
    pub fn row(&self, i: usize) -> &[T] {
        &self.values[i * self.width..(i + 1) * self.width]
    }
}

/// The outputs of a batch of documents, one variant per output layout.
/// Ragged and sparse variants end each document's values at `row_ends`
/// (cumulative, one per document): document `i` has the values from
/// `row_ends[i - 1]` (0 for the first) to `row_ends[i]`.
#[derive(Clone, Debug, PartialEq)]
pub enum Batch {
    /// Fixed-width float32 rows.
    Float32Rows(DenseRows<f32>),
    /// Fixed-width int32 rows.
    Int32Rows(DenseRows<i32>),
    /// Fixed-width int64 rows.
    Int64Rows(DenseRows<i64>),
    /// Any number of int64 ids per document.
    RaggedIds {
        /// Every document's ids, end to end.
        ids: Vec<i64>,
        /// Where each document's ids end in `ids`.
        row_ends: Vec<u64>,
    },
    /// Sparse float32 rows of a fixed dense width, indices sorted per row.
    SparseRows {
        /// The dense width of a row.
        width: usize,
        /// Every document's indices, end to end.
        indices: Vec<u64>,
        /// The value of each index.
        values: Vec<f32>,
        /// Where each document's indices end.
        row_ends: Vec<u64>,
    },
    /// Any number of byte strings per document.
    RaggedStrings {
        /// Every string's bytes, end to end.
        bytes: Vec<u8>,
        /// Where each string ends in `bytes`.
        string_ends: Vec<u64>,
        /// Where each document's strings end in `string_ends`.
        row_ends: Vec<u64>,
    },
}

impl Batch {
    /// How many documents the batch holds.
    pub fn rows(&self) -> usize {
        match self {
            Batch::Float32Rows(DenseRows { rows, .. })
            | Batch::Int32Rows(DenseRows { rows, .. })
            | Batch::Int64Rows(DenseRows { rows, .. }) => *rows,
            Batch::RaggedIds { row_ends, .. }
            | Batch::SparseRows { row_ends, .. }
            | Batch::RaggedStrings { row_ends, .. } => row_ends.len(),
        }
    }
}

impl Batch {
    /// Whether `other` holds the same values bit for bit: NaN payloads and
    /// the sign of zero count, which `==` on floats ignores. What "exact"
    /// means for explanations ([`crate::explain::Explanation::reassemble`])
    /// and the tests that compare outputs.
    pub fn same_bits(&self, other: &Batch) -> bool {
        fn bits(values: &[f32]) -> impl Iterator<Item = u32> + '_ {
            values.iter().map(|v| v.to_bits())
        }
        match (self, other) {
            (Batch::Float32Rows(a), Batch::Float32Rows(b)) => {
                (a.rows, a.width) == (b.rows, b.width) && bits(&a.values).eq(bits(&b.values))
            }
            (
                Batch::SparseRows {
                    width,
                    indices,
                    values,
                    row_ends,
                },
                Batch::SparseRows {
                    width: w,
                    indices: i,
                    values: v,
                    row_ends: r,
                },
            ) => (width, indices, row_ends) == (w, i, r) && bits(values).eq(bits(v)),
            // The other layouts hold integers and bytes, whose == is bitwise.
            (a, b) => a == b,
        }
    }
}

/// The range of document `i`'s values in a ragged or sparse batch, from its
/// `row_ends`.
pub fn row_range(row_ends: &[u64], i: usize) -> std::ops::Range<usize> {
    let start = if i == 0 { 0 } else { row_ends[i - 1] as usize };
    start..row_ends[i] as usize
}

#[cfg(test)]
mod tests {
    use super::Batch;
    use crate::registry::EXTRACTORS;
    use crate::spec::FeatureSpec;

    #[test]
    fn same_bits_counts_nan_payloads_and_signed_zeros() {
        let row = |values: Vec<f32>| {
            Batch::Float32Rows(super::DenseRows {
                rows: 1,
                width: values.len(),
                values,
            })
        };
        assert!(row(vec![f32::NAN, 1.0]).same_bits(&row(vec![f32::NAN, 1.0])));
        assert!(!row(vec![0.0]).same_bits(&row(vec![-0.0])));
        assert!(!row(vec![f32::NAN]).same_bits(&row(vec![f32::from_bits(0x7fc0_0001)])));
        assert!(!row(vec![1.0]).same_bits(&Batch::RaggedIds {
            ids: vec![],
            row_ends: vec![0]
        }));
    }

    /// For every registry example: one batch of all documents equals the
    /// documents appended one by one, and a reused batch equals a new one.
    #[test]
    fn appended_and_reused_batches_equal_one_batch() {
        let docs: [&[u8]; 4] = [
            b"MZ\x90\x00 hello world C:\\x http://a.b HKEY_X",
            b"",
            "Gr\u{f6}\u{df}e caf\u{e9} x\u{b2}".as_bytes(),
            b"aaaa bbbb aaaa \xff\xfe w\0i\0d\0e\0",
        ];
        for entry in EXTRACTORS {
            for params in entry.examples {
                let text = format!(r#"{{"extractor": "{}", "params": {params}}}"#, entry.name);
                let extractor = FeatureSpec::from_json(&text).unwrap().build().unwrap();
                let whole = extractor.extract_batch(&docs).unwrap();
                assert_eq!(whole.rows(), docs.len(), "{text}");
                let mut appended = extractor.extract_batch(&[]).unwrap();
                for doc in docs {
                    extractor.append_batch(&[doc], &mut appended).unwrap();
                }
                // Bitwise: NaN (byte_histogram's empty) is not == NaN.
                let same = |a: &Batch, b: &Batch| a.same_bits(b);
                assert!(same(&appended, &whole), "{text}: appended");
                let mut reused = extractor.extract_batch(&docs[..1]).unwrap();
                extractor.extract_batch_into(&docs, &mut reused).unwrap();
                assert!(same(&reused, &whole), "{text}: reused");
                let mut other = Batch::Int32Rows(Default::default());
                extractor.extract_batch_into(&docs, &mut other).unwrap();
                assert!(same(&other, &whole), "{text}: replaced");
            }
        }
    }
}
