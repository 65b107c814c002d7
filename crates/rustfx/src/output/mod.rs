//! What extractors output: a [`Batch`] of documents' values, which
//! [`Extractor::extract_batch`] returns and every host converts into its own
//! form (tensors, numpy arrays, text, a model's input).
//!
//! An output is a **layout** ([`Layout`]: dense rows of a width, ragged
//! rows, sparse rows) and a **dtype** ([`DType`], the values' element type):
//! two fields, not a variant per pair. A [`Batch`] has one variant per
//! layout, each holding [`Values`] of any dtype.
//!
//! ```
//! use rustfx::output::Batch;
//! use rustfx::spec::FeatureSpec;
//! let spec = FeatureSpec::from_json(r#"{"extractor": "byte_histogram"}"#).unwrap();
//! let batch = spec.build().unwrap().extract_batch(&[b"aab", b""]).unwrap();
//! let rows = batch.into_dense::<f32>().unwrap();
//! assert_eq!((rows.rows, rows.width), (2, 256));
//! assert_eq!(rows.row(0)[usize::from(b'a')], 2.0 / 3.0);
//! ```
//!
//! [`Extractor::extract_batch`]: crate::extractor::Extractor::extract_batch

mod huge_pages;
mod offsets;
mod values;

pub use offsets::Offsets;
pub(crate) use values::wrong_dtype;
pub use values::{DType, Element, Strings, Values, ValuesMut};

use crate::{Error, ErrorKind, Result};

/// How each document's values are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// A row of exactly `width` values.
    Dense,
    /// Any number of values.
    Ragged,
    /// A sparse row of dense width `width`.
    Sparse,
}

crate::names::named_values!(Layout, "output kind", {
    Dense => "dense",
    Ragged => "ragged",
    Sparse => "sparse",
});

/// What an extractor outputs per document: layout, dtype and, for dense and
/// sparse rows, the width. Part of every [`FeatureSpec`](crate::spec::FeatureSpec)
/// (its JSON calls the layout "kind").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OutputSpec {
    /// Dense, ragged or sparse.
    pub layout: Layout,
    /// The element type.
    pub dtype: DType,
    /// Values per row (dense), the dense width (sparse), `None` (ragged).
    pub width: Option<usize>,
}

/// A sparse row: sorted, distinct bucket indices of the n-grams that occurred
/// and their values (0 where signed occurrences cancel).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SparseRow {
    /// Sorted distinct bucket indices.
    pub indices: Vec<u64>,
    /// The value of each index, same length as `indices`.
    pub values: Vec<f32>,
}

/// Fixed-width rows of one element type end to end: row `i` is
/// `values[i * width..(i + 1) * width]`. A typed view of a dense [`Batch`]
/// ([`Batch::into_dense`]).
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

/// The outputs of a batch of documents, one variant per layout. Ragged and
/// sparse rows say where each document's values are by their [`Offsets`]:
/// document `i` has the values `offsets.range(i)`.
#[derive(Clone, Debug, PartialEq)]
pub enum Batch {
    /// Fixed-width rows.
    Dense {
        /// How many rows (documents).
        rows: usize,
        /// Values per row.
        width: usize,
        /// `rows * width` values, row after row.
        values: Values,
    },
    /// Any number of values per document (strings included).
    Ragged {
        /// Every document's values, end to end.
        values: Values,
        /// Where each document's values are in `values`.
        offsets: Offsets,
    },
    /// Sparse rows of a fixed dense width, indices sorted per row.
    Sparse {
        /// The dense width of a row.
        width: usize,
        /// Every document's indices, end to end.
        indices: Vec<u64>,
        /// The value of each index.
        values: Values,
        /// Where each document's indices (and values) are.
        offsets: Offsets,
    },
}

impl Default for Batch {
    fn default() -> Self {
        Batch::Ragged {
            values: Values::default(),
            offsets: Offsets::new(),
        }
    }
}

impl Batch {
    /// One dense row of `values`.
    pub fn dense_row<T: Element>(values: Vec<T>) -> Batch {
        Batch::Dense {
            rows: 1,
            width: values.len(),
            values: values.into(),
        }
    }

    /// One ragged row of `values`.
    pub fn ragged_row(values: Values) -> Batch {
        Batch::Ragged {
            offsets: Offsets::from_lengths([values.len()]),
            values,
        }
    }

