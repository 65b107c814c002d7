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
/// counts go straight into `out` (exact in `f32`: at most [`SHORT_INPUT`])
/// and only the byte values seen are divided, with [`normalise`]'s
/// rounding, so the row is bit for bit the same.
fn short_byte_histogram(data: &[u8], out: &mut [f32; BYTE_HISTOGRAM_DIM]) {
    debug_assert!((1..=SHORT_INPUT).contains(&data.len()));
    out.fill(0.0);
    let mut seen = [0u8; 257];
    let mut distinct = 0;
    for &b in data {
        let count = &mut out[usize::from(b)];
        seen[distinct] = b;
        distinct += usize::from(*count == 0.0);
        *count += 1.0;
    }
    let total = data.len() as f64;
    for &b in &seen[..distinct] {
        let value = &mut out[usize::from(b)];
        *value = (f64::from(*value) / total) as f32;
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
