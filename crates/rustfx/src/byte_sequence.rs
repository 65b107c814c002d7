//! MalConv-style raw byte sequences: a file's bytes as integers for an
//! embedding layer, shifted, and padded to a fixed length (dense rows) or
//! not at all (ragged rows, which a batch pads to its longest member, as
//! MalConv2 does).
//!
//! The values' dtype is a parameter ([`TypedSequence`]): int32 by default,
//! or int16/uint16 (2 bytes per byte: MalConv2's 0..=256 fit), uint8 (when
//! `shift + 255` and the pad fit), int64.
//!
//! * elastic/ember's MalConv: bytes `0..=255` as they are, padded with 256,
//!   the first 2^20 bytes ([`ByteSequence::ember`]).
//! * MalConv2 (Raff et al., "Classifying Sequences of Extreme Length with
//!   Constant Memory Applied to Malware Detection", 2021): bytes shifted by
//!   +1 to `1..=256`, padded with 0, at most [`MALCONV2_MAX_LEN`] bytes
//!   ([`ByteSequence::malconv2`]). MalConv2 pads a batch only to its longest
//!   member; [`ByteSequence::content_len`] gives each member's unpadded length
//!   for that.
//!
//! The pad value may never equal a shifted byte, so padding and content
//! stay distinguishable; [`ByteSequence::new`] enforces it.

use crate::explain::{
    sums_by_index, Contribution, Contributions, Explain, ExplainOptions, Explanation,
};
use crate::extractor::{check_width, RaggedExtractor, RowExtractor};
use crate::output::{Batch, DType, Element, Layout};
use crate::{Error, Result};
use std::marker::PhantomData;

/// The largest `max_len` [`ByteSequence::new`] accepts: 2^26 (64 Mi)
/// positions, a 256 MiB `int32` row.
pub const MAX_SEQUENCE_LEN: usize = 1 << 26;
/// elastic/ember MalConv's sequence length: 2^20 bytes.
pub const EMBER_MALCONV_MAX_LEN: usize = 1 << 20;
/// elastic/ember MalConv's pad value (one past the largest byte).
pub const EMBER_MALCONV_PAD: i32 = 256;
/// MalConv2's own (default) maximum length: 4,000,000 bytes.
pub const MALCONV2_MAX_LEN: usize = 4_000_000;

/// Which bytes of an input longer than `max_len` are kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Sampling {
    /// The first `max_len` bytes (MalConv, EMBER, MalConv2).
    #[default]
    Head,
    /// The first `ceil(max_len / 2)` bytes followed directly (no separator)
    /// by the last `floor(max_len / 2)` bytes, so both the headers and the
    /// end of a long file (overlays, appended payloads) are seen. Inputs of
    /// at most `max_len` bytes are kept whole, as with `Head`.
    HeadTail,
}

crate::names::named_values!(Sampling, "sampling", {
    Head => "head",
    HeadTail => "head_tail",
});

/// A named convention for the parameters of a [`ByteSequence`]: what
/// `byte_sequence(preset=...)` fills in for the ones not given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// elastic/ember's MalConv: bytes as they are, pad 256, 2^20 bytes.
    Ember,
    /// MalConv2: bytes + 1, pad 0, 4,000,000 bytes.
    Malconv2,
}

crate::names::named_values!(Preset, "preset", {
    Ember => "ember",
    Malconv2 => "malconv2",
});

impl Preset {
    /// The preset's `(max_len, shift, pad_value)`.
    pub fn parameters(self) -> (usize, i32, i32) {
        match self {
            Preset::Ember => (EMBER_MALCONV_MAX_LEN, 0, EMBER_MALCONV_PAD),
            Preset::Malconv2 => (MALCONV2_MAX_LEN, 1, 0),
        }
    }
}

/// How to turn bytes into a fixed-length `int32` sequence: at most
/// `max_len` bytes (chosen by `sampling`), each as `byte + shift`, then
/// `pad_value` up to `max_len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ByteSequence {
    max_len: usize,
    shift: i32,
    pad_value: i32,
    sampling: Sampling,
}

