//! EMBER's `ByteEntropyHistogram`: (block entropy bin, high nibble) counts.

use super::counting::{nibble_counts, normalise};
use super::numpy::{entropy_f32, entropy_term_f32, numpy1_entropy};
use super::{
    EmptyInput, BYTE_ENTROPY_HISTOGRAM_DIM, EMBER_STEP, EMBER_WINDOW, MAX_WINDOW,
    NUMPY1_FLOAT32_DIVISOR_LIMIT,
};
use crate::extractor::{fixed_row, RowExtractor};
use crate::{Error, Result};

/// EMBER's `ByteEntropyHistogram`: a 16×16 grid of (block entropy bin, high
/// nibble) counts over sliding blocks, normalised (see the module docs for
/// the definition).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EntropyHistogram {
    window: usize,
    step: usize,
}

impl Default for EntropyHistogram {
    /// EMBER's parameters: window 2048, step 1024.
    fn default() -> Self {
        EntropyHistogram {
            window: EMBER_WINDOW,
            step: EMBER_STEP,
        }
    }
}

impl EntropyHistogram {
    /// A histogram over blocks of `window` bytes starting every `step`
    /// bytes. Both must be in `1..=`[`MAX_WINDOW`] (2^24). EMBER uses
    /// `window = 2048, step = 1024` ([`EntropyHistogram::default`]).
    pub fn new(window: usize, step: usize) -> Result<Self> {
        if !(1..=MAX_WINDOW).contains(&window) {
            return Err(Error::invalid_argument(format!(
                "entropy histogram window must be in 1..={MAX_WINDOW} bytes, got {window}"
            )));
        }
        if !(1..=MAX_WINDOW).contains(&step) {
            return Err(Error::invalid_argument(format!(
                "entropy histogram step must be in 1..={MAX_WINDOW} bytes, got {step}"
            )));
        }
        Ok(EntropyHistogram { window, step })
    }

    /// The block length in bytes.
    pub fn window(&self) -> usize {
        self.window
    }

    /// The distance between block starts in bytes.
    pub fn step(&self) -> usize {
        self.step
    }

    /// Computes the normalised 16×16 histogram of `data` into `out`
    /// (row-major: `out[entropy_bin * 16 + nibble]`). `empty` says what an
    /// empty input gives.
    pub fn compute(
        &self,
        data: &[u8],
        empty: EmptyInput,
        out: &mut [f32; BYTE_ENTROPY_HISTOGRAM_DIM],
    ) {
        let mut grid = [[0u64; 16]; 16];
        self.accumulate(data, &mut grid);
        normalise(grid.iter().flatten(), empty, out);
    }

    fn accumulate(&self, data: &[u8], grid: &mut [[u64; 16]; 16]) {
        let mut blocks = Grid::new(self, data.len(), grid);
        let (window, step) = (self.window, self.step);
        let Some(last_start) = data.len().checked_sub(window) else {
            // Shorter than one window: the whole input is one block.
            blocks.add(&nibble_counts(data));
            return;
        };
        if step >= window {
            // Disjoint blocks (and gaps that are never read).
            let mut start = 0usize;
            while let Some(block) = data.get(start..start + window) {
                blocks.add(&nibble_counts(block));
                match start.checked_add(step) {
                    Some(next) if next <= last_start => start = next,
                    _ => break,
                }
            }
        } else {
            // Overlapping blocks: slide the counts, subtracting the `step`
            // bytes that leave and adding the `step` bytes that enter.
            let Some(first) = data.get(..window) else {
                return;
            };
            let mut counts = nibble_counts(first);
            let mut start = 0usize;
            loop {
                blocks.add(&counts);
                let next = match start.checked_add(step) {
                    Some(next) if next <= last_start => next,
                    _ => break,
                };
                // next <= last_start = len - window, so next + window <= len.
                let (Some(leaving), Some(entering)) = (
                    data.get(start..next),
                    data.get(start + window..next + window),
                ) else {
                    break;
                };
                // The leaving bytes were counted in `counts`: never below 0.
                if step < 64 {
                    // Few bytes: cheaper than two table passes.
                    for (&gone, &new) in leaving.iter().zip(entering) {
                        let g = &mut counts[usize::from(gone >> 4)];
                        *g = g.saturating_sub(1);
                        counts[usize::from(new >> 4)] += 1;
                    }
                } else {
                    let gone = nibble_counts(leaving);
                    let new = nibble_counts(entering);
                    for ((c, &g), &n) in counts.iter_mut().zip(&gone).zip(&new) {
                        *c = (*c + n).saturating_sub(g);
                    }
                }
                start = next;
            }
        }
    }
}

