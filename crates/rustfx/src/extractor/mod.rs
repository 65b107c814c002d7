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
use crate::output::{
    wrong_dtype, DType, Element, Layout, Offsets, OutputSpec, SparseRow, Strings, Values, ValuesMut,
};

mod fill;
use crate::{Error, ErrorKind, Result};

/// A validated extractor with a fixed output width. Immutable, so one
/// instance serves many threads at once.
pub trait RowExtractor: Send + Sync + Explain {
    /// The value type of a row: `f32` features, `i32` or `i64` ids, the
    /// narrower integers of byte sequences.
    type Value: Element;

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

/// An extractor whose rows have any number of values of one element type
/// (the ragged layout: hashed n-gram ids, a file's bytes for MalConv2).
pub trait RaggedExtractor: Send + Sync + Explain {
    /// The value type: `i64` ids, `i16`/`u16`/`i32`/`u8` bytes.
    type Value: Element;

    /// Appends the values of `doc` to `values`.
    fn append_values(&self, doc: &[u8], values: &mut Vec<Self::Value>);

    /// Appends the values of each of `docs` to `values`, pushing
    /// `values.len()` to `offsets` after each document: a batch of rows in
    /// one call.
    fn append_rows(&self, docs: &[&[u8]], values: &mut Vec<Self::Value>, offsets: &mut Offsets) {
        offsets.reserve(docs.len());
        for doc in docs {
            self.append_values(doc, values);
            offsets.push(values.len());
        }
    }

    /// Whether [`value_count`](Self::value_count) can tell, for some
    /// documents.
    fn counts_up_front(&self) -> bool {
        false
    }

    /// How many values `doc` has, when that is known without extracting
    /// them (byte and character n-grams: every window; byte sequences: the
    /// kept bytes): a kernel can then size its output first and have the
    /// values written straight into it ([`write_values`](Self::write_values)),
    /// with no copy.
    fn value_count(&self, _doc: &[u8]) -> Option<usize> {
        None
    }

    /// At most how many values `doc` has, from its length alone, when that
    /// is known (byte and character n-grams: a window per byte at most).
    /// Where `value_count` would decode a document (a binary's characters),
    /// a kernel sizes its output by this instead of growing it.
    fn value_bound(&self, _doc: &[u8]) -> Option<usize> {
        None
    }

    /// At most how many bytes of a document its values cost
    /// ([`RowExtractor::work_bytes_hint`]).
    fn work_bytes_hint(&self) -> Option<usize> {
        None
    }

    /// The values of `docs`, end to end, into `out`, which holds exactly as
    /// many (an `Internal` error otherwise: a caller's bug).
    fn write_values(&self, docs: &[&[u8]], out: &mut [Self::Value]) -> Result<()> {
        write_values_by_copy(self, docs, out)
    }
}

/// [`RaggedExtractor::write_values`] of any extractor: its `append_rows`,
/// copied into `out`.
pub fn write_values_by_copy<E: RaggedExtractor + ?Sized>(
    extractor: &E,
    docs: &[&[u8]],
    out: &mut [E::Value],
) -> Result<()> {
    let (mut values, mut offsets) = (Vec::new(), Offsets::new());
    extractor.append_rows(docs, &mut values, &mut offsets);
    if out.len() != values.len() {
        return Err(value_count_mismatch(out.len(), values.len()));
    }
    out.copy_from_slice(&values);
    Ok(())
}

/// The error of [`RaggedExtractor::write_values`] given room for `room`
/// values where the documents have `values`.
pub fn value_count_mismatch(room: usize, values: usize) -> Error {
    Error::new(
        ErrorKind::Internal,
        format!("room for {room} values, the documents have {values} (a bug in rustfx)"),
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
    /// pushing `indices.len()` to `offsets` after each document: a batch
    /// of rows in one call.
    fn append_sparse_rows(
        &self,
        docs: &[&[u8]],
        indices: &mut Vec<u64>,
        values: &mut Vec<f32>,
        offsets: &mut Offsets,
    ) {
        let mut row = SparseRow::default();
        offsets.reserve(docs.len());
        for doc in docs {
            self.write_sparse_row(doc, &mut row);
            indices.extend_from_slice(&row.indices);
            values.extend_from_slice(&row.values);
            offsets.push(indices.len());
        }
    }
}

/// An extractor whose rows have any number of byte strings (the ragged
/// string output: the printable strings of a binary).
pub trait RaggedStringsExtractor: Send + Sync + Explain {
    /// Appends each string of `doc` to `strings`.
    fn append_strings(&self, doc: &[u8], strings: &mut Strings);

    /// [`append_strings`](Self::append_strings) for each of `docs`, pushing
    /// the count of strings so far to `offsets` after each document.
    fn append_string_rows(&self, docs: &[&[u8]], strings: &mut Strings, offsets: &mut Offsets) {
        offsets.reserve(docs.len());
        for doc in docs {
            self.append_strings(doc, strings);
            offsets.push(strings.offsets.rows());
        }
    }
}

/// A built extractor: what a [`FeatureSpec`] builds
/// (`crate::spec::FeatureSpec::build`) and every host (the ops, the C ABI,
/// the programs, the benches) drives. One variant per layout; the dtype is
/// a field of each ([`DenseOutput::dtype`], [`RaggedOutput::dtype`]), so a
/// new extractor is a registry entry, and a new dtype is a line in
/// [`crate::numeric_dtypes!`].
///
/// [`FeatureSpec`]: crate::spec::FeatureSpec
pub enum Extractor {
    /// Fixed-width rows of any numeric dtype.
    Dense(Box<dyn DenseOutput>),
    /// Any number of values per document, of any dtype (strings included).
    Ragged(Box<dyn RaggedOutput>),
    /// Sparse float32 rows of a fixed dense width.
    Sparse(Box<dyn SparseRowsExtractor>),
}

impl std::fmt::Debug for Extractor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Extractor({:?})", self.output())
    }
}

