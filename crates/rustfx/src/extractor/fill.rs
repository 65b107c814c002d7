//! The batch interface: an [`Extractor`]'s outputs for many documents,
//! into a [`Batch`] or straight into a host's memory.

use super::{Extractor, RaggedIdsExtractor, RowExtractor};
use crate::output::{Batch, DenseRows};
use crate::{Error, ErrorKind, Result};

impl Extractor {
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
