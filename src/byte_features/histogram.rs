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
/// rounding, so the row is bit for bit the same. The values seen are
/// marked in a table of flags (a store per byte, nothing loaded), read as a
/// 256-bit set afterwards: a list grown as each value is first counted
/// hung its length on the count just loaded, a chain of load, compare and
/// add through every byte.
fn short_byte_histogram(data: &[u8], out: &mut [f32; BYTE_HISTOGRAM_DIM]) {
    debug_assert!((1..=SHORT_INPUT).contains(&data.len()));
    out.fill(0.0);
    let mut flags = [0u8; BYTE_HISTOGRAM_DIM];
    for &b in data {
        out[usize::from(b)] += 1.0;
        flags[usize::from(b)] = 0x80;
    }
    // The high bit of flag j of a group of 8 lands on bit 56 + j.
    let mut seen = [0u64; 4];
    for (group, flags) in flags.chunks_exact(8).enumerate() {
        let word = u64::from_le_bytes(flags.try_into().expect("8 flags"));
        seen[group / 8] |= (word.wrapping_mul(0x0002_0408_1020_4081) >> 56) << (8 * (group % 8));
    }
    let total = data.len() as f64;
    for (quarter, mut word) in seen.into_iter().enumerate() {
        while word != 0 {
            let value = &mut out[quarter * 64 + word.trailing_zeros() as usize];
            *value = (f64::from(*value) / total) as f32;
            word &= word - 1;
        }
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
