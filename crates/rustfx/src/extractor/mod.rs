//! The one abstraction every fixed-width extractor implements.
//!
//! A fixed-width extractor turns each document into one row of exactly
//! [`RowExtractor::width`] values. The TensorFlow bridge, the C++ row kernel,
//! `rustfx-features` and the benches all drive extractors through this trait,
//! so a new one is a new implementation, not a new arm in a shared switch.
//! Parameters are checked when the extractor is built (its `new`), so a
//! built extractor cannot fail on any input: `write_row` only fails when the
//! caller's row has the wrong length.
//!
//! ```
//! use rustfx::byte_features::{ByteHistogram, EmptyInput};
//! use rustfx::extractor::RowExtractor;
//! let histogram = ByteHistogram::new(EmptyInput::Zeros);
//! let row = histogram.row(b"aab");
//! assert_eq!(row.len(), histogram.width());
//! assert_eq!(row[usize::from(b'a')], 2.0 / 3.0);
//! ```

use crate::explain::Explain;
use crate::output::SparseRow;

mod fill;
use crate::{Error, ErrorKind, Result};
pub use fill::DenseValue;

/// A validated extractor with a fixed output width. Immutable, so one
/// instance serves many threads at once.
pub trait RowExtractor: Send + Sync + Explain {
    /// The value type of a row: `f32` features, `i32` or `i64` ids.
    type Value: Copy + Default + Send;

    /// Values per row, fixed when the extractor was built.
    fn width(&self) -> usize;

    /// Writes the row of `doc` into `out`, which must hold exactly
    /// [`width`](Self::width) values (otherwise an `Internal` error, with
    /// `out` untouched).
    fn write_row(&self, doc: &[u8], out: &mut [Self::Value]) -> Result<()>;

    /// At most how many bytes of a document computing its row costs, when
    /// the extractor stops early (a sequence of `max_tokens` ids, the first
    /// `max_len` bytes); `None`: the whole document. Only a hint: kernels
    /// split a batch between threads by each document's cost, and without
    /// the cap one long document would count as far more work than it is.
    fn work_bytes_hint(&self) -> Option<usize> {
        None
    }

    /// The name of each value of a row, for extractors whose values have
    /// names (EMBER2024's groups); `None` otherwise.
    fn feature_names(&self) -> Option<Vec<String>> {
        None
    }

    /// Writes the rows of `docs` end to end into `out`, which must hold
    /// exactly `docs.len()` rows (otherwise an `Internal` error). One call
    /// per batch of documents: on short records (a URL, a command line)
    /// the cost of a call per document is as large as the work.
    fn write_rows(&self, docs: &[&[u8]], out: &mut [Self::Value]) -> Result<()> {
        let width = self.width();
        check_width(out.len(), docs.len().saturating_mul(width))?;
        if width == 0 {
            return Ok(());
        }
        for (doc, row) in docs.iter().zip(out.chunks_exact_mut(width)) {
            self.write_row(doc, row)?;
        }
        Ok(())
    }

    /// The row of `doc` in a new vector.
    fn row(&self, doc: &[u8]) -> Vec<Self::Value> {
        let mut out = vec![Self::Value::default(); self.width()];
        // Cannot fail: `out` has exactly `width()` values.
        let _ = self.write_row(doc, &mut out);
        out
    }
}

/// `out` as a fixed-size array of `N` values, or the `Internal` error that
/// [`RowExtractor::write_row`] reports for a row of the wrong length.
pub fn fixed_row<T, const N: usize>(out: &mut [T]) -> Result<&mut [T; N]> {
    let got = out.len();
    out.try_into().map_err(|_| wrong_width(got, N))
}

/// Checks that a row of `got` values fits an extractor of `width`.
pub fn check_width(got: usize, width: usize) -> Result<()> {
    if got == width {
        Ok(())
    } else {
        Err(wrong_width(got, width))
    }
}

fn wrong_width(got: usize, width: usize) -> Error {
    Error::new(
        ErrorKind::Internal,
        format!("output row has {got} values, expected {width}"),
    )
}

/// An extractor whose rows have any number of int64 ids (the ragged
/// output: hashed n-gram ids).
pub trait RaggedIdsExtractor: Send + Sync + Explain {
    /// Appends the ids of `doc` to `ids`.
    fn append_ids(&self, doc: &[u8], ids: &mut Vec<i64>);

    /// Appends the ids of each of `docs` to `ids`, pushing `ids.len()` to
    /// `row_ends` after each document: a batch of rows in one call.
    fn append_id_rows(&self, docs: &[&[u8]], ids: &mut Vec<i64>, row_ends: &mut Vec<u64>) {
        row_ends.reserve(docs.len());
        for doc in docs {
            self.append_ids(doc, ids);
            row_ends.push(ids.len() as u64);
        }
    }