impl Extractor {
    /// The dense extractor `e`, whatever its value type.
    pub fn dense<E: RowExtractor + 'static>(e: E) -> Extractor {
        Extractor::Dense(Box::new(e))
    }

    /// The ragged extractor `e`, whatever its value type.
    pub fn ragged<E: RaggedExtractor + 'static>(e: E) -> Extractor {
        Extractor::Ragged(Box::new(e))
    }

    /// The extractor of ragged byte strings `e`.
    pub fn ragged_strings<E: RaggedStringsExtractor + 'static>(e: E) -> Extractor {
        Extractor::Ragged(Box::new(StringRows(e)))
    }

    /// The explainer of this extractor.
    pub(crate) fn explainer(&self) -> &dyn Explain {
        match self {
            Extractor::Dense(e) => e.explainer(),
            Extractor::Ragged(e) => e.explainer(),
            Extractor::Sparse(e) => e.as_ref(),
        }
    }

    /// What this extractor outputs per document.
    pub fn output(&self) -> OutputSpec {
        let (layout, dtype, width) = match self {
            Extractor::Dense(e) => (Layout::Dense, e.dtype(), Some(e.width())),
            Extractor::Ragged(e) => (Layout::Ragged, e.dtype(), None),
            Extractor::Sparse(e) => (Layout::Sparse, DType::Float32, Some(e.width())),
        };
        OutputSpec {
            layout,
            dtype,
            width,
        }
    }

    /// The extractor's work hint ([`RowExtractor::work_bytes_hint`]).
    pub fn work_bytes_hint(&self) -> Option<usize> {
        match self {
            Extractor::Dense(e) => e.work_bytes_hint(),
            Extractor::Ragged(e) => e.work_bytes_hint(),
            Extractor::Sparse(_) => None,
        }
    }

    /// The name of each value of a dense row, for the extractors that name
    /// them ([`RowExtractor::feature_names`]).
    pub fn feature_names(&self) -> Option<Vec<String>> {
        match self {
            Extractor::Dense(e) => e.feature_names(),
            _ => None,
        }
    }
}

