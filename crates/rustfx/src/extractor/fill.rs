//! The batch interface: an [`Extractor`]'s outputs for many documents,
//! into a [`Batch`] or straight into a host's memory.

use super::{Extractor, RaggedOutput};
use crate::output::{Batch, DType, Element, Layout, Offsets, Values, ValuesMut};
use crate::{Error, ErrorKind, Result};

impl Extractor {
    /// The outputs of `docs`: the one interface every host drives, each
    /// converting the [`Batch`] into its own form.
    pub fn extract_batch(&self, docs: &[&[u8]]) -> Result<Batch> {
        let mut batch = Batch::default();
        self.extract_batch_into(docs, &mut batch)?;
        Ok(batch)
    }

    /// [`extract_batch`](Self::extract_batch) into `out`, whose buffers are
    /// reused when it already has this extractor's layout and dtype (a host
    /// calling it per chunk allocates once).
    pub fn extract_batch_into(&self, docs: &[&[u8]], out: &mut Batch) -> Result<()> {
        self.fill_batch(docs, out, false)
    }

    /// The rows of `docs` appended after those `out` already holds (row
    /// ends stay cumulative), or in place of them when `out` has another
    /// layout or dtype: a host that gathers a chunk's documents one at a
    /// time (files read one by one) builds one batch.
    pub fn append_batch(&self, docs: &[&[u8]], out: &mut Batch) -> Result<()> {
        self.fill_batch(docs, out, true)
    }

    /// The one place that dispatches on the layout: a new layout is a
    /// variant here and in [`Batch`], and one conversion per host. The dtype
    /// is the values' own ([`Values`]).
    fn fill_batch(&self, docs: &[&[u8]], out: &mut Batch, append: bool) -> Result<()> {
        let output = self.output();
        if out.layout() != output.layout || out.values().dtype() != output.dtype {
            *out = empty_batch(output.layout, output.dtype);
        }
        match (self, out) {
            (
                Extractor::Dense(e),
                Batch::Dense {
                    rows,
                    width,
                    values,
                },
            ) => {
                let new_width = e.width();
                let kept = if append && *width == new_width {
                    *rows
                } else {
                    0
                };
                let start = kept * new_width;
                // Every value is written (as into a kernel's uninitialized
                // tensor), so a buffer of the right size is reused as it
                // is, not cleared first.
                let len = start + docs.len().saturating_mul(new_width);
                if values.len() != len {
                    values.resize(start);
                    values.resize(len);
                }
                (*rows, *width) = (kept + docs.len(), new_width);
                let tail = values
                    .tail_mut(start)
                    .ok_or_else(|| bug("dense numeric rows"))?;
                e.write_rows(docs, tail)
            }
            (Extractor::Ragged(e), Batch::Ragged { values, offsets }) => {
                if !append {
                    values.clear();
                    offsets.clear();
                }
                if let Some(counts) = counted(e.as_ref(), docs) {
                    return write_counted_rows(e.as_ref(), docs, &counts, values, offsets);
                }
                e.append_rows(docs, values, offsets)
            }
            (
                Extractor::Sparse(e),
                Batch::Sparse {
                    width,
                    indices,
                    values,
                    offsets,
                },
            ) => {
                *width = e.width();
                let values = f32::of_mut(values).ok_or_else(|| bug("sparse float32 values"))?;
                if !append {
                    indices.clear();
                    values.clear();
                    offsets.clear();
                }
                e.append_sparse_rows(docs, indices, values, offsets);
                Ok(())
            }
            _ => Err(bug("a batch of the extractor's layout")),
        }
    }

    /// The dense rows of `docs` written straight into a host's memory
    /// (`out` holds exactly `docs.len()` rows of the extractor's dtype):
    /// the kernels' output tensors, with no copy. An `Internal` error when
    /// the extractor's rows are not dense or not of `out`'s dtype.
    pub fn write_dense_rows(&self, docs: &[&[u8]], out: ValuesMut<'_>) -> Result<()> {
        match self {
            Extractor::Dense(e) => e.write_rows(docs, out),
            _ => Err(self.wrong_layout("dense rows")),
        }
    }

    /// The ragged extractor, for a host that writes values straight into
    /// its own memory when they can be counted first
    /// ([`RaggedOutput::counts_up_front`]); `None` for other layouts.
    pub fn as_ragged(&self) -> Option<&dyn RaggedOutput> {
        if let Extractor::Ragged(e) = self {
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

/// How many values each of `docs` has, when the extractor can tell
/// without extracting them (byte and character n-grams, byte sequences).
fn counted(e: &dyn RaggedOutput, docs: &[&[u8]]) -> Option<Vec<usize>> {
    if !e.counts_up_front() {
        return None;
    }
    docs.iter().map(|doc| e.value_count(doc)).collect()
}

/// Ragged rows whose counts are known: the offsets first, then the values
/// written straight into room of the right size (as the kernels write
/// into their output tensor), instead of a buffer grown by doubling, which
/// copied and faulted in the values about twice over on long batches.
fn write_counted_rows(
    e: &dyn RaggedOutput,
    docs: &[&[u8]],
    counts: &[usize],
    values: &mut Values,
    offsets: &mut Offsets,
) -> Result<()> {
    let start = values.len();
    offsets.reserve(docs.len());
    let mut end = start;
    for count in counts {
        end += count;
        offsets.push(end);
    }
    values.resize(end);
    let tail = values
        .tail_mut(start)
        .ok_or_else(|| bug("ragged numeric rows"))?;
    e.write_values(docs, tail)
}

/// An empty batch of `layout` and `dtype`.
pub fn empty_batch(layout: Layout, dtype: DType) -> Batch {
    let values = Values::empty(dtype);
    match layout {
        Layout::Dense => Batch::Dense {
            rows: 0,
            width: 0,
            values,
        },
        Layout::Ragged => Batch::Ragged {
            values,
            offsets: Offsets::new(),
        },
        Layout::Sparse => Batch::Sparse {
            width: 0,
            indices: Vec::new(),
            values,
            offsets: Offsets::new(),
        },
    }
}

fn bug(what: &str) -> Error {
    Error::new(ErrorKind::Internal, format!("{what} (a bug in rustfx)"))
}