    /// Whether [`id_count`](Self::id_count) can tell, for some documents.
    fn counts_ids_up_front(&self) -> bool {
        false
    }

    /// How many ids `doc` has, when that is known without extracting them
    /// (byte and character n-grams: every window): a kernel can then
    /// size its output first and have the ids written straight into it
    /// ([`write_id_rows`](Self::write_id_rows)), with no copy.
    fn id_count(&self, _doc: &[u8]) -> Option<usize> {
        None
    }

    /// At most how many ids `doc` has, from its length alone, when that
    /// is known (byte and character n-grams: a window per byte at most).
    /// Where `id_count` would decode a document (a binary's characters),
    /// a kernel sizes its output by this instead of growing it.
    fn id_bound(&self, _doc: &[u8]) -> Option<usize> {
        None
    }

    /// The ids of `docs`, end to end, into `out`, which holds exactly as
    /// many (an `Internal` error otherwise: a caller's bug).
    fn write_id_rows(&self, docs: &[&[u8]], out: &mut [i64]) -> Result<()> {
        write_id_rows_by_copy(self, docs, out)
    }
}

/// [`RaggedIdsExtractor::write_id_rows`] of any extractor: its
/// `append_id_rows`, copied into `out`.
pub fn write_id_rows_by_copy<E: RaggedIdsExtractor + ?Sized>(
    extractor: &E,
    docs: &[&[u8]],
    out: &mut [i64],
) -> Result<()> {
    let (mut ids, mut row_ends) = (Vec::new(), Vec::new());
    extractor.append_id_rows(docs, &mut ids, &mut row_ends);
    if out.len() != ids.len() {
        return Err(id_count_mismatch(out.len(), ids.len()));
    }
    out.copy_from_slice(&ids);
    Ok(())
}

/// The error of [`RaggedIdsExtractor::write_id_rows`] given room for
/// `room` ids where the documents have `ids`.
pub fn id_count_mismatch(room: usize, ids: usize) -> Error {
    Error::new(
        ErrorKind::Internal,
        format!("room for {room} ids, the documents have {ids} (a bug in rustfx)"),
    )
}

/// An extractor whose rows are sparse float32 vectors of a fixed width
/// (bags of hashed n-grams).
pub trait SparseRowsExtractor: Send + Sync + Explain {
    /// The dense width of a row.
    fn width(&self) -> usize;
    /// Replaces `row` with the sparse row of `doc` (indices sorted).
    fn write_sparse_row(&self, doc: &[u8], row: &mut SparseRow);

    /// Appends the sparse row of each of `docs` to `indices` and `values`,
    /// pushing `indices.len()` to `row_ends` after each document: a batch
    /// of rows in one call.
    fn append_sparse_rows(
        &self,
        docs: &[&[u8]],
        indices: &mut Vec<u64>,
        values: &mut Vec<f32>,
        row_ends: &mut Vec<u64>,
    ) {
        let mut row = SparseRow::default();
        row_ends.reserve(docs.len());
        for doc in docs {
            self.write_sparse_row(doc, &mut row);
            indices.extend_from_slice(&row.indices);
            values.extend_from_slice(&row.values);
            row_ends.push(indices.len() as u64);
        }
    }
}

/// An extractor whose rows have any number of byte strings (the ragged
/// string output: the printable strings of a binary).
pub trait RaggedStringsExtractor: Send + Sync + Explain {
    /// Appends each string of `doc` to `bytes` and, after each one, pushes
    /// `bytes.len()` to `ends`.
    fn append_strings(&self, doc: &[u8], bytes: &mut Vec<u8>, ends: &mut Vec<u64>);

    /// [`append_strings`](Self::append_strings) for each of `docs`, pushing
    /// `ends.len()` (strings so far) to `row_ends` after each document.
    fn append_string_rows(
        &self,
        docs: &[&[u8]],
        bytes: &mut Vec<u8>,
        ends: &mut Vec<u64>,
        row_ends: &mut Vec<u64>,
    ) {
        row_ends.reserve(docs.len());
        for doc in docs {
            self.append_strings(doc, bytes, ends);
            row_ends.push(ends.len() as u64);
        }
    }
}

/// A built extractor of any output kind: what a [`FeatureSpec`] builds
/// (`crate::spec::FeatureSpec::build`) and every host (the ops,
/// `rustfx-features`, the benches) drives. One variant per output kind, so
/// a new extractor of an existing kind is a registry entry, not a new arm.
///
/// [`FeatureSpec`]: crate::spec::FeatureSpec
pub enum Extractor {
    /// Fixed-width float32 rows.
    Float32Rows(Box<dyn RowExtractor<Value = f32>>),
    /// Fixed-width int32 rows.
    Int32Rows(Box<dyn RowExtractor<Value = i32>>),
    /// Fixed-width int64 rows.
    Int64Rows(Box<dyn RowExtractor<Value = i64>>),
    /// Ragged int64 ids.
    RaggedIds(Box<dyn RaggedIdsExtractor>),
    /// Sparse float32 rows of a fixed dense width.
    SparseRows(Box<dyn SparseRowsExtractor>),
    /// Ragged byte strings.
    RaggedStrings(Box<dyn RaggedStringsExtractor>),
}