/// A dense-row extractor of any dtype, as [`Extractor::Dense`] holds it:
/// every [`RowExtractor`] is one.
pub trait DenseOutput: Send + Sync {
    /// The rows' dtype.
    fn dtype(&self) -> DType;
    /// Values per row.
    fn width(&self) -> usize;
    /// [`RowExtractor::work_bytes_hint`].
    fn work_bytes_hint(&self) -> Option<usize>;
    /// [`RowExtractor::feature_names`].
    fn feature_names(&self) -> Option<Vec<String>>;
    /// [`RowExtractor::write_rows`] into values of the rows' dtype (an
    /// `Internal` error for another dtype).
    fn write_rows(&self, docs: &[&[u8]], out: ValuesMut<'_>) -> Result<()>;
    /// The extractor's explainer.
    fn explainer(&self) -> &dyn Explain;
}

impl<E: RowExtractor> DenseOutput for E {
    fn dtype(&self) -> DType {
        E::Value::DTYPE
    }
    fn width(&self) -> usize {
        RowExtractor::width(self)
    }
    fn work_bytes_hint(&self) -> Option<usize> {
        RowExtractor::work_bytes_hint(self)
    }
    fn feature_names(&self) -> Option<Vec<String>> {
        RowExtractor::feature_names(self)
    }
    fn write_rows(&self, docs: &[&[u8]], out: ValuesMut<'_>) -> Result<()> {
        let got = out.dtype();
        let out = E::Value::slice_of(out).ok_or_else(|| wrong_dtype(E::Value::DTYPE, got))?;
        RowExtractor::write_rows(self, docs, out)
    }
    fn explainer(&self) -> &dyn Explain {
        self
    }
}

/// A ragged extractor of any dtype, as [`Extractor::Ragged`] holds it:
/// every [`RaggedExtractor`] is one, and every [`RaggedStringsExtractor`]
/// through [`StringRows`].
pub trait RaggedOutput: Send + Sync {
    /// The values' dtype.
    fn dtype(&self) -> DType;
    /// Appends each of `docs`' values to `values` (of the dtype; an
    /// `Internal` error otherwise), pushing the count so far to `offsets`
    /// after each document.
    fn append_rows(&self, docs: &[&[u8]], values: &mut Values, offsets: &mut Offsets)
        -> Result<()>;
    /// [`RaggedExtractor::counts_up_front`].
    fn counts_up_front(&self) -> bool {
        false
    }
    /// [`RaggedExtractor::value_count`].
    fn value_count(&self, _doc: &[u8]) -> Option<usize> {
        None
    }
    /// [`RaggedExtractor::value_bound`].
    fn value_bound(&self, _doc: &[u8]) -> Option<usize> {
        None
    }
    /// [`RaggedExtractor::work_bytes_hint`].
    fn work_bytes_hint(&self) -> Option<usize> {
        None
    }
    /// [`RaggedExtractor::write_values`] into values of the dtype.
    fn write_values(&self, docs: &[&[u8]], out: ValuesMut<'_>) -> Result<()>;
    /// The extractor's explainer.
    fn explainer(&self) -> &dyn Explain;
}

impl<E: RaggedExtractor> RaggedOutput for E {
    fn dtype(&self) -> DType {
        E::Value::DTYPE
    }
    fn append_rows(
        &self,
        docs: &[&[u8]],
        values: &mut Values,
        offsets: &mut Offsets,
    ) -> Result<()> {
        let got = values.dtype();
        let values = E::Value::of_mut(values).ok_or_else(|| wrong_dtype(E::Value::DTYPE, got))?;
        RaggedExtractor::append_rows(self, docs, values, offsets);
        Ok(())
    }
    fn counts_up_front(&self) -> bool {
        RaggedExtractor::counts_up_front(self)
    }
    fn value_count(&self, doc: &[u8]) -> Option<usize> {
        RaggedExtractor::value_count(self, doc)
    }
    fn value_bound(&self, doc: &[u8]) -> Option<usize> {
        RaggedExtractor::value_bound(self, doc)
    }
    fn work_bytes_hint(&self) -> Option<usize> {
        RaggedExtractor::work_bytes_hint(self)
    }
    fn write_values(&self, docs: &[&[u8]], out: ValuesMut<'_>) -> Result<()> {
        let got = out.dtype();
        let out = E::Value::slice_of(out).ok_or_else(|| wrong_dtype(E::Value::DTYPE, got))?;
        RaggedExtractor::write_values(self, docs, out)
    }
    fn explainer(&self) -> &dyn Explain {
        self
    }
}

/// A [`RaggedStringsExtractor`] as a [`RaggedOutput`] of dtype string.
pub struct StringRows<E>(pub E);

impl<E: RaggedStringsExtractor> RaggedOutput for StringRows<E> {
    fn dtype(&self) -> DType {
        DType::String
    }
    fn append_rows(
        &self,
        docs: &[&[u8]],
        values: &mut Values,
        offsets: &mut Offsets,
    ) -> Result<()> {
        let Values::String(strings) = values else {
            return Err(wrong_dtype(DType::String, values.dtype()));
        };
        self.0.append_string_rows(docs, strings, offsets);
        Ok(())
    }
    fn write_values(&self, _docs: &[&[u8]], out: ValuesMut<'_>) -> Result<()> {
        Err(wrong_dtype(DType::String, out.dtype()))
    }
    fn explainer(&self) -> &dyn Explain {
        &self.0
    }
}