impl ByteSequence {
    /// A sequence of exactly `max_len` values (`1..=`[`MAX_SEQUENCE_LEN`]),
    /// each byte mapped to `byte + shift` and the rest filled with
    /// `pad_value`. `shift` may be at most `i32::MAX - 255` (so `255 + shift`
    /// fits), and `pad_value` must lie outside `shift..=shift + 255`, the
    /// values real bytes take.
    pub fn new(max_len: usize, shift: i32, pad_value: i32, sampling: Sampling) -> Result<Self> {
        if !(1..=MAX_SEQUENCE_LEN).contains(&max_len) {
            return Err(Error::invalid_argument(format!(
                "byte sequence max_len must be in 1..={MAX_SEQUENCE_LEN}, got {max_len}"
            )));
        }
        let Some(top) = shift.checked_add(255) else {
            return Err(Error::invalid_argument(format!(
                "byte sequence shift must be at most {} (so that byte 255 + shift fits in int32), got {shift}",
                i32::MAX - 255
            )));
        };
        if (shift..=top).contains(&pad_value) {
            return Err(Error::invalid_argument(format!(
                "byte sequence pad_value {pad_value} collides with byte values: with shift {shift} \
                 bytes map to {shift}..={top}; pad_value must be below {shift} or above {top}"
            )));
        }
        Ok(ByteSequence {
            max_len,
            shift,
            pad_value,
            sampling,
        })
    }

    /// elastic/ember's MalConv input: bytes `0..=255` unshifted, pad 256,
    /// the first 2^20 bytes.
    pub fn ember() -> Self {
        ByteSequence {
            max_len: EMBER_MALCONV_MAX_LEN,
            shift: 0,
            pad_value: EMBER_MALCONV_PAD,
            sampling: Sampling::Head,
        }
    }

    /// MalConv2's input: bytes shifted to `1..=256`, pad 0, the first
    /// `max_len` bytes (MalConv2's default is [`MALCONV2_MAX_LEN`],
    /// 4,000,000). Fails if `max_len` is outside `1..=`[`MAX_SEQUENCE_LEN`].
    pub fn malconv2(max_len: usize) -> Result<Self> {
        Self::new(max_len, 1, 0, Sampling::Head)
    }

    /// The output length (every row is exactly this long).
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The value added to each byte.
    pub fn shift(&self) -> i32 {
        self.shift
    }

    /// The value written after the content.
    pub fn pad_value(&self) -> i32 {
        self.pad_value
    }

    /// Which bytes of a long input are kept.
    pub fn sampling(&self) -> Sampling {
        self.sampling
    }

    /// How many leading positions of the output hold bytes (not padding) for
    /// an input of `data_len` bytes: `min(data_len, max_len)`. The longest of
    /// these over a batch is MalConv2's padded batch length.
    pub fn content_len(&self, data_len: usize) -> usize {
        data_len.min(self.max_len)
    }

    /// The kept bytes: a head and a (possibly empty) tail.
    fn parts<'a>(&self, data: &'a [u8]) -> (&'a [u8], &'a [u8]) {
        if data.len() <= self.max_len {
            return (data, &[]);
        }
        let (head_len, tail_len) = match self.sampling {
            Sampling::Head => (self.max_len, 0),
            Sampling::HeadTail => (self.max_len - self.max_len / 2, self.max_len / 2),
        };
        let head = data.get(..head_len).unwrap_or(&[]);
        let tail = data
            .len()
            .checked_sub(tail_len)
            .and_then(|start| data.get(start..))
            .unwrap_or(&[]);
        (head, tail)
    }

    /// Writes the sequence of `data` into `out`, which must be exactly
    /// [`max_len`](Self::max_len) long: the kept bytes as `byte + shift`,
    /// then `pad_value`. If `out` has any other length this returns an
    /// `InvalidArgument` error and leaves `out` untouched (a wrong length is
    /// a caller bug, so it is reported rather than silently truncated).
    pub fn write(&self, data: &[u8], out: &mut [i32]) -> Result<()> {
        if out.len() != self.max_len {
            return Err(Error::invalid_argument(format!(
                "byte sequence output has length {}, but it must be max_len = {}",
                out.len(),
                self.max_len
            )));
        }
        let (head, tail) = self.parts(data);
        let shift = self.shift;
        let mut rest = out;
        for part in [head, tail] {
            let (dst, after) = rest.split_at_mut(part.len().min(rest.len()));
            // Cannot overflow: shift <= i32::MAX - 255 (checked in `new`).
            for (o, &b) in dst.iter_mut().zip(part) {
                *o = i32::from(b).wrapping_add(shift);
            }
            rest = after;
        }
        rest.fill(self.pad_value);
        Ok(())
    }
}

