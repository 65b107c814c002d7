//! EMBER's `ByteHistogram`.

use super::counting::{byte_counts, normalise};
use super::{EmptyInput, BYTE_HISTOGRAM_DIM};
use crate::extractor::{fixed_row, RowExtractor};
use crate::Result;

/// EMBER's `ByteHistogram`: the count of each byte value divided by the
/// total, as `float32` (bit-identical to EMBER for inputs up to 16 MiB, the
/// exact ratio beyond; see the module docs). `empty` says what an empty
/// input gives.
pub fn byte_histogram(data: &[u8], empty: EmptyInput, out: &mut [f32; BYTE_HISTOGRAM_DIM]) {
    if (1..=SHORT_INPUT).contains(&data.len()) {
        return short_byte_histogram(data, out);
    }
    let counts = byte_counts(data);
    normalise(counts.iter(), empty, out);
}

/// Inputs up to this long take [`short_byte_histogram`]: below it, the
/// tables of [`byte_counts`] (4 KiB to clear and merge) cost more than the
/// bytes (measured with `cargo bench --bench records`).
const SHORT_INPUT: usize = 512;

/// [`byte_histogram`] of a short, non-empty record (a URL, a command line):
/// counted in a table of `u16` (an integer add per byte; the float adds of
/// counting straight into `out` chained through repeated bytes), then
/// every value divided in `f32`, in vector lanes. Counts and length are
/// exact in `f32` (at most [`SHORT_INPUT`]), and IEEE division is the
/// correctly rounded ratio: [`normalise`]'s value, bit for bit. Dividing
/// only the values seen (a division each, in `f64`) cost more than the
/// 256 lanes.
fn short_byte_histogram(data: &[u8], out: &mut [f32; BYTE_HISTOGRAM_DIM]) {
    debug_assert!((1..=SHORT_INPUT).contains(&data.len()));
    let mut counts = [0u16; BYTE_HISTOGRAM_DIM];
    for &b in data {
        counts[usize::from(b)] += 1;
    }
    let total = data.len() as f32;
    for (value, &count) in out.iter_mut().zip(&counts) {
        *value = f32::from(count) / total;
    }
}

/// The `byte_histogram` extractor: [`byte_histogram`] rows with an
/// empty-input policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ByteHistogram {
    empty: EmptyInput,
}

impl ByteHistogram {
    /// Rows of 256 values; `empty` says what an empty input gives.
    pub fn new(empty: EmptyInput) -> Self {
        ByteHistogram { empty }
    }

    /// What an empty input gives.
    pub fn empty(&self) -> EmptyInput {
        self.empty
    }
}

impl RowExtractor for ByteHistogram {
    type Value = f32;

    fn width(&self) -> usize {
        BYTE_HISTOGRAM_DIM
    }

    fn write_row(&self, doc: &[u8], out: &mut [f32]) -> Result<()> {
        byte_histogram(doc, self.empty, fixed_row(out)?);
        Ok(())
    }
}
