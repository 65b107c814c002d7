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

use crate::output::{Batch, DenseRows, SparseRow};
use crate::{Error, ErrorKind, Result};

/// A validated extractor with a fixed output width. Immutable, so one
/// instance serves many threads at once.
pub trait RowExtractor: Send + Sync {
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
pub trait RaggedIdsExtractor: Send + Sync {
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
pub trait SparseRowsExtractor: Send + Sync {
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
pub trait RaggedStringsExtractor: Send + Sync {
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
/// another kind.
enum Described<'a> {
    Rows(&'a dyn RowInfo, DType),
    Other(OutputSpec),
}

impl Extractor {
    /// The one description of each kind, which [`output`](Self::output),
    /// [`work_bytes_hint`](Self::work_bytes_hint) and
    /// [`feature_names`](Self::feature_names) read.
    fn described(&self) -> Described<'_> {
        let other = |kind, dtype, width| Described::Other(OutputSpec { kind, dtype, width });
        match self {
            Extractor::Float32Rows(e) => Described::Rows(e, DType::Float32),
            Extractor::Int32Rows(e) => Described::Rows(e, DType::Int32),
            Extractor::Int64Rows(e) => Described::Rows(e, DType::Int64),
            Extractor::RaggedIds(_) => other(OutputKind::Ragged, DType::Int64, None),
            Extractor::SparseRows(e) => other(OutputKind::Sparse, DType::Float32, Some(e.width())),
            Extractor::RaggedStrings(_) => other(OutputKind::Ragged, DType::String, None),
        }
    }

    /// What this extractor outputs per document.
    pub fn output(&self) -> OutputSpec {
        match self.described() {
            Described::Rows(e, dtype) => OutputSpec {
                kind: OutputKind::Dense,
                dtype,
                width: Some(e.width()),
            },
            Described::Other(spec) => spec,
        }
    }

    /// The extractor's work hint ([`RowExtractor::work_bytes_hint`]).
    pub fn work_bytes_hint(&self) -> Option<usize> {
        match self.described() {
            Described::Rows(e, _) => e.work_bytes_hint(),
            Described::Other(_) => None,
        }
    }

    /// The name of each value of a dense row, for the extractors that name
    /// them ([`RowExtractor::feature_names`]).
    pub fn feature_names(&self) -> Option<Vec<String>> {
        match self.described() {
            Described::Rows(e, _) => e.feature_names(),
            Described::Other(_) => None,
        }
    }

    /// The outputs of `docs`: the one interface every host drives, each
    /// converting the [`Batch`] into its own form.
    pub fn extract_batch(&self, docs: &[&[u8]]) -> Result<Batch> {
        let mut batch = Batch::RaggedIds {
            ids: Vec::new(),
            row_ends: Vec::new(),
        };
        self.extract_batch_into(docs, &mut batch)?;
        Ok(batch)
    }

    /// [`extract_batch`](Self::extract_batch) into `out`, whose buffers are
    /// reused when it already has this extractor's layout (a host calling
    /// it per chunk allocates once).
    pub fn extract_batch_into(&self, docs: &[&[u8]], out: &mut Batch) -> Result<()> {
        self.fill_batch(docs, out, false)
    }

    /// The rows of `docs` appended after those `out` already holds (row
    /// ends stay cumulative), or in place of them when `out` has another
    /// layout: a host that gathers a chunk's documents one at a time (files
    /// read one by one) builds one batch.
    pub fn append_batch(&self, docs: &[&[u8]], out: &mut Batch) -> Result<()> {
        self.fill_batch(docs, out, true)
    }

    /// The one place that dispatches on the output kind: a new kind is a
    /// variant here and in [`Batch`], and one conversion per host.
    fn fill_batch(&self, docs: &[&[u8]], out: &mut Batch, append: bool) -> Result<()> {
        match self {
            Extractor::Float32Rows(e) => dense_rows(e.as_ref(), docs, out, append),
            Extractor::Int32Rows(e) => dense_rows(e.as_ref(), docs, out, append),
            Extractor::Int64Rows(e) => dense_rows(e.as_ref(), docs, out, append),
            Extractor::RaggedIds(e) => {
                if !matches!(out, Batch::RaggedIds { .. }) {
                    *out = Batch::RaggedIds {
                        ids: Vec::new(),
                        row_ends: Vec::new(),
                    };
                }
                if let Batch::RaggedIds { ids, row_ends } = out {
                    if !append {
                        ids.clear();
                        row_ends.clear();
                    }
                    e.append_id_rows(docs, ids, row_ends);
                }
                Ok(())
            }
            Extractor::SparseRows(e) => {
                if !matches!(out, Batch::SparseRows { .. }) {
                    *out = Batch::SparseRows {
                        width: 0,
                        indices: Vec::new(),
                        values: Vec::new(),
                        row_ends: Vec::new(),
                    };
                }
                if let Batch::SparseRows {
                    width,
                    indices,
                    values,
                    row_ends,
                } = out
                {
                    *width = e.width();
                    if !append {
                        indices.clear();
                        values.clear();
                        row_ends.clear();
                    }
                    e.append_sparse_rows(docs, indices, values, row_ends);
                }
                Ok(())
            }
            Extractor::RaggedStrings(e) => {
                if !matches!(out, Batch::RaggedStrings { .. }) {
                    *out = Batch::RaggedStrings {
                        bytes: Vec::new(),
                        string_ends: Vec::new(),
                        row_ends: Vec::new(),
                    };
                }
                if let Batch::RaggedStrings {
                    bytes,
                    string_ends,
                    row_ends,
                } = out
                {
                    if !append {
                        bytes.clear();
                        string_ends.clear();
                        row_ends.clear();
                    }
                    e.append_string_rows(docs, bytes, string_ends, row_ends);
                }
                Ok(())
            }
        }
    }