impl std::fmt::Debug for Extractor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Extractor({:?})", self.output())
    }
}

/// The element type of an output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    /// float32.
    Float32,
    /// int32.
    Int32,
    /// int64.
    Int64,
    /// Byte strings (`tf.string`).
    String,
}

crate::names::named_values!(DType, "dtype", {
    Float32 => "float32",
    Int32 => "int32",
    Int64 => "int64",
    String => "string",
});

/// How each document's values are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// A row of exactly `width` values.
    Dense,
    /// Any number of values.
    Ragged,
    /// A sparse row of dense width `width`.
    Sparse,
}

crate::names::named_values!(OutputKind, "output kind", {
    Dense => "dense",
    Ragged => "ragged",
    Sparse => "sparse",
});

/// What an extractor outputs per document: kind, dtype and, for dense and
/// sparse rows, the width. Part of every [`FeatureSpec`](crate::spec::FeatureSpec).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputSpec {
    /// Dense, ragged or sparse.
    pub kind: OutputKind,
    /// The element type.
    pub dtype: DType,
    /// Values per row (dense), the dense width (sparse), `None` (ragged).
    pub width: Option<usize>,
}

/// What any dense-row extractor says about itself, whatever its value type.
trait RowInfo {
    fn width(&self) -> usize;
    fn work_bytes_hint(&self) -> Option<usize>;
    fn feature_names(&self) -> Option<Vec<String>>;
}

impl<T: Copy + Default + Send> RowInfo for Box<dyn RowExtractor<Value = T>> {
    fn width(&self) -> usize {
        self.as_ref().width()
    }
    fn work_bytes_hint(&self) -> Option<usize> {
        self.as_ref().work_bytes_hint()
    }
    fn feature_names(&self) -> Option<Vec<String>> {
        self.as_ref().feature_names()
    }
}

/// An extractor described: its dense rows and their dtype, or the output of
/// another kind, and its explainer.
struct Described<'a> {
    layout: Layout<'a>,
    explainer: &'a dyn Explain,
}

enum Layout<'a> {
    Rows(&'a dyn RowInfo, DType),
    Other(OutputSpec),
}

impl Extractor {
    /// The one description of each kind, which [`output`](Self::output),
    /// [`work_bytes_hint`](Self::work_bytes_hint),
    /// [`feature_names`](Self::feature_names) and
    /// [`explain`](Self::explain) read.
    fn described(&self) -> Described<'_> {
        let other = |kind, dtype, width| Layout::Other(OutputSpec { kind, dtype, width });
        let (layout, explainer): (Layout<'_>, &dyn Explain) = match self {
            Extractor::Float32Rows(e) => (Layout::Rows(e, DType::Float32), e.as_ref()),
            Extractor::Int32Rows(e) => (Layout::Rows(e, DType::Int32), e.as_ref()),
            Extractor::Int64Rows(e) => (Layout::Rows(e, DType::Int64), e.as_ref()),
            Extractor::RaggedIds(e) => (other(OutputKind::Ragged, DType::Int64, None), e.as_ref()),
            Extractor::SparseRows(e) => (
                other(OutputKind::Sparse, DType::Float32, Some(e.width())),
                e.as_ref(),
            ),
            Extractor::RaggedStrings(e) => {
                (other(OutputKind::Ragged, DType::String, None), e.as_ref())
            }
        };
        Described { layout, explainer }
    }

    /// The explainer of this extractor's kind.
    pub(crate) fn explainer(&self) -> &dyn Explain {
        self.described().explainer
    }

    /// What this extractor outputs per document.
    pub fn output(&self) -> OutputSpec {
        match self.described().layout {
            Layout::Rows(e, dtype) => OutputSpec {
                kind: OutputKind::Dense,
                dtype,
                width: Some(e.width()),
            },
            Layout::Other(spec) => spec,
        }
    }

    /// The extractor's work hint ([`RowExtractor::work_bytes_hint`]).
    pub fn work_bytes_hint(&self) -> Option<usize> {
        match self.described().layout {
            Layout::Rows(e, _) => e.work_bytes_hint(),
            Layout::Other(_) => None,
        }
    }

    /// The name of each value of a dense row, for the extractors that name
    /// them ([`RowExtractor::feature_names`]).
    pub fn feature_names(&self) -> Option<Vec<String>> {
        match self.described().layout {
            Layout::Rows(e, _) => e.feature_names(),
            Layout::Other(_) => None,
        }
    }
}