impl RowExtractor for ByteSequence {
    type Value = i32;

    fn width(&self) -> usize {
        self.max_len
    }

    fn write_row(&self, doc: &[u8], out: &mut [i32]) -> Result<()> {
        check_width(out.len(), self.max_len)?;
        self.write(doc, out)
    }

    /// Head and head_tail both read at most `max_len` bytes.
    fn work_bytes_hint(&self) -> Option<usize> {
        Some(self.max_len)
    }
}

impl Explain for ByteSequence {
    /// Index: the position in the row; one contribution per kept byte (its
    /// offset, value `byte + shift`). Positions with none hold `pad_value`.
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        let mut out = Contributions::new(options);
        let (head, tail) = self.parts(doc);
        let tail_start = doc.len() - tail.len();
        let kept = head
            .iter()
            .enumerate()
            .chain(tail.iter().enumerate().map(|(i, b)| (tail_start + i, b)));
        for (index, (offset, &b)) in kept.enumerate() {
            let value = f64::from(i32::from(b).wrapping_add(self.shift));
            if !out.push(index as u64, offset as u64, 1, value, &[]) {
                break;
            }
        }
        let (width, pad) = (self.max_len, self.pad_value);
        let assemble = move |contributions: &[Contribution]| {
            let sums = sums_by_index(contributions, width)?;
            let mut row = vec![pad; width];
            for c in contributions {
                // In range: sums_by_index checked every index.
                row[c.index as usize] = sums[c.index as usize] as i32;
            }
            Ok(Batch::dense_row(row))
        };
        Ok(Explanation::new(
            out,
            "the byte + shift at that position; positions past the kept bytes hold pad_value",
            Box::new(assemble),
        ))
    }
}

/// An integer dtype a byte sequence can be written in.
pub trait SequenceValue: Element + TryFrom<i32> {}
impl SequenceValue for i64 {}
impl SequenceValue for i32 {}
impl SequenceValue for i16 {}
impl SequenceValue for u16 {}
impl SequenceValue for u8 {}

/// The dtypes a byte sequence can be written in.
pub const SEQUENCE_DTYPES: &[&str] = &["int32", "int64", "int16", "uint16", "uint8"];

/// A [`ByteSequence`] written as values of `T`, as dense rows of `max_len`
/// or as ragged rows of the kept bytes only (no padding). Built by
/// [`TypedSequence::new`], which checks that every value fits `T`.
#[derive(Clone, Debug)]
pub struct TypedSequence<T> {
    sequence: ByteSequence,
    /// `byte + shift` for every byte, as `T`.
    table: [T; 256],
    pad: T,
    _value: PhantomData<T>,
}

impl<T: SequenceValue> TypedSequence<T> {
    /// `sequence` in values of `T`, as dense rows: an `InvalidArgument`
    /// error, naming the dtype's range, if `shift..=shift + 255` or
    /// `pad_value` does not fit.
    pub fn new(sequence: ByteSequence) -> Result<Self> {
        Self::with_pad(sequence, true)
    }

    /// `sequence` in values of `T`, as ragged rows, which hold no padding:
    /// only `shift..=shift + 255` must fit (so uint8 holds raw bytes).
    pub fn unpadded(sequence: ByteSequence) -> Result<Self> {
        Self::with_pad(sequence, false)
    }

    fn with_pad(sequence: ByteSequence, padded: bool) -> Result<Self> {
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
        let pad = match padded {
            true => fit(pad).ok_or_else(range)?,
            false => T::default(),
        };
        Ok(TypedSequence {
            sequence,
            table,
            pad,
            _value: PhantomData,
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
        self.value_count(doc)
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
            return Err(crate::extractor::value_count_mismatch(out.len(), total));
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
    /// [`ByteSequence`]'s explanation, reassembled in `T` (and, for ragged
    /// rows, without the padding: [`explain_as`](Self::explain_as)).
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        self.explain_as(doc, options, Layout::Dense)
    }
}

impl<T: SequenceValue> TypedSequence<T> {
    /// The explanation of `doc`'s row in `layout` (dense: padded to
    /// `max_len`; ragged: the kept bytes only).
    pub fn explain_as(
        &self,
        doc: &[u8],
        options: &ExplainOptions,
        layout: Layout,
    ) -> Result<Explanation> {
        let explanation = self.sequence.explain(doc, options)?;
        let width = match layout {
            Layout::Ragged => self.sequence.content_len(doc.len()),
            _ => self.sequence.max_len,
        };
        let (table, pad, shift) = (self.table, self.pad, self.sequence.shift);
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
                Layout::Ragged => Batch::ragged_row(row.into()),
                _ => Batch::dense_row(row),
            })
        };
        Ok(explanation.with_assembly(Box::new(assemble)))
    }
}