    /// The dense rows of `docs` written straight into a host's memory
    /// (`out` holds exactly `docs.len()` rows of `T`): the kernels' output
    /// tensors, with no copy. An `Internal` error when the extractor's rows
    /// are not of `T`.
    pub fn write_dense_rows<T: DenseValue>(&self, docs: &[&[u8]], out: &mut [T]) -> Result<()> {
        T::rows_of(self)
            .ok_or_else(|| self.wrong_layout("dense rows of another dtype"))?
            .write_rows(docs, out)
    }

    /// The ragged-ids extractor, for a host that writes ids straight into
    /// its own memory when they can be counted first
    /// ([`RaggedIdsExtractor::counts_ids_up_front`]); `None` for other kinds.
    pub fn ragged_ids(&self) -> Option<&dyn RaggedIdsExtractor> {
        if let Extractor::RaggedIds(e) = self {
            Some(e.as_ref())
        } else {
            None
        }
    }

    fn wrong_layout(&self, asked: &str) -> Error {
        Error::new(
            ErrorKind::Internal,
            format!(
                "{asked} asked of an extractor of output {:?} (a bug in rustfx)",
                self.output()
            ),
        )
    }
}

/// An element type of dense rows, which picks the extractor's rows of that
/// type: what lets a host write rows of `T` into its own memory.
pub trait DenseValue: Copy + Default + Send + 'static {
    /// The rows of `extractor` when their values are of this type.
    fn rows_of(extractor: &Extractor) -> Option<&dyn RowExtractor<Value = Self>>;
    /// The rows of `batch` when their values are of this type.
    fn dense_of_mut(batch: &mut Batch) -> Option<&mut DenseRows<Self>>;
    /// The batch of rows of this type.
    fn into_batch(rows: DenseRows<Self>) -> Batch;
}

impl DenseValue for f32 {
    fn rows_of(extractor: &Extractor) -> Option<&dyn RowExtractor<Value = f32>> {
        if let Extractor::Float32Rows(e) = extractor {
            Some(e.as_ref())
        } else {
            None
        }
    }
    fn dense_of_mut(batch: &mut Batch) -> Option<&mut DenseRows<f32>> {
        if let Batch::Float32Rows(rows) = batch {
            Some(rows)
        } else {
            None
        }
    }
    fn into_batch(rows: DenseRows<f32>) -> Batch {
        Batch::Float32Rows(rows)
    }
}

impl DenseValue for i32 {
    fn rows_of(extractor: &Extractor) -> Option<&dyn RowExtractor<Value = i32>> {
        if let Extractor::Int32Rows(e) = extractor {
            Some(e.as_ref())
        } else {
            None
        }
    }
    fn dense_of_mut(batch: &mut Batch) -> Option<&mut DenseRows<i32>> {
        if let Batch::Int32Rows(rows) = batch {
            Some(rows)
        } else {
            None
        }
    }
    fn into_batch(rows: DenseRows<i32>) -> Batch {
        Batch::Int32Rows(rows)
    }
}

impl DenseValue for i64 {
    fn rows_of(extractor: &Extractor) -> Option<&dyn RowExtractor<Value = i64>> {
        if let Extractor::Int64Rows(e) = extractor {
            Some(e.as_ref())
        } else {
            None
        }
    }
    fn dense_of_mut(batch: &mut Batch) -> Option<&mut DenseRows<i64>> {
        if let Batch::Int64Rows(rows) = batch {
            Some(rows)
        } else {
            None
        }
    }
    fn into_batch(rows: DenseRows<i64>) -> Batch {
        Batch::Int64Rows(rows)
    }
}

/// The dense rows of `docs` into `out`, made rows of `T` first unless it
/// holds them (their buffer reused).
fn dense_rows<T: DenseValue>(
    e: &dyn RowExtractor<Value = T>,
    docs: &[&[u8]],
    out: &mut Batch,
    append: bool,
) -> Result<()> {
    if T::dense_of_mut(out).is_none() {
        *out = T::into_batch(DenseRows::default());
    }
    let rows = T::dense_of_mut(out).ok_or_else(|| {
        Error::new(
            ErrorKind::Internal,
            "a batch of dense rows (a bug in rustfx)",
        )
    })?;
    let width = e.width();
    let kept = if append && rows.width == width {
        rows.rows
    } else {
        0
    };
    let start = kept * width;
    let len = start + docs.len().saturating_mul(width);
    // Every value is written (as into a kernel's uninitialized tensor), so
    // a buffer of the right size is reused as it is, not cleared first.
    if rows.values.len() != len {
        rows.values.truncate(start);
        rows.values.resize(len, T::default());
    }
    rows.rows = kept + docs.len();
    rows.width = width;
    e.write_rows(docs, &mut rows.values[start..])
}
