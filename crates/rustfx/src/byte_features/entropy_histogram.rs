//! EMBER's `ByteEntropyHistogram`: (block entropy bin, high nibble) counts.

use super::counting::{nibble_counts, normalise};
use super::numpy::{entropy_f32, entropy_term_f32, numpy1_entropy};
use super::{
    EmptyInput, BYTE_ENTROPY_HISTOGRAM_DIM, EMBER_STEP, EMBER_WINDOW, MAX_WINDOW,
    NUMPY1_FLOAT32_DIVISOR_LIMIT,
};
use crate::extractor::{fixed_row, RowExtractor};
use crate::{Error, Result};
use std::sync::OnceLock;

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
        self.compute_with(data, empty, out, self.overlap());
    }

    /// [`EntropyHistogram::compute`] with a given way of counting
    /// overlapping blocks (the tests run every one).
    pub(super) fn compute_with(
        &self,
        data: &[u8],
        empty: EmptyInput,
        out: &mut [f32; BYTE_ENTROPY_HISTOGRAM_DIM],
        overlap: Overlap,
    ) {
        let mut grid = [[0u64; 16]; 16];
        self.accumulate(data, &mut grid, overlap);
        normalise(grid.iter().flatten(), empty, out);
    }

    /// The 16×16 grid of counts before normalising, row-major as
    /// [`EntropyHistogram::compute`] writes it (`ember_features` normalises
    /// it as thrember's numpy does).
    pub(crate) fn counts(&self, data: &[u8]) -> [u64; BYTE_ENTROPY_HISTOGRAM_DIM] {
        let mut grid = [[0u64; 16]; 16];
        self.accumulate(data, &mut grid, self.overlap());
        let mut flat = [0u64; BYTE_ENTROPY_HISTOGRAM_DIM];
        flat.copy_from_slice(grid.as_flattened());
        flat
    }

    /// The fastest way to count overlapping blocks with these parameters.
    fn overlap(&self) -> Overlap {
        if self.step < SLIDE_BYTE_BY_BYTE_BELOW {
            Overlap::ByteByByte
        } else if self.window / self.step <= MAX_STEPS_PER_WINDOW {
            Overlap::SumSteps
        } else {
            Overlap::SlideBySteps
        }
    }

    fn accumulate(&self, data: &[u8], grid: &mut [[u64; 16]; 16], overlap: Overlap) {
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
            return;
        }
        match overlap {
            Overlap::ByteByByte => slide(data, window, step, &mut blocks, move_byte_by_byte),
            Overlap::SumSteps => sum_steps(data, window, step, &mut blocks),
            Overlap::SlideBySteps => slide(data, window, step, &mut blocks, move_by_recounting),
        }
    }
}

impl EntropyHistogram {
    /// Calls `visit(start, len, bin, nibble_counts)` for each block in
    /// order, each counted from scratch (the explanation's independent
    /// path; extraction slides the counts), until `visit` returns `false`.
    pub(crate) fn visit_blocks(
        &self,
        data: &[u8],
        mut visit: impl FnMut(usize, usize, usize, &[u64; 16]) -> bool,
    ) {
        let mut unused = [[0u64; 16]; 16];
        let mut grid = Grid::new(self, data.len(), &mut unused);
        if data.len() < self.window {
            let counts = nibble_counts(data);
            visit(0, data.len(), grid.bin(&counts), &counts);
            return;
        }
        let mut start = 0usize;
        while let Some(block) = start
            .checked_add(self.window)
            .and_then(|end| data.get(start..end))
        {
            let counts = nibble_counts(block);
            if !visit(start, block.len(), grid.bin(&counts), &counts) {
                return;
            }
            match start.checked_add(self.step) {
                Some(next) => start = next,
                None => return,
            }
        }
    }
}

/// How overlapping blocks (`step < window`) are counted. All give the same
/// counts; they differ in speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Overlap {
    /// Slide the counts byte by byte (small steps).
    ByteByByte,
    /// Count each byte once and sum the steps of each block.
    SumSteps,
    /// Slide the counts step by step, counting each byte twice (many steps
    /// per window, where [`Overlap::SumSteps`] would keep too many).
    SlideBySteps,
}

/// Below this step, overlapping blocks slide byte by byte: a few bytes cost
/// less that way than two more calls to [`nibble_counts`].
const SLIDE_BYTE_BY_BYTE_BELOW: usize = 64;

/// Up to this many steps per window, [`sum_steps`] keeps the counts of the
/// last `window / step` steps (128 bytes each).
const MAX_STEPS_PER_WINDOW: usize = 256;