    /// `InvalidArgument` unless the batch is `rows` documents of `output`
    /// and whole: its layout and dtype, `rows * width` dense values,
    /// row ends that never go back and end at the last value, string ends
    /// likewise, sparse indices strictly increasing within a row and below
    /// the width. What a host checks before it trusts rows made elsewhere
    /// (a feature cache filled from a corpus job's shards).
    pub fn check(&self, output: &OutputSpec, rows: usize) -> Result<()> {
        let bad = |what: String| {
            Err(Error::invalid_argument(format!(
                "rows of {output:?}: {what}"
            )))
        };
        if self.layout() != output.layout || self.values().dtype() != output.dtype {
            return bad(format!(
                "got {:?} {} rows",
                self.layout(),
                self.values().dtype().name()
            ));
        }
        if self.rows() != rows {
            return bad(format!("{} rows for {rows} documents", self.rows()));
        }
        if let Values::String(strings) = self.values() {
            if strings.offsets.last() != strings.bytes.len() {
                return bad("string ends do not fit the bytes".into());
            }
        }
        let count = self.values().len();
        match self {
            Batch::Dense { width, .. } => {
                if Some(*width) != output.width || rows.checked_mul(*width) != Some(count) {
                    return bad(format!("{count} values, width {width}"));
                }
            }
            Batch::Ragged { offsets, .. } => {
                if offsets.last() != count {
                    return bad("row offsets do not fit the values".into());
                }
            }
            Batch::Sparse {
                width,
                indices,
                offsets,
                ..
            } => {
                if Some(*width) != output.width || indices.len() != count || offsets.last() != count
                {
                    return bad("indices, values and row offsets do not fit".into());
                }
                for range in offsets.ranges() {
                    let row = &indices[range];
                    if row.windows(2).any(|w| w[0] >= w[1])
                        || row.iter().any(|&i| i >= *width as u64)
                    {
                        return bad(
                            "sparse indices not increasing within a row, or past the width".into(),
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// How many documents the batch holds.
    pub fn rows(&self) -> usize {
        match self {
            Batch::Dense { rows, .. } => *rows,
            Batch::Ragged { offsets, .. } | Batch::Sparse { offsets, .. } => offsets.rows(),
        }
    }

    /// The batch's layout.
    pub fn layout(&self) -> Layout {
        match self {
            Batch::Dense { .. } => Layout::Dense,
            Batch::Ragged { .. } => Layout::Ragged,
            Batch::Sparse { .. } => Layout::Sparse,
        }
    }

    /// The batch's values, whatever the layout.
    pub fn values(&self) -> &Values {
        match self {
            Batch::Dense { values, .. }
            | Batch::Ragged { values, .. }
            | Batch::Sparse { values, .. } => values,
        }
    }

    /// Where each document's values are, for ragged and sparse rows (dense
    /// rows: `None`, every row has `width`).
    pub fn offsets(&self) -> Option<&Offsets> {
        match self {
            Batch::Dense { .. } => None,
            Batch::Ragged { offsets, .. } | Batch::Sparse { offsets, .. } => Some(offsets),
        }
    }

    /// The dense rows of `T`: what a host that feeds a model takes, in one
    /// call. An `Internal` error if the batch is not dense rows of `T`.
    pub fn into_dense<T: Element>(self) -> Result<DenseRows<T>> {
        let layout = self.layout();
        match self {
            Batch::Dense {
                rows,
                width,
                mut values,
            } => {
                let got = values.dtype();
                let values = T::of_mut(&mut values)
                    .map(std::mem::take)
                    .ok_or_else(|| wrong_dtype(T::DTYPE, got))?;
                Ok(DenseRows {
                    rows,
                    width,
                    values,
                })
            }
            _ => Err(Error::new(
                ErrorKind::Internal,
                format!("dense rows asked of {} rows", layout.name()),
            )),
        }
    }

    /// Ragged numeric rows padded with `pad` to the longest row: dense rows
    /// of that width, as `RaggedTensor.to_tensor(pad)` makes them (a
    /// model's input, MalConv2's batch padding). Dense rows are returned as
    /// they are; an `Internal` error for sparse rows and strings.
    pub fn into_padded(self, pad: f64) -> Result<Batch> {
        match self {
            Batch::Ragged { values, offsets } => {
                let (width, values) = values.padded_rows(&offsets, pad).ok_or_else(|| {
                    Error::new(ErrorKind::Internal, "string rows cannot be padded")
                })?;
                Ok(Batch::Dense {
                    rows: offsets.rows(),
                    width,
                    values,
                })
            }
            dense @ Batch::Dense { .. } => Ok(dense),
            Batch::Sparse { .. } => Err(Error::new(
                ErrorKind::Internal,
                "sparse rows cannot be padded",
            )),
        }
    }

    /// Whether `other` holds the same values bit for bit: NaN payloads and
    /// the sign of zero count, which `==` on floats ignores. What "exact"
    /// means for explanations ([`crate::explain::Explanation::reassemble`])
    /// and the tests that compare outputs.
    pub fn same_bits(&self, other: &Batch) -> bool {
        let shape = |b: &Batch| match b {
            Batch::Dense { rows, width, .. } => (*rows, *width, None, None),
            Batch::Ragged { offsets, .. } => (0, 0, Some(offsets.clone()), None),
            Batch::Sparse {
                width,
                indices,
                offsets,
                ..
            } => (0, *width, Some(offsets.clone()), Some(indices.clone())),
        };
        self.layout() == other.layout()
            && shape(self) == shape(other)
            && self.values().same_bits(other.values())
    }
}

#[cfg(test)]
mod tests {
    use super::{Batch, Offsets, Values};
    use crate::registry::EXTRACTORS;
    use crate::spec::FeatureSpec;

    #[test]
    fn ragged_rows_pad_to_the_longest() {
        let ragged = Batch::Ragged {
            values: Values::from(vec![1i16, 2, 3, 4, 5, 6]),
            offsets: Offsets::from_lengths([2, 0, 4]),
        };
        let rows = ragged
            .into_padded(0.0)
            .unwrap()
            .into_dense::<i16>()
            .unwrap();
        assert_eq!((rows.rows, rows.width), (3, 4));
        assert_eq!(rows.values, [1, 2, 0, 0, 0, 0, 0, 0, 3, 4, 5, 6]);
        let empty = Batch::Ragged {
            values: Values::from(Vec::<u16>::new()),
            offsets: Offsets::from_lengths([0, 0]),
        };
        let rows = empty.into_padded(7.0).unwrap().into_dense::<u16>().unwrap();
        assert_eq!((rows.rows, rows.width, rows.values.len()), (2, 0, 0));
    }

    #[test]
    fn same_bits_counts_nan_payloads_and_signed_zeros() {
        let row = |values: Vec<f32>| Batch::Dense {
            rows: 1,
            width: values.len(),
            values: values.into(),
        };
        assert!(row(vec![f32::NAN, 1.0]).same_bits(&row(vec![f32::NAN, 1.0])));
        assert!(!row(vec![0.0]).same_bits(&row(vec![-0.0])));
        assert!(!row(vec![f32::NAN]).same_bits(&row(vec![f32::from_bits(0x7fc0_0001)])));
        assert!(!row(vec![1.0]).same_bits(&Batch::Ragged {
            values: Values::from(Vec::<i64>::new()),
            offsets: Offsets::from_lengths([0])
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
                let output = extractor.output();
                assert_eq!(
                    (whole.layout(), whole.values().dtype()),
                    (output.layout, output.dtype),
                    "{text}"
                );
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
                let mut other = Batch::Dense {
                    rows: 0,
                    width: 0,
                    values: Values::from(Vec::<i32>::new()),
                };
                extractor.extract_batch_into(&docs, &mut other).unwrap();
                assert!(same(&other, &whole), "{text}: replaced");
            }
        }
    }

    /// `check` passes what the core extracts, for every registry example,
    /// and refuses rows that do not fit: another width, dtype or count,
    /// ends past the values, sparse indices out of order or past the width.
    #[test]
    fn check_accepts_extracted_rows_and_refuses_broken_ones() {
        let docs: [&[u8]; 3] = [b"MZ hello world hello", b"", b"\xff\xfe a\0b\0c\0d\0"];
        for entry in EXTRACTORS {
            for params in entry.examples {
                let text = format!(r#"{{"extractor": "{}", "params": {params}}}"#, entry.name);
                let spec = FeatureSpec::from_json(&text).unwrap();
                let batch = spec.build().unwrap().extract_batch(&docs).unwrap();
                batch.check(&spec.output(), docs.len()).expect(&text);
                assert!(
                    batch.check(&spec.output(), docs.len() + 1).is_err(),
                    "{text}"
                );
            }
        }
        let output = |layout, dtype, width| super::OutputSpec {
            layout,
            dtype,
            width,
        };
        use super::{DType, Layout};
        let dense = Batch::Dense {
            rows: 2,
            width: 2,
            values: Values::from(vec![1f32, 2.0, 3.0]),
        };
        assert!(dense
            .check(&output(Layout::Dense, DType::Float32, Some(2)), 2)
            .is_err());
        let dense = Batch::Dense {
            rows: 1,
            width: 2,
            values: Values::from(vec![1f32, 2.0]),
        };
        assert!(dense
            .check(&output(Layout::Dense, DType::Float32, Some(2)), 1)
            .is_ok());
        assert!(dense
            .check(&output(Layout::Dense, DType::Int32, Some(2)), 1)
            .is_err());
        let ragged = Batch::Ragged {
            values: Values::from(vec![1i16, 2]),
            offsets: Offsets::from_lengths([3]),
        };
        assert!(ragged
            .check(&output(Layout::Ragged, DType::Int16, None), 1)
            .is_err());
        let sparse = |indices: Vec<u64>| Batch::Sparse {
            width: 4,
            indices,
            values: Values::from(vec![1f32, 1.0]),
            offsets: Offsets::from_lengths([2]),
        };
        let spec = output(Layout::Sparse, DType::Float32, Some(4));
        assert!(sparse(vec![0, 3]).check(&spec, 1).is_ok());
        assert!(sparse(vec![3, 0]).check(&spec, 1).is_err());
        assert!(sparse(vec![1, 1]).check(&spec, 1).is_err());
        assert!(sparse(vec![0, 4]).check(&spec, 1).is_err());
        let odd = Values::from_host_bytes(DType::Int16, &[1, 0, 2]);
        assert!(odd.is_err());
        let read = Values::from_host_bytes(DType::UInt16, &[1, 0, 2, 1]).unwrap();
        assert_eq!(read, Values::from(vec![1u16, 258]));
        assert!(Values::from_host_bytes(DType::String, b"ab").is_err());
    }
}
