//! A [`ByteSequence`] written in a dtype and a layout: what the
//! `byte_sequence` extractor runs. Dense rows are padded to `max_len`;
//! ragged rows hold the kept bytes only, so a batch is padded to its
//! longest file (MalConv2), at `size_of::<T>()` bytes per byte.

use super::ByteSequence;
use crate::explain::{sums_by_index, Contribution, Explain, ExplainOptions, Explanation};
use crate::extractor::{
    check_width, value_count_mismatch, Extractor, RaggedExtractor, RowExtractor,
};
use crate::output::{Batch, DType, Element, Layout};
use crate::{Error, Result};

/// An integer dtype a byte sequence can be written in.
pub trait SequenceValue: Element + TryFrom<i32> {}
impl SequenceValue for i64 {}
impl SequenceValue for i32 {}
impl SequenceValue for i16 {}
impl SequenceValue for u16 {}
impl SequenceValue for u8 {}

/// The dtypes a byte sequence can be written in.
pub const SEQUENCE_DTYPES: &[&str] = &["int32", "int64", "int16", "uint16", "uint8"];

/// A [`ByteSequence`] written as values of `T`, in dense rows of `max_len`
/// ([`TypedSequence::new`]) or ragged rows of the kept bytes only
/// ([`TypedSequence::unpadded`]); both check that every value fits `T`.
/// The layout decides what an explanation reassembles.
#[derive(Clone, Debug)]
pub struct TypedSequence<T> {
    sequence: ByteSequence,
    /// `byte + shift` for every byte, as `T`.
    table: [T; 256],
    pad: T,
    layout: Layout,
}

impl<T: SequenceValue> TypedSequence<T> {
    /// `sequence` in values of `T`, as dense rows: an `InvalidArgument`
    /// error, naming the dtype's range, if `shift..=shift + 255` or
    /// `pad_value` does not fit.
    pub fn new(sequence: ByteSequence) -> Result<Self> {
        Self::with_layout(sequence, Layout::Dense)
    }

    /// `sequence` in values of `T`, as ragged rows, which hold no padding:
    /// only `shift..=shift + 255` must fit (so uint8 holds raw bytes).
    pub fn unpadded(sequence: ByteSequence) -> Result<Self> {
        Self::with_layout(sequence, Layout::Ragged)
    }

    fn with_layout(sequence: ByteSequence, layout: Layout) -> Result<Self> {
        let fit = |v: i32| T::try_from(v).ok();
        let (shift, pad) = (sequence.shift, sequence.pad_value);
        let range = || {
            let name = T::DTYPE.name();
            Error::invalid_argument(format!(
                "byte sequence dtype {name} cannot hold its values: bytes map to {shift}..={} \
                 and pad_value is {pad}; choose a wider dtype ({}) or another shift/pad_value",
                shift.saturating_add(255),
                SEQUENCE_DTYPES.join(", ")
            ))
        };
        let mut table = [T::default(); 256];
        for (b, slot) in table.iter_mut().enumerate() {
            // Cannot overflow: shift <= i32::MAX - 255 (checked in `new`).
            *slot = fit(b as i32 + shift).ok_or_else(range)?;
        }
        let pad = match layout {
            Layout::Dense => fit(pad).ok_or_else(range)?,
            _ => T::default(),
        };
        Ok(TypedSequence {
            sequence,
            table,
            pad,
            layout,
        })
    }

    /// The kept bytes of `data`, mapped, in order.
    fn kept<'a>(&'a self, data: &'a [u8]) -> impl Iterator<Item = T> + 'a {
        let (head, tail) = self.sequence.parts(data);
        head.iter().chain(tail).map(|&b| self.table[usize::from(b)])
    }
}

impl<T: SequenceValue> RowExtractor for TypedSequence<T> {
    type Value = T;

    fn width(&self) -> usize {
        self.sequence.max_len
    }

    fn write_row(&self, doc: &[u8], out: &mut [T]) -> Result<()> {
        check_width(out.len(), self.sequence.max_len)?;
        let kept = self.sequence.content_len(doc.len());
        let (content, padding) = out.split_at_mut(kept);
        for (o, v) in content.iter_mut().zip(self.kept(doc)) {
            *o = v;
        }
        padding.fill(self.pad);
        Ok(())
    }