/// [`Overlap::SumSteps`]: overlapping blocks (`step < window <= len`), each
/// byte counted once.
///
/// With `window = q·step + r` (`r < step`), the block at `k·step` is steps
/// `k..k+q` plus the first `r` bytes (the head) of step `k + q`. Each step is
/// counted once, as its head and then the rest, and each block's counts are
/// the running sum of the last `q` steps plus one head.
fn sum_steps(data: &[u8], window: usize, step: usize, blocks: &mut Grid<'_>) {
    let last_start = data.len().saturating_sub(window);
    let (q, r) = (window / step, window % step);
    let mut last_steps = Vec::with_capacity(q);
    let mut sum = [0u64; 16];
    for s in data.chunks_exact(step).take(q) {
        let counts = nibble_counts(s);
        add_to(&mut sum, &counts);
        last_steps.push(counts);
    }
    // The block at `start` ends with the head of the step at `start + q·step`.
    let mut start = 0usize;
    let mut oldest = 0usize;
    loop {
        let head_start = start + q * step;
        // head_start + r = start + window <= len.
        let Some(head) = data.get(head_start..head_start + r) else {
            break;
        };
        let mut counts = nibble_counts(head);
        let mut block = sum;
        add_to(&mut block, &counts);
        blocks.add(&block);
        match start.checked_add(step) {
            Some(next) if next <= last_start => start = next,
            _ => break,
        }
        // The next block holds all of this step (it ends at next + window,
        // at or after head_start + step): count the rest of it.
        let Some(rest) = data.get(head_start + r..head_start + step) else {
            break;
        };
        add_to(&mut counts, &nibble_counts(rest));
        let Some(leaving) = last_steps.get_mut(oldest) else {
            break;
        };
        // The leaving step was added to `sum`: never below 0.
        for ((c, &gone), &new) in sum.iter_mut().zip(leaving.iter()).zip(&counts) {
            *c = (*c + new).saturating_sub(gone);
        }
        *leaving = counts;
        oldest = (oldest + 1) % q;
    }
}

fn add_to(sum: &mut [u64; 16], counts: &[u64; 16]) {
    for (s, &c) in sum.iter_mut().zip(counts) {
        *s += c;
    }
}

/// [`Overlap::ByteByByte`]: moves the counts one byte at a time.
fn move_byte_by_byte(counts: &mut [u64; 16], leaving: &[u8], entering: &[u8]) {
    // The leaving bytes were counted in `counts`: never below 0.
    for (&gone, &new) in leaving.iter().zip(entering) {
        let g = &mut counts[usize::from(gone >> 4)];
        *g = g.saturating_sub(1);
        counts[usize::from(new >> 4)] += 1;
    }
}

/// [`Overlap::SlideBySteps`]: counts the leaving and entering bytes.
fn move_by_recounting(counts: &mut [u64; 16], leaving: &[u8], entering: &[u8]) {
    let gone = nibble_counts(leaving);
    let new = nibble_counts(entering);
    for ((c, &g), &n) in counts.iter_mut().zip(&gone).zip(&new) {
        *c = (*c + n).saturating_sub(g);
    }
}

/// Slides a window's nibble counts over `data` (`step < window <= len`):
/// `update(counts, leaving, entering)` moves them forward by one step.
fn slide(
    data: &[u8],
    window: usize,
    step: usize,
    blocks: &mut Grid<'_>,
    update: impl Fn(&mut [u64; 16], &[u8], &[u8]),
) {
    let last_start = data.len().saturating_sub(window);
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
        update(&mut counts, leaving, entering);
        start = next;
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

    /// The blocks' parameters.
    pub fn blocks(&self) -> &EntropyHistogram {
        &self.blocks
    }

    /// What an empty input gives.
    pub fn empty(&self) -> EmptyInput {
        self.empty
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
    terms: Terms,
}

/// On the `float32` path, the term `-p·log2(p)` of each count `0..=window`.
/// The bin depends only on these terms, so caching them changes nothing but
/// the speed: a block costs 16 lookups instead of up to 16 `log2`.
enum Terms {
    /// No cache (`float64` path, or too few blocks to pay for one).
    None,
    /// EMBER's window: computed once per process.
    Ember(&'static [f32]),
    /// Other windows with many blocks: filled on first use (NaN = not yet
    /// computed; a term is never NaN).
    Lazy(Vec<f32>),
}

/// The terms for [`EMBER_WINDOW`] (index 0 is never read: zero counts are
/// dropped).
fn ember_terms() -> &'static [f32] {
    static TERMS: OnceLock<Vec<f32>> = OnceLock::new();
    TERMS.get_or_init(|| {
        let d = EMBER_WINDOW as f32;
        (0..=EMBER_WINDOW as u64)
            .map(|c| if c == 0 { 0.0 } else { entropy_term_f32(c, d) })
            .collect()
    })
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
        let terms = if window == EMBER_WINDOW {
            Terms::Ember(ember_terms())
        } else if float32 && blocks.saturating_mul(16) > window {
            Terms::Lazy(vec![f32::NAN; window + 1])
        } else {
            Terms::None
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
        let d = self.window as f32;
        let entropy = match &mut self.terms {
            Terms::None => numpy1_entropy(counts, self.window as u64),
            Terms::Ember(terms) => f64::from(entropy_f32(counts, |c| {
                let term = usize::try_from(c).ok().and_then(|i| terms.get(i));
                term.copied().unwrap_or_else(|| entropy_term_f32(c, d))
            })),
            Terms::Lazy(terms) => f64::from(entropy_f32(counts, |c| {
                let slot = usize::try_from(c).ok().and_then(|i| terms.get_mut(i));
                match slot {
                    Some(t) if !t.is_nan() => *t,
                    Some(t) => {
                        *t = entropy_term_f32(c, d);
                        *t
                    }
                    None => entropy_term_f32(c, d),
                }
            })),
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
