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
    let counts = byte_counts(data);
    normalise(counts.iter(), empty, out);
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