/// The `byte_entropy_histogram` extractor: [`EntropyHistogram`] rows with
/// an empty-input policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ByteEntropyHistogram {
    blocks: EntropyHistogram,
    empty: EmptyInput,
}

impl ByteEntropyHistogram {
    /// Rows of 256 values over blocks of `window` bytes every `step` bytes
    /// (both in `1..=`[`MAX_WINDOW`]); `empty` says what an empty input gives.
    pub fn new(window: usize, step: usize, empty: EmptyInput) -> Result<Self> {
        Ok(ByteEntropyHistogram {
            blocks: EntropyHistogram::new(window, step)?,
            empty,
        })
    }
}

impl RowExtractor for ByteEntropyHistogram {
    type Value = f32;

    fn width(&self) -> usize {
        BYTE_ENTROPY_HISTOGRAM_DIM
    }

    fn write_row(&self, doc: &[u8], out: &mut [f32]) -> Result<()> {
        self.blocks.compute(doc, self.empty, fixed_row(out)?);
        Ok(())
    }
}

/// Adds blocks to the 16×16 grid, choosing each block's entropy bin.
struct Grid<'a> {
    grid: &'a mut [[u64; 16]; 16],
    window: usize,
    /// On the `float32` path with many blocks: the term `-p·log2(p)` of each
    /// count `0..=window`, filled on first use (NaN = not yet computed; a
    /// term is never NaN). The bin depends only on these terms, so caching
    /// them changes nothing but the speed when `step` is small.
    terms: Vec<f32>,
}

impl<'a> Grid<'a> {
    fn new(params: &EntropyHistogram, len: usize, grid: &'a mut [[u64; 16]; 16]) -> Self {
        let window = params.window;
        let blocks = len
            .saturating_sub(window)
            .checked_div(params.step)
            .unwrap_or(0)
            .saturating_add(1);
        let float32 = (window as u64) < NUMPY1_FLOAT32_DIVISOR_LIMIT;
        let terms = if float32 && blocks.saturating_mul(16) > window {
            vec![f32::NAN; window + 1]
        } else {
            Vec::new()
        };
        Grid {
            grid,
            window,
            terms,
        }
    }

    /// The entropy bin of a block with these nibble counts.
    fn bin(&mut self, counts: &[u64; 16]) -> usize {
        // The window is at most 2^24, so it is exact as a divisor either way.
        let entropy = if self.terms.is_empty() {
            numpy1_entropy(counts, self.window as u64)
        } else {
            let d = self.window as f32;
            let terms = &mut self.terms;
            f64::from(entropy_f32(counts, |c| {
                let slot = usize::try_from(c).ok().and_then(|i| terms.get_mut(i));
                match slot {
                    Some(t) if !t.is_nan() => *t,
                    Some(t) => {
                        *t = entropy_term_f32(c, d);
                        *t
                    }
                    None => entropy_term_f32(c, d),
                }
            }))
        };
        let h = entropy * 2.0;
        // H·2 is exact in float32 and float64 alike; `as` truncates like
        // Python's int(), and H >= 0.
        ((h * 2.0) as usize).min(15)
    }

    fn add(&mut self, counts: &[u64; 16]) {
        let bin = self.bin(counts);
        if let Some(row) = self.grid.get_mut(bin) {
            for (g, &c) in row.iter_mut().zip(counts) {
                *g = g.saturating_add(c);
            }
        }
    }
}