    /// Head and head_tail both read at most `max_len` bytes.
    fn work_bytes_hint(&self) -> Option<usize> {
        Some(self.sequence.max_len)
    }
}

/// The ragged rows: the kept bytes only, so a row costs `size_of::<T>()`
/// bytes per byte of the file (at most `max_len`), never `max_len` values.
impl<T: SequenceValue> RaggedExtractor for TypedSequence<T> {
    type Value = T;

    fn append_values(&self, doc: &[u8], values: &mut Vec<T>) {
        values.extend(self.kept(doc));
    }

    fn counts_up_front(&self) -> bool {
        true
    }

    fn value_count(&self, doc: &[u8]) -> Option<usize> {
        Some(self.sequence.content_len(doc.len()))
    }

    fn value_bound(&self, doc: &[u8]) -> Option<usize> {
        RaggedExtractor::value_count(self, doc)
    }

    fn work_bytes_hint(&self) -> Option<usize> {
        Some(self.sequence.max_len)
    }

    fn write_values(&self, docs: &[&[u8]], out: &mut [T]) -> Result<()> {
        let total: usize = docs
            .iter()
            .map(|d| self.sequence.content_len(d.len()))
            .sum();
        if total != out.len() {
            return Err(value_count_mismatch(out.len(), total));
        }
        let mut rest = out;
        for doc in docs {
            let (row, after) = rest.split_at_mut(self.sequence.content_len(doc.len()));
            for (o, v) in row.iter_mut().zip(self.kept(doc)) {
                *o = v;
            }
            rest = after;
        }
        Ok(())
    }
}

impl<T: SequenceValue> Explain for TypedSequence<T> {
    /// Index: the position in the row; one contribution per kept byte (its
    /// offset, value `byte + shift`). Dense rows hold `pad_value` past the
    /// kept bytes; ragged rows end there.
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        let contributions = self.sequence.contributions(doc, options);
        let width = match self.layout {
            Layout::Dense => self.sequence.max_len,
            _ => self.sequence.content_len(doc.len()),
        };
        let (table, pad, shift, layout) = (self.table, self.pad, self.sequence.shift, self.layout);
        let assemble = move |contributions: &[Contribution]| {
            let sums = sums_by_index(contributions, width)?;
            let mut row = vec![pad; width];
            for c in contributions {
                // In range: sums_by_index checked every index; the value is
                // a byte + shift, so the byte is value - shift.
                let byte = (sums[c.index as usize] as i64 - i64::from(shift)) as u8;
                row[c.index as usize] = table[usize::from(byte)];
            }
            Ok(match layout {
                Layout::Dense => Batch::dense_row(row),
                _ => Batch::ragged_row(row.into()),
            })
        };
        Ok(Explanation::new(
            contributions,
            "the byte + shift at that position; dense rows hold pad_value past the kept bytes",
            Box::new(assemble),
        ))
    }
}

/// The byte_sequence extractor of `sequence` in `dtype` (one of
/// [`SEQUENCE_DTYPES`]) and `layout` (dense or ragged).
pub fn sequence_extractor(
    sequence: ByteSequence,
    dtype: DType,
    layout: Layout,
) -> Result<Extractor> {
    fn build<T: SequenceValue + 'static>(s: ByteSequence, layout: Layout) -> Result<Extractor> {
        Ok(match layout {
            Layout::Ragged => Extractor::ragged(TypedSequence::<T>::unpadded(s)?),
            _ => Extractor::dense(TypedSequence::<T>::new(s)?),
        })
    }
    if layout == Layout::Sparse {
        return Err(Error::invalid_argument(
            "byte sequence output must be one of dense, ragged, got 'sparse'",
        ));
    }
    match dtype {
        DType::Int32 => build::<i32>(sequence, layout),
        DType::Int64 => build::<i64>(sequence, layout),
        DType::Int16 => build::<i16>(sequence, layout),
        DType::UInt16 => build::<u16>(sequence, layout),
        DType::UInt8 => build::<u8>(sequence, layout),
        other => Err(Error::invalid_argument(format!(
            "byte sequence dtype must be one of {}, got '{}'",
            SEQUENCE_DTYPES.join(", "),
            other.name()
        ))),
    }
}
