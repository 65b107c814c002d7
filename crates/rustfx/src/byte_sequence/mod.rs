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

use crate::explain::{Contributions, ExplainOptions};
use crate::{Error, Result};

mod typed;
pub use typed::{sequence_extractor, SequenceValue, TypedSequence, SEQUENCE_DTYPES};

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

    /// One contribution per kept byte: its position in the row (the
    /// index), its offset in `doc`, and its value `byte + shift`. What
    /// every dtype and layout explains ([`TypedSequence`]).
    fn contributions(&self, doc: &[u8], options: &ExplainOptions) -> Contributions {
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
        out
    }
}

#[cfg(test)]
mod tests;