/// Ragged rows of a [`TypedSequence`], for explanations: the same rows as
/// [`RaggedExtractor`], explained without padding.
#[derive(Clone, Debug)]
pub struct RaggedSequence<T>(pub TypedSequence<T>);

impl<T: SequenceValue> RaggedExtractor for RaggedSequence<T> {
    type Value = T;
    fn append_values(&self, doc: &[u8], values: &mut Vec<T>) {
        self.0.append_values(doc, values)
    }
    fn counts_up_front(&self) -> bool {
        true
    }
    fn value_count(&self, doc: &[u8]) -> Option<usize> {
        RaggedExtractor::value_count(&self.0, doc)
    }
    fn value_bound(&self, doc: &[u8]) -> Option<usize> {
        RaggedExtractor::value_bound(&self.0, doc)
    }
    fn work_bytes_hint(&self) -> Option<usize> {
        RaggedExtractor::work_bytes_hint(&self.0)
    }
    fn write_values(&self, docs: &[&[u8]], out: &mut [T]) -> Result<()> {
        RaggedExtractor::write_values(&self.0, docs, out)
    }
}

impl<T: SequenceValue> Explain for RaggedSequence<T> {
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        self.0.explain_as(doc, options, Layout::Ragged)
    }
}

/// The byte_sequence extractor of `sequence` in `dtype` (one of
/// [`SEQUENCE_DTYPES`]) and `layout` (dense or ragged).
pub fn sequence_extractor(
    sequence: ByteSequence,
    dtype: DType,
    layout: Layout,
) -> Result<crate::extractor::Extractor> {
    use crate::extractor::Extractor;
    fn build<T: SequenceValue + 'static>(s: ByteSequence, layout: Layout) -> Result<Extractor> {
        Ok(match layout {
            Layout::Ragged => Extractor::ragged(RaggedSequence(TypedSequence::<T>::unpadded(s)?)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracles::byte_sequence::byte_sequence as oracle;
    use proptest::prelude::*;

    fn check(data: &[u8], max_len: usize, shift: i32, pad: i32, sampling: Sampling) {
        let seq = ByteSequence::new(max_len, shift, pad, sampling).unwrap();
        let mut out = vec![i32::MIN + 7; max_len];
        seq.write(data, &mut out).unwrap();
        assert_eq!(
            out,
            oracle(data, max_len, shift, pad, sampling),
            "len {} max_len {max_len} {sampling:?}",
            data.len()
        );
        let content = seq.content_len(data.len());
        assert!(out[content..].iter().all(|&x| x == pad));
        assert!(out[..content].iter().all(|&x| x != pad));
    }

    #[test]
    fn every_alignment_length_and_max_len() {
        let buf: Vec<u8> = (0..64u32).map(|i| (i * 89 + 3) as u8).collect();
        for offset in 0..16 {
            for len in 0..=40 {
                let data = &buf[offset..offset + len];
                for max_len in [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 32, 33] {
                    for sampling in [Sampling::Head, Sampling::HeadTail] {
                        check(data, max_len, 0, 256, sampling);
                        check(data, max_len, 1, 0, sampling);
                        check(data, max_len, -300, 5, sampling);
                    }
                }
            }
        }
    }

    #[test]
    fn head_tail_split() {
        let data: Vec<u8> = (0..10).collect();
        let mut out = [0i32; 5];
        let seq = ByteSequence::new(5, 0, -1, Sampling::HeadTail).unwrap();
        seq.write(&data, &mut out).unwrap();
        assert_eq!(out, [0, 1, 2, 8, 9]);
        let seq = ByteSequence::new(4, 1, 0, Sampling::HeadTail).unwrap();
        seq.write(&data, &mut out[..4]).unwrap();
        assert_eq!(out[..4], [1, 2, 9, 10]);
        let seq = ByteSequence::new(1, 0, -1, Sampling::HeadTail).unwrap();
        seq.write(&data, &mut out[..1]).unwrap();
        assert_eq!(out[0], 0);
        // Short inputs are kept whole and padded.
        let seq = ByteSequence::new(5, 0, -1, Sampling::HeadTail).unwrap();
        seq.write(&data[..3], &mut out).unwrap();
        assert_eq!(out, [0, 1, 2, -1, -1]);
    }

    #[test]
    fn narrow_dtypes_are_refused_with_the_allowed_ones() {
        let malconv2 = ByteSequence::malconv2(16).unwrap();
        assert!(TypedSequence::<u16>::new(malconv2).is_ok());
        assert!(TypedSequence::<i16>::new(malconv2).is_ok());
        let e = TypedSequence::<u8>::new(malconv2).unwrap_err().to_string();
        assert!(
            e.contains("uint8") && e.contains("1..=256") && e.contains("int16"),
            "{e}"
        );
        let e = TypedSequence::<u8>::new(ByteSequence::ember())
            .unwrap_err()
            .to_string();
        assert!(e.contains("pad_value is 256"), "{e}");
        // Ragged rows hold no pad: uint8 holds raw bytes.
        let raw = TypedSequence::<u8>::unpadded(ByteSequence::ember()).unwrap();
        let mut values = Vec::new();
        RaggedExtractor::append_values(&raw, b"\x00\x7f\xff", &mut values);
        assert_eq!(values, [0, 0x7f, 0xff]);
        assert!(TypedSequence::<u8>::unpadded(malconv2).is_err());
    }

    #[test]
    fn presets() {
        let e = ByteSequence::ember();
        assert_eq!(
            (e.max_len(), e.shift(), e.pad_value(), e.sampling()),
            (1 << 20, 0, 256, Sampling::Head)
        );
        assert_eq!(ByteSequence::new(1 << 20, 0, 256, Sampling::Head), Ok(e));
        let mut out = vec![0i32; 1 << 20];
        e.write(&[0, 255, 7], &mut out).unwrap();
        assert_eq!(out[..4], [0, 255, 7, 256]);
        assert_eq!(out[(1 << 20) - 1], 256);

        let m = ByteSequence::malconv2(MALCONV2_MAX_LEN).unwrap();
        assert_eq!(
            (m.max_len(), m.shift(), m.pad_value(), m.sampling()),
            (4_000_000, 1, 0, Sampling::Head)
        );
        let m = ByteSequence::malconv2(4).unwrap();
        let mut out = [9i32; 4];
        m.write(&[0, 255], &mut out).unwrap();
        assert_eq!(out, [1, 256, 0, 0]);
        assert_eq!(m.content_len(2), 2);
        assert_eq!(m.content_len(10), 4);
        assert!(ByteSequence::malconv2(0).is_err());
        assert!(ByteSequence::malconv2(MAX_SEQUENCE_LEN + 1).is_err());
    }

    #[test]
    fn validation_messages() {
        let e = ByteSequence::new(0, 0, 256, Sampling::Head).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        assert!(
            e.message()
                .contains("max_len must be in 1..=67108864, got 0"),
            "{e}"
        );
        let e = ByteSequence::new(MAX_SEQUENCE_LEN + 1, 0, 256, Sampling::Head).unwrap_err();
        assert!(e.message().contains("got 67108865"), "{e}");
        assert!(ByteSequence::new(MAX_SEQUENCE_LEN, 0, 256, Sampling::Head).is_ok());
        for pad in [0, 1, 128, 255] {
            let e = ByteSequence::new(8, 0, pad, Sampling::Head).unwrap_err();
            assert!(e.message().contains("bytes map to 0..=255"), "{e}");
            assert!(e.message().contains("below 0 or above 255"), "{e}");
        }
        assert!(ByteSequence::new(8, 1, 256, Sampling::Head).is_err());
        assert!(ByteSequence::new(8, 1, 257, Sampling::Head).is_ok());
        assert!(ByteSequence::new(8, 0, -1, Sampling::Head).is_ok());
        assert!(ByteSequence::new(8, i32::MIN, i32::MAX, Sampling::Head).is_ok());
        assert!(ByteSequence::new(8, i32::MAX - 255, i32::MIN, Sampling::Head).is_ok());
        let e = ByteSequence::new(8, i32::MAX - 254, 0, Sampling::Head).unwrap_err();
        assert!(
            e.message().contains("shift must be at most 2147483392"),
            "{e}"
        );
        // Extreme shifts map bytes without overflow.
        let s = ByteSequence::new(2, i32::MAX - 255, 0, Sampling::Head).unwrap();
        let mut out = [0i32; 2];
        s.write(&[255], &mut out).unwrap();
        assert_eq!(out, [i32::MAX, 0]);
    }

    #[test]
    fn wrong_output_length_is_an_error_and_leaves_out_untouched() {
        let seq = ByteSequence::new(4, 0, 256, Sampling::Head).unwrap();
        for len in [0, 3, 5, 100] {
            let mut out = vec![-7i32; len];
            let e = seq.write(b"abcdef", &mut out).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
            assert!(e.message().contains("must be max_len = 4"), "{e}");
            assert!(out.iter().all(|&x| x == -7));
        }
    }

    proptest! {
        #[test]
        fn prop_equals_oracle(
            data in proptest::collection::vec(any::<u8>(), 0..300),
            max_len in 1usize..200,
            shift in -1000i32..1000,
            pad_choice in any::<bool>(),
            head_tail in any::<bool>(),
        ) {
            let pad = if pad_choice { shift - 1 } else { shift + 256 };
            let sampling = if head_tail { Sampling::HeadTail } else { Sampling::Head };
            check(&data, max_len, shift, pad, sampling);
        }

        #[test]
        fn prop_never_panics(
            data in proptest::collection::vec(any::<u8>(), 0..100),
            max_len in 0usize..120,
            shift in any::<i32>(),
            pad in any::<i32>(),
            out_len in 0usize..120,
            head_tail in any::<bool>(),
        ) {
            let sampling = if head_tail { Sampling::HeadTail } else { Sampling::Head };
            if let Ok(seq) = ByteSequence::new(max_len, shift, pad, sampling) {
                let mut out = vec![0i32; out_len];
                let r = seq.write(&data, &mut out);
                prop_assert_eq!(r.is_ok(), out_len == max_len);
            }
        }

        /// Every dtype and both layouts hold the oracle's values: dense rows
        /// its whole row in the dtype, ragged rows its kept bytes only; and
        /// a dtype too narrow for the values is refused at construction.
        #[test]
        fn prop_typed_rows_equal_the_oracle(
            data in proptest::collection::vec(any::<u8>(), 0..300),
            max_len in 1usize..200,
            shift in -300i32..300,
            pad_choice in any::<bool>(),
            head_tail in any::<bool>(),
        ) {
            let pad = if pad_choice { shift - 1 } else { shift + 256 };
            let sampling = if head_tail { Sampling::HeadTail } else { Sampling::Head };
            let sequence = ByteSequence::new(max_len, shift, pad, sampling).unwrap();
            let want = oracle(&data, max_len, shift, pad, sampling);
            let kept = sequence.content_len(data.len());
            fn typed<T: SequenceValue>(
                sequence: ByteSequence, data: &[u8], want: &[i32], kept: usize,
            ) -> std::result::Result<(), TestCaseError> {
                let fits = want.iter().all(|&v| T::try_from(v).is_ok())
                    && T::try_from(sequence.shift() + 255).is_ok()
                    && T::try_from(sequence.shift()).is_ok()
                    && T::try_from(sequence.pad_value()).is_ok();
                let Ok(typed) = TypedSequence::<T>::new(sequence) else {
                    prop_assert!(!fits, "{:?} refused", T::DTYPE);
                    return Ok(());
                };
                prop_assert!(fits);
                let as_t: Vec<T> = want.iter().map(|&v| T::try_from(v).ok().unwrap()).collect();
                prop_assert_eq!(RowExtractor::row(&typed, data), as_t.clone());
                let mut ragged = Vec::new();
                let docs = [data, data];
                RaggedExtractor::append_rows(&typed, &docs, &mut ragged, &mut Vec::new());
                let mut twice = as_t[..kept].to_vec();
                twice.extend_from_slice(&as_t[..kept]);
                prop_assert_eq!(&ragged, &twice);
                let mut direct = vec![T::default(); 2 * kept];
                RaggedExtractor::write_values(&typed, &docs, &mut direct).unwrap();
                prop_assert_eq!(direct, twice);
                Ok(())
            }
            typed::<i32>(sequence, &data, &want, kept)?;
            typed::<i64>(sequence, &data, &want, kept)?;
            typed::<i16>(sequence, &data, &want, kept)?;
            typed::<u16>(sequence, &data, &want, kept)?;
            typed::<u8>(sequence, &data, &want, kept)?;
        }
    }
}
