//! EMBER-compatible byte features: the byte histogram, the byte/entropy
//! histogram and the string statistics of EMBER (Anderson & Roth, 2018;
//! elastic/ember `features.py`: `ByteHistogram`, `ByteEntropyHistogram`,
//! `StringExtractor`), as `float32`.
//!
//! Written from the definitions (EMBER's code is AGPL and is not used here);
//! the numerical details below were established by testing numpy itself. An
//! independent numpy reference for parity tests is
//! `tests/python/ember_reference.py` (its default `exact=True` equals rustfx
//! bit for bit).
//!
//! # Definitions
//!
//! * [`byte_histogram`] (256): the count of each byte value, divided by the
//!   total count.
//! * [`EntropyHistogram`] (256, EMBER: window 2048, step 1024): blocks start at
//!   `0, step, 2*step, …` while `offset + window <= len`; an input shorter than
//!   `window` is one block (the whole input). For each block count the high
//!   nibbles (`byte >> 4`) into 16 bins, take `p = count / window` (the window,
//!   even for a short block), `H = 2 * Σ_{count>0} -p·log2(p)`,
//!   `bin = min(floor(2·H), 15)` and add the 16 nibble counts to row `bin` of a
//!   16×16 grid (`out[bin * 16 + nibble]`). Then normalise like the byte
//!   histogram.
//! * [`string_features`] (104): strings are the maximal runs of at least 5
//!   bytes in `0x20..=0x7F` (the regex `[\x20-\x7f]{5,}` over bytes). Output,
//!   in EMBER's order: `numstrings`, `avlength` (mean string length),
//!   `printables` (total string bytes), `printabledist` (96 values: the count
//!   of each byte `0x20..=0x7F` in the strings divided by `printables`),
//!   `entropy` (base 2, over those 96 bins), then `paths` (`c:\`,
//!   ASCII-case-insensitive), `urls` (`http://` or `https://`,
//!   ASCII-case-insensitive), `registry` (`HKEY_`) and `MZ` (`MZ`). The four
//!   pattern counts are over the **whole input**, not over the strings. With
//!   no strings EMBER gives `numstrings = avlength = printables = entropy = 0`
//!   and an all-zero `printabledist` (no NaN).
//!
//! # numpy semantics reproduced (bit for bit)
//!
//! * **Division.** EMBER converts the integer counts to a `float32` array
//!   *before* summing, so the total is a `float32` scalar and
//!   `counts / total` is a `float32 ÷ float32` division: correctly rounded in
//!   `float32` (numpy does not go through `float64` here). rustfx sums the
//!   integer counts exactly (`u64`) and computes `(count as f64 / total as
//!   f64) as f32`, which is the correctly rounded `float32` of the exact ratio
//!   (rounding first to `f64` and then to `f32` is innocuous for a quotient:
//!   53 ≥ 2·24 + 2). While the total is at most 2^24 every count and every
//!   partial sum is exact in `float32`, so this is numpy's result bit for bit.
//!   Beyond 2^24 (a 16 MiB input for the byte histogram; about 8 MiB for the
//!   entropy histogram with step = window / 2) numpy's `float32` sum — pairwise,
//!   with 8 accumulators per block of at most 128 values — and its `float32`
//!   conversion of large counts can differ from the exact value in the last
//!   ulp; rustfx is then the exact value.
//! * **Value-based casting.** `float32_array / python_int` and
//!   `float32_array / numpy_int64` follow numpy 1.x's value-based casting,
//!   because EMBER's code needs numpy ≤ 1.23 (it uses `np.int`, removed in
//!   1.24): the result is `float32` when the integer is below 65536 and
//!   `float64` otherwise (`min_scalar_type` is `uint16` vs `uint32`). So the
//!   entropy histogram works in `float32` for `window < 65536` (EMBER's 2048)
//!   and in `float64` above, and the string entropy works in `float32` when
//!   `printables < 65536` and in `float64` above. (numpy 2, NEP 50, would
//!   give `float32` for every window and `float64` for every string entropy.)
//! * **log2.** numpy's `float32` `log2` is not correctly rounded, and which
//!   function it is depends on the machine: with AVX-512 numpy (≥ 1.22) uses
//!   Intel SVML, which differs from the correctly rounded result for 301 of the
//!   2048 values `c / 2048`; without it numpy calls libm's `log2f` (glibc
//!   2.36: 10 of 2048; also what Rust's `f32::log2` calls on Linux). There is
//!   therefore no single "numpy float32 log2" to copy. rustfx uses the
//!   correctly rounded `float32` log2, computed as `(p as f64).log2() as f32`.
//!   An exhaustive check over every `float32` in (0, 1) found the `f64` log2
//!   never closer than 2.69 `f64` ulps to a `float32` rounding midpoint, so any
//!   libm whose `f64` log2 errs by less than that gives this exact value:
//!   rustfx is the same on every platform. A one-ulp difference in one term
//!   can only move a block to another bin when `2·H` is within a few ulps of an
//!   integer, which real data almost never hits; the string entropy can differ
//!   from a given numpy by an ulp (on 400 random inputs against numpy with
//!   AVX-512: no bin moved, 7 string entropies one ulp apart). The `float64`
//!   paths use `f64::log2`.
//! * **Summation order.** `np.sum` of the nonzero terms is reproduced exactly:
//!   below 8 values a sequential sum, up to 128 values 8 strided accumulators
//!   combined as `((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7))` then the remainder in
//!   order, above that recursive halves (at a multiple of 8); then `0.0 +`
//!   that (the reduction's identity, which turns `-0.0` into `0.0`). Zero
//!   counts are dropped first (EMBER's `np.where(c)`), which matters: they
//!   shift which accumulator a term lands in.
//! * **Empty input.** EMBER divides 0 by 0 and returns NaN in both
//!   histograms. NaN poisons a model (every weight that touches it, and every
//!   gradient), so rustfx defaults to [`EmptyInput::Zeros`];
//!   [`EmptyInput::Nan`] reproduces EMBER, with the NaN bit pattern numpy
//!   returns on x86-64 (`0xFFC0_0000`, the quiet NaN SSE makes for 0/0).

use crate::{Error, Result};
use core::ops::Add;
use memchr::memmem;

/// Length of the [`byte_histogram`] output.
pub const BYTE_HISTOGRAM_DIM: usize = 256;
/// Length of the [`EntropyHistogram::compute`] output (a 16×16 grid).
pub const BYTE_ENTROPY_HISTOGRAM_DIM: usize = 256;
/// Length of the [`string_features`] output.
pub const STRING_FEATURES_DIM: usize = 104;

/// EMBER's entropy-histogram window (bytes).
pub const EMBER_WINDOW: usize = 2048;
/// EMBER's entropy-histogram step (bytes).
pub const EMBER_STEP: usize = 1024;
/// The largest window (and the largest step) [`EntropyHistogram::new`]
/// accepts: 2^24 bytes, so that every per-block count is exact in `float32`.
pub const MAX_WINDOW: usize = 1 << 24;

/// Below this divisor numpy 1.x's value-based casting keeps a
/// `float32_array / integer` in `float32`; from it on the result is `float64`.
const NUMPY1_FLOAT32_DIVISOR_LIMIT: u64 = 1 << 16;

/// The bits of the NaN numpy returns for `0.0f32 / 0.0f32` on x86-64.
const NUMPY_X86_NAN_BITS: u32 = 0xFFC0_0000;

/// What the two histograms return for an empty input (where EMBER computes
/// 0 / 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EmptyInput {
    /// All zeros: the rustfx default, because a NaN feature poisons a model
    /// (its activations, its loss and its gradients).
    #[default]
    Zeros,
    /// All NaN, exactly as EMBER (numpy's 0/0) returns.
    Nan,
}

// ---------------------------------------------------------------------------
// Counting
// ---------------------------------------------------------------------------

/// Counts each byte value. Four interleaved tables, so that a run of one
/// byte value does not serialise on store-to-load forwarding.
fn byte_counts(data: &[u8]) -> [u64; 256] {
    let mut t = [[0u64; 256]; 4];
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        if let &[a, b, c, d] = chunk {
            t[0][usize::from(a)] += 1;
            t[1][usize::from(b)] += 1;
            t[2][usize::from(c)] += 1;
            t[3][usize::from(d)] += 1;
        }
    }
    for &b in chunks.remainder() {
        t[0][usize::from(b)] += 1;
    }
    let mut counts = [0u64; 256];
    for (i, c) in counts.iter_mut().enumerate() {
        *c = t[0][i] + t[1][i] + t[2][i] + t[3][i];
    }
    counts
}

/// Counts the high nibbles (`byte >> 4`), with four interleaved tables.
fn nibble_counts(data: &[u8]) -> [u64; 16] {
    let mut t = [[0u64; 16]; 4];
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        if let &[a, b, c, d] = chunk {
            t[0][usize::from(a >> 4)] += 1;
            t[1][usize::from(b >> 4)] += 1;
            t[2][usize::from(c >> 4)] += 1;
            t[3][usize::from(d >> 4)] += 1;
        }
    }
    for &b in chunks.remainder() {
        t[0][usize::from(b >> 4)] += 1;
    }
    let mut counts = [0u64; 16];
    for (i, c) in counts.iter_mut().enumerate() {
        *c = t[0][i] + t[1][i] + t[2][i] + t[3][i];
    }
    counts
}

/// Writes `counts / Σcounts` as the correctly rounded `float32` of the exact
/// ratio (see the module docs), or the empty-input value when the sum is 0.
fn normalise<'a>(
    counts: impl Iterator<Item = &'a u64> + Clone,
    empty: EmptyInput,
    out: &mut [f32],
) {
    let total: u128 = counts.clone().map(|&c| u128::from(c)).sum();
    if total == 0 {
        let fill = match empty {
            EmptyInput::Zeros => 0.0,
            EmptyInput::Nan => f32::from_bits(NUMPY_X86_NAN_BITS),
        };
        out.fill(fill);
        return;
    }
    let total = total as f64;
    for (o, &c) in out.iter_mut().zip(counts) {
        *o = (c as f64 / total) as f32;
    }
}

// ---------------------------------------------------------------------------
// numpy's float arithmetic
// ---------------------------------------------------------------------------

/// numpy's pairwise summation (`np.add.reduce` on a contiguous float array),
/// in the same order of operations, starting from `-0.0` like numpy.
fn numpy_pairwise_sum<T: Copy + Add<Output = T>>(a: &[T], neg_zero: T) -> T {
    if a.len() < 8 {
        a.iter().fold(neg_zero, |acc, &x| acc + x)
    } else if a.len() <= 128 {
        let Some((first, rest)) = a.split_first_chunk::<8>() else {
            return neg_zero; // unreachable: a.len() >= 8
        };
        let mut r = *first;
        let mut blocks = rest.chunks_exact(8);
        for block in &mut blocks {
            for (acc, &x) in r.iter_mut().zip(block) {
                *acc = *acc + x;
            }
        }
        let [r0, r1, r2, r3, r4, r5, r6, r7] = r;
        let mut res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7));
        for &x in blocks.remainder() {
            res = res + x;
        }
        res
    } else {
        let half = a.len() / 2;
        let split = half - half % 8;
        let (lo, hi) = a.split_at(split);
        numpy_pairwise_sum(lo, neg_zero) + numpy_pairwise_sum(hi, neg_zero)
    }
}

/// `np.sum` of a float32 array: the reduction starts from its identity 0.0.
fn numpy_sum_f32(a: &[f32]) -> f32 {
    0.0 + numpy_pairwise_sum(a, -0.0f32)
}

/// `np.sum` of a float64 array.
fn numpy_sum_f64(a: &[f64]) -> f64 {
    0.0 + numpy_pairwise_sum(a, -0.0f64)
}

/// The correctly rounded `float32` log2 of `p` in (0, 1] (see the module
/// docs for why going through `f64` is exact for every such `float32`).
fn log2_f32(p: f32) -> f32 {
    (f64::from(p)).log2() as f32
}

/// `-p·log2(p)` in `float32` for `p = count / divisor` (EMBER's term).
fn entropy_term_f32(count: u64, divisor: f32) -> f32 {
    let p = count as f32 / divisor;
    -p * log2_f32(p)
}

/// `np.sum` of the `float32` terms of the nonzero `counts`, in bin order.
fn entropy_f32<const N: usize>(counts: &[u64; N], mut term: impl FnMut(u64) -> f32) -> f32 {
    let mut terms = [0f32; N];
    let mut n = 0;
    for (t, &c) in terms.iter_mut().zip(counts.iter().filter(|&&c| c != 0)) {
        *t = term(c);
        n += 1;
    }
    numpy_sum_f32(terms.get(..n).unwrap_or(&[]))
}

/// EMBER's entropy of the nonzero `counts` over `divisor` in bits:
/// `Σ -p·log2(p)` with `p = count / divisor`, in numpy 1.x's dtype for
/// `float32_array / divisor` (`float32` below 65536, else `float64`).
/// `N` is the number of bins (16 or 96).
fn numpy1_entropy<const N: usize>(counts: &[u64; N], divisor: u64) -> f64 {
    if divisor < NUMPY1_FLOAT32_DIVISOR_LIMIT {
        let d = divisor as f32;
        f64::from(entropy_f32(counts, |c| entropy_term_f32(c, d)))
    } else {
        let d = divisor as f64;
        let mut terms = [0f64; N];
        let mut n = 0;
        for (t, &c) in terms.iter_mut().zip(counts.iter().filter(|&&c| c != 0)) {
            // `c.astype(np.float32)` first, then promoted to float64.
            let p = f64::from(c as f32) / d;
            *t = -p * p.log2();
            n += 1;
        }
        numpy_sum_f64(terms.get(..n).unwrap_or(&[]))
    }
}

// ---------------------------------------------------------------------------
// Byte histogram
// ---------------------------------------------------------------------------

/// EMBER's `ByteHistogram`: the count of each byte value divided by the
/// total, as `float32` (bit-identical to EMBER for inputs up to 16 MiB, the
/// exact ratio beyond; see the module docs). `empty` says what an empty
/// input gives.
pub fn byte_histogram(data: &[u8], empty: EmptyInput, out: &mut [f32; BYTE_HISTOGRAM_DIM]) {
    let counts = byte_counts(data);
    normalise(counts.iter(), empty, out);
}

// ---------------------------------------------------------------------------
// Byte/entropy histogram
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// String features
// ---------------------------------------------------------------------------

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` that is in `0x20..=0x7F`: the high bit
/// is clear and bit 5 or 6 is set (`(b & 0x60) + 0x60` reaches 0x80 exactly
/// when `b & 0x60 != 0`, with no carry between bytes).
fn printable_mask(w: u64) -> u64 {
    let bits_5_6 = 0x60 * ONES;
    !w & HIGH_BITS & ((w & bits_5_6) + bits_5_6)
}

fn is_printable(b: u8) -> bool {
    (0x20..=0x7F).contains(&b)
}

/// The first index at or after `i` whose byte has `printable(b) == want`, or
/// `data.len()`.
fn find_class(data: &[u8], mut i: usize, want: bool) -> usize {
    while let Some(word) = data.get(i..).and_then(|s| s.first_chunk::<8>()) {
        let printable = printable_mask(u64::from_le_bytes(*word));
        let hits = if want {
            printable
        } else {
            !printable & HIGH_BITS
        };
        if hits != 0 {
            return i + (hits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&b) = data.get(i) {
        if is_printable(b) == want {
            return i;
        }
        i += 1;
    }
    data.len()
}

/// Adds the bytes of `run` (all in `0x20..=0x7F`) to four interleaved
/// 128-entry tables.
fn count_printables(run: &[u8], t: &mut [[u64; 128]; 4]) {
    let mut chunks = run.chunks_exact(4);
    for chunk in &mut chunks {
        if let &[a, b, c, d] = chunk {
            t[0][usize::from(a & 0x7F)] += 1;
            t[1][usize::from(b & 0x7F)] += 1;
            t[2][usize::from(c & 0x7F)] += 1;
            t[3][usize::from(d & 0x7F)] += 1;
        }
    }
    for &b in chunks.remainder() {
        t[0][usize::from(b & 0x7F)] += 1;
    }
}

/// Occurrences of `c:\` (ASCII-case-insensitive) and of `http://` or
/// `https://` (ASCII-case-insensitive). Neither pattern can overlap itself,
/// so every occurrence is a regex `findall` match.
fn count_paths_and_urls(data: &[u8]) -> (u64, u64) {
    let (mut paths, mut urls) = (0u64, 0u64);
    for i in memchr::memchr_iter(b':', data) {
        let Some(after) = data.get(i + 1..) else {
            continue;
        };
        if after.first() == Some(&b'\\') {
            let before = i.checked_sub(1).and_then(|j| data.get(j));
            if before.is_some_and(|b| b.eq_ignore_ascii_case(&b'c')) {
                paths += 1;
            }
        } else if after.starts_with(b"//") {
            let ends_with = |prefix: &[u8]| {
                i.checked_sub(prefix.len())
                    .and_then(|j| data.get(j..i))
                    .is_some_and(|s| s.eq_ignore_ascii_case(prefix))
            };
            if ends_with(b"http") || ends_with(b"https") {
                urls += 1;
            }
        }
    }
    (paths, urls)
}

/// EMBER's `StringExtractor` (104 values, in EMBER's order; see the module
/// docs). Computed in `float64` like EMBER, except the entropy, which
/// follows EMBER's numpy dtype (`float32` when `printables < 65536`), and
/// returned as `float32`.
///
/// `empty` has no effect: EMBER's string features of an empty input (or of
/// any input without strings) are all zeros, never NaN. It is accepted so
/// that the three EMBER byte features share one calling convention.
pub fn string_features(data: &[u8], empty: EmptyInput, out: &mut [f32; STRING_FEATURES_DIM]) {
    let _ = empty;
    let mut tables = [[0u64; 128]; 4];
    let (mut numstrings, mut printables) = (0u64, 0u64);
    let mut i = 0;
    while i < data.len() {
        let start = find_class(data, i, true);
        if start >= data.len() {
            break;
        }
        let end = find_class(data, start, false);
        if let Some(run) = data.get(start..end) {
            if run.len() >= 5 {
                numstrings += 1;
                printables += run.len() as u64;
                count_printables(run, &mut tables);
            }
        }
        // data[start] is printable, so end > start: the loop advances.
        i = end.max(start + 1);
    }
    // Bin k counts byte 0x20 + k.
    let mut dist = [0u64; 96];
    for (k, d) in dist.iter_mut().enumerate() {
        let b = k + 0x20;
        *d = tables[0][b] + tables[1][b] + tables[2][b] + tables[3][b];
    }

    let avlength = if numstrings > 0 {
        printables as f64 / numstrings as f64
    } else {
        0.0
    };
    let entropy = if printables > 0 {
        numpy1_entropy(&dist, printables)
    } else {
        0.0
    };
    let (paths, urls) = count_paths_and_urls(data);
    let registry = memmem::find_iter(data, b"HKEY_").count() as u64;
    let mz = memmem::find_iter(data, b"MZ").count() as u64;

    out[0] = numstrings as f64 as f32;
    out[1] = avlength as f32;
    out[2] = printables as f64 as f32;
    let divisor = if printables > 0 {
        printables as f64
    } else {
        1.0
    };
    for (o, &c) in out[3..99].iter_mut().zip(&dist) {
        *o = (c as f64 / divisor) as f32;
    }
    out[99] = entropy as f32;
    out[100] = paths as f64 as f32;
    out[101] = urls as f64 as f32;
    out[102] = registry as f64 as f32;
    out[103] = mz as f64 as f32;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // -- Naive oracles: the most obvious loops over the definitions --------

    /// numpy's pairwise sum, transcribed with indices (independently of the
    /// slice-pattern version above).
    #[allow(clippy::needless_range_loop, clippy::manual_memcpy)]
    fn oracle_pairwise<T: Copy + core::ops::AddAssign + Add<Output = T>>(
        a: &[T],
        neg_zero: T,
    ) -> T {
        let n = a.len();
        if n < 8 {
            let mut res = neg_zero;
            for i in 0..n {
                res += a[i];
            }
            res
        } else if n <= 128 {
            let mut r = [a[0]; 8];
            for j in 0..8 {
                r[j] = a[j];
            }
            let mut i = 8;
            while i < n - (n % 8) {
                for j in 0..8 {
                    r[j] += a[i + j];
                }
                i += 8;
            }
            let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            while i < n {
                res += a[i];
                i += 1;
            }
            res
        } else {
            let mut n2 = n / 2;
            n2 -= n2 % 8;
            oracle_pairwise(&a[..n2], neg_zero) + oracle_pairwise(&a[n2..], neg_zero)
        }
    }

    /// EMBER's entropy of `counts / divisor` (nonzero bins only), in numpy
    /// 1.x's dtype.
    fn oracle_entropy(counts: &[u64], divisor: u64) -> f64 {
        let nonzero: Vec<u64> = counts.iter().copied().filter(|&c| c > 0).collect();
        if divisor < 65536 {
            let terms: Vec<f32> = nonzero
                .iter()
                .map(|&c| {
                    let p = c as f32 / divisor as f32;
                    -p * ((p as f64).log2() as f32)
                })
                .collect();
            (0.0f32 + oracle_pairwise(&terms, -0.0f32)) as f64
        } else {
            let terms: Vec<f64> = nonzero
                .iter()
                .map(|&c| {
                    let p = (c as f32) as f64 / divisor as f64;
                    -p * p.log2()
                })
                .collect();
            0.0f64 + oracle_pairwise(&terms, -0.0f64)
        }
    }

    /// numpy's `counts.astype(float32) / counts.sum()`: exact while the total
    /// is at most 2^24, which holds for every test input.
    fn oracle_normalise(counts: &[u64], empty: EmptyInput) -> Vec<f32> {
        let total: u64 = counts.iter().sum();
        assert!(total <= 1 << 24);
        if total == 0 {
            return match empty {
                EmptyInput::Zeros => vec![0.0; counts.len()],
                EmptyInput::Nan => vec![f32::from_bits(0xFFC0_0000); counts.len()],
            };
        }
        counts.iter().map(|&c| c as f32 / total as f32).collect()
    }

    fn oracle_byte_histogram(data: &[u8], empty: EmptyInput) -> Vec<f32> {
        let mut counts = vec![0u64; 256];
        for &b in data {
            counts[b as usize] += 1;
        }
        oracle_normalise(&counts, empty)
    }

    fn oracle_entropy_histogram(
        data: &[u8],
        window: usize,
        step: usize,
        empty: EmptyInput,
    ) -> Vec<f32> {
        let mut blocks: Vec<&[u8]> = Vec::new();
        if data.len() < window {
            blocks.push(data);
        } else {
            let mut offset = 0;
            while offset + window <= data.len() {
                blocks.push(&data[offset..offset + window]);
                offset += step;
            }
        }
        let mut grid = vec![0u64; 256];
        for block in blocks {
            let mut c = [0u64; 16];
            for &b in block {
                c[(b >> 4) as usize] += 1;
            }
            let h = oracle_entropy(&c, window as u64) * 2.0;
            let mut bin = (h * 2.0).floor() as usize;
            if bin == 16 {
                bin = 15;
            }
            for k in 0..16 {
                grid[bin * 16 + k] += c[k];
            }
        }
        oracle_normalise(&grid, empty)
    }

    fn oracle_string_features(data: &[u8]) -> Vec<f32> {
        let printable = |b: u8| (0x20..=0x7f).contains(&b);
        let mut strings: Vec<&[u8]> = Vec::new();
        let mut i = 0;
        while i < data.len() {
            if printable(data[i]) {
                let start = i;
                while i < data.len() && printable(data[i]) {
                    i += 1;
                }
                if i - start >= 5 {
                    strings.push(&data[start..i]);
                }
            } else {
                i += 1;
            }
        }
        let count = |pattern: &[u8], case_insensitive: bool| -> u64 {
            let mut n = 0;
            for start in 0..data.len() {
                if let Some(s) = data.get(start..start + pattern.len()) {
                    if s == pattern || (case_insensitive && s.eq_ignore_ascii_case(pattern)) {
                        n += 1;
                    }
                }
            }
            n
        };
        let mut dist = vec![0u64; 96];
        let mut lengths = 0u64;
        for s in &strings {
            lengths += s.len() as u64;
            for &b in *s {
                dist[(b - 0x20) as usize] += 1;
            }
        }
        let printables: u64 = dist.iter().sum();
        assert_eq!(printables, lengths);
        let numstrings = strings.len() as f64;
        let (avlength, entropy) = if strings.is_empty() {
            (0.0, 0.0)
        } else {
            (
                lengths as f64 / numstrings,
                oracle_entropy(&dist, printables),
            )
        };
        let divisor = if printables > 0 {
            printables as f64
        } else {
            1.0
        };
        let mut v = vec![numstrings, avlength, printables as f64];
        v.extend(dist.iter().map(|&c| c as f64 / divisor));
        v.push(entropy);
        v.push(count(b"c:\\", true) as f64);
        v.push((count(b"http://", true) + count(b"https://", true)) as f64);
        v.push(count(b"HKEY_", false) as f64);
        v.push(count(b"MZ", false) as f64);
        v.into_iter().map(|x| x as f32).collect()
    }

    // -- Helpers ---------------------------------------------------------

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    fn entropy_histogram(data: &[u8], window: usize, step: usize, empty: EmptyInput) -> Vec<f32> {
        let mut out = [1.5f32; 256];
        EntropyHistogram::new(window, step)
            .unwrap()
            .compute(data, empty, &mut out);
        out.to_vec()
    }

    fn check_all(data: &[u8], params: &[(usize, usize)]) {
        for empty in [EmptyInput::Zeros, EmptyInput::Nan] {
            let mut out = [1.5f32; 256];
            byte_histogram(data, empty, &mut out);
            assert_eq!(
                bits(&out),
                bits(&oracle_byte_histogram(data, empty)),
                "byte_histogram len {}",
                data.len()
            );
            for &(w, s) in params {
                assert_eq!(
                    bits(&entropy_histogram(data, w, s, empty)),
                    bits(&oracle_entropy_histogram(data, w, s, empty)),
                    "entropy histogram len {} window {w} step {s}",
                    data.len()
                );
            }
            let mut sf = [1.5f32; 104];
            string_features(data, empty, &mut sf);
            assert_eq!(
                bits(&sf),
                bits(&oracle_string_features(data)),
                "strings len {}",
                data.len()
            );
        }
    }

    /// Deterministic mixture of random bytes, printable runs of every
    /// length and the patterns the string features count.
    fn mixed_bytes(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        const PATTERNS: &[&[u8]] = &[
            b"MZ",
            b"MZMZ",
            b"HKEY_",
            b"hkey_",
            b"c:\\",
            b"C:\\",
            b"http://",
            b"HtTpS://",
            b"https:/",
            b"://",
            b":\\",
            b"xhttp://",
            b"httpss://",
            b"\x7f\x7f\x7f",
            b"\x1f",
            b"\x80",
        ];
        let mut v = Vec::with_capacity(len + 16);
        while v.len() < len {
            let r = next();
            match r % 5 {
                0 => v.extend((0..r % 13).map(|_| next() as u8)),
                1 | 2 => v.extend((0..(r >> 8) % 12).map(|_| 0x20 + (next() % 96) as u8)),
                3 => v.extend_from_slice(PATTERNS[((r >> 8) as usize) % PATTERNS.len()]),
                _ => v.extend((0..(r >> 8) % 9).map(|_| ((next() % 4) as u8) << 4)),
            }
        }
        v.truncate(len);
        v
    }

    const SMALL_PARAMS: &[(usize, usize)] = &[
        (1, 1),
        (2, 1),
        (3, 2),
        (4, 4),
        (5, 7),
        (8, 3),
        (16, 8),
        (16, 16),
        (32, 5),
        (64, 1),
        (7, 64),
    ];

    // -- Tests -----------------------------------------------------------

    #[test]
    fn every_alignment_and_tail_length() {
        let buf = mixed_bytes(1, 16 + 80);
        let buf2: Vec<u8> = (0..96u32).map(|i| (i * 37 + 11) as u8).collect();
        for b in [&buf, &buf2] {
            for offset in 0..16 {
                for len in 0..=70 {
                    check_all(&b[offset..offset + len], SMALL_PARAMS);
                }
            }
        }
    }

    #[test]
    fn lengths_around_window_and_step_boundaries() {
        for &(w, s) in &[
            (EMBER_WINDOW, EMBER_STEP),
            (100, 30),
            (64, 64),
            (50, 120),
            (37, 1),
        ] {
            let mut lengths = vec![0, 1, w - 1, w, w + 1];
            for k in 1..4 {
                lengths.extend([w + k * s - 1, w + k * s, w + k * s + 1]);
            }
            for (i, &len) in lengths.iter().enumerate() {
                let data = mixed_bytes(i as u64 + 7, len + 3);
                for offset in 0..3 {
                    let d = &data[offset..offset + len];
                    assert_eq!(
                        bits(&entropy_histogram(d, w, s, EmptyInput::Nan)),
                        bits(&oracle_entropy_histogram(d, w, s, EmptyInput::Nan)),
                        "len {len} window {w} step {s}"
                    );
                }
            }
        }
    }

    #[test]
    fn larger_inputs_with_ember_parameters() {
        for seed in 0..4 {
            let data = mixed_bytes(seed, 50_000 + seed as usize * 777);
            check_all(
                &data,
                &[(EMBER_WINDOW, EMBER_STEP), (256, 100), (1000, 3000)],
            );
        }
    }

    #[test]
    fn numpy1_float64_paths_from_65536() {
        // The entropy histogram switches to float64 at window 65536 and the
        // string entropy at 65536 printables (numpy 1.x value-based casting).
        let data = mixed_bytes(99, 220_000);
        for (w, s) in [
            (65535, 40_000),
            (65536, 40_000),
            (65536, 65536),
            (70_000, 1 << 24),
        ] {
            assert_eq!(
                bits(&entropy_histogram(&data, w, s, EmptyInput::Zeros)),
                bits(&oracle_entropy_histogram(&data, w, s, EmptyInput::Zeros)),
                "window {w} step {s}"
            );
        }
        let mut sf = [0f32; 104];
        string_features(&data, EmptyInput::Zeros, &mut sf);
        assert!(sf[2] >= 65536.0, "printables {}", sf[2]);
        assert_eq!(bits(&sf), bits(&oracle_string_features(&data)));
        // And just below and at the switch.
        for total in [65535usize, 65536] {
            let mut text: Vec<u8> = (0..total)
                .map(|i| b"abcdefghij0123456789 ~"[i * 7 % 22])
                .collect();
            text.push(0);
            string_features(&text, EmptyInput::Zeros, &mut sf);
            assert_eq!(sf[2], total as f32);
            assert_eq!(bits(&sf), bits(&oracle_string_features(&text)));
        }
    }

    #[test]
    fn empty_input_in_both_modes() {
        let mut out = [1.5f32; 256];
        byte_histogram(b"", EmptyInput::Zeros, &mut out);
        assert!(out.iter().all(|&x| x.to_bits() == 0));
        byte_histogram(b"", EmptyInput::Nan, &mut out);
        assert!(out.iter().all(|&x| x.to_bits() == 0xFFC0_0000));
        let h = EntropyHistogram::default();
        h.compute(b"", EmptyInput::Zeros, &mut out);
        assert!(out.iter().all(|&x| x.to_bits() == 0));
        h.compute(b"", EmptyInput::Nan, &mut out);
        assert!(out.iter().all(|&x| x.is_nan()));
        // EMBER's string features of an empty input are zeros, never NaN.
        for empty in [EmptyInput::Zeros, EmptyInput::Nan] {
            let mut sf = [1.5f32; 104];
            string_features(b"", empty, &mut sf);
            assert!(sf.iter().all(|&x| x.to_bits() == 0));
        }
        assert_eq!(EmptyInput::default(), EmptyInput::Zeros);
    }

    #[test]
    fn known_values() {
        let mut out = [0f32; 256];
        byte_histogram(b"aab", EmptyInput::Zeros, &mut out);
        assert_eq!(out[b'a' as usize], 2.0f32 / 3.0);
        assert_eq!(out[b'b' as usize], 1.0f32 / 3.0);
        assert_eq!(out.iter().filter(|&&x| x != 0.0).count(), 2);

        // One nibble only: H = 0, bin 0.
        let h = EntropyHistogram::new(16, 16).unwrap();
        h.compute(&[0x05; 40], EmptyInput::Zeros, &mut out);
        assert_eq!(out[0], 1.0);
        // All 16 nibbles equally: H = 8 bits, 2H = 16, clamped to bin 15.
        let uniform: Vec<u8> = (0..16u8).map(|n| n << 4 | n).collect();
        h.compute(&uniform, EmptyInput::Zeros, &mut out);
        for (i, &x) in out.iter().enumerate() {
            assert_eq!(x, if i >= 15 * 16 { 1.0 / 16.0 } else { 0.0 }, "index {i}");
        }
        // Two nibbles half and half: H = 2, bin 4. A short block still
        // divides by the window: 8 bytes in a window of 16 give p = 1/4 each,
        // H = 2·(2·0.5) = 2 as well.
        h.compute(&[0x00, 0x10].repeat(8), EmptyInput::Zeros, &mut out);
        assert_eq!((out[4 * 16], out[4 * 16 + 1]), (0.5, 0.5));
        h.compute(&[0x00, 0x10].repeat(4), EmptyInput::Zeros, &mut out);
        assert_eq!((out[4 * 16], out[4 * 16 + 1]), (0.5, 0.5));

        let data = b"hello\x00abcd\x00C:\\Windows\x00HTTPS://a.b\x00MZ\x00c:\\ HKEY_x";
        let mut sf = [0f32; 104];
        string_features(data, EmptyInput::Zeros, &mut sf);
        // Strings: "hello", "C:\Windows", "HTTPS://a.b", "c:\ HKEY_x".
        assert_eq!(sf[0], 4.0);
        assert_eq!(sf[2], 36.0);
        assert_eq!(sf[1], 9.0);
        assert_eq!(sf[3 + (b'l' - 0x20) as usize], (2.0f64 / 36.0) as f32);
        assert_eq!(&sf[100..], &[2.0, 1.0, 1.0, 1.0]);
        assert_eq!(bits(&sf), bits(&oracle_string_features(data)));
    }

    #[test]
    fn log2_is_correctly_rounded_where_glibc_log2f_is_not() {
        // p = c / 2048 where glibc 2.36's log2f is one ulp off; the expected
        // bits are the correctly rounded results (from an 80-bit log2l).
        let cases = [
            (782, 0xbfb1c9f0u32),
            (1630, 0xbea89fbe),
            (1887, 0xbdf1e993),
            (1993, 0xbd20ddc7),
            (2013, 0xbccbb91d),
            (2014, 0xbcc5da7b),
            (2015, 0xbcbffc98),
            (2029, 0xbc5c502e),
            (2038, 0xbbe76588),
            (2043, 0xbb671d0b),
        ];
        for (c, expected) in cases {
            assert_eq!(log2_f32(c as f32 / 2048.0).to_bits(), expected, "c = {c}");
        }
        assert_eq!(log2_f32(1.0), 0.0);
        assert_eq!(log2_f32(0.5), -1.0);
    }

    #[test]
    fn pairwise_sum_follows_numpy_order() {
        // Values whose sum depends on the order: 1 + 2^-24 + ... in float32.
        let mut rng = 12345u64;
        for n in 0..400 {
            let a: Vec<f32> = (0..n)
                .map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let m = (rng % 1000) as f32;
                    if rng % 3 == 0 {
                        m * 1e7
                    } else {
                        m * 1e-3
                    }
                })
                .collect();
            assert_eq!(
                numpy_sum_f32(&a).to_bits(),
                (0.0 + oracle_pairwise(&a, -0.0f32)).to_bits(),
                "n = {n}"
            );
            let b: Vec<f64> = a.iter().map(|&x| x as f64 * 1.000_000_1).collect();
            assert_eq!(
                numpy_sum_f64(&b).to_bits(),
                (0.0 + oracle_pairwise(&b, -0.0f64)).to_bits()
            );
        }
        // 8 accumulators then a sequential remainder: 8 ones, then 2^24.
        let mut a = vec![1.0f32; 8];
        a.push(16_777_216.0);
        assert_eq!(numpy_sum_f32(&a), 16_777_224.0);
        assert_eq!(numpy_sum_f32(&[-0.0]).to_bits(), 0.0f32.to_bits());
    }

    #[test]
    fn parameter_validation() {
        assert!(EntropyHistogram::new(EMBER_WINDOW, EMBER_STEP).is_ok());
        assert!(EntropyHistogram::new(MAX_WINDOW, MAX_WINDOW).is_ok());
        let e = EntropyHistogram::new(0, 1).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        assert!(
            e.message().contains("window must be in 1..=16777216"),
            "{e}"
        );
        let e = EntropyHistogram::new(MAX_WINDOW + 1, 1).unwrap_err();
        assert!(e.message().contains("got 16777217"), "{e}");
        let e = EntropyHistogram::new(1, 0).unwrap_err();
        assert!(e.message().contains("step must be in 1..=16777216"), "{e}");
        assert!(EntropyHistogram::new(1, usize::MAX).is_err());
        let d = EntropyHistogram::default();
        assert_eq!((d.window(), d.step()), (2048, 1024));
    }

    #[test]
    fn printable_mask_matches_the_byte_class() {
        for b in 0..=255u8 {
            let w = u64::from_le_bytes([b, 0, 0x20, 0x7f, 0x80, b, 0x1f, b]);
            let m = printable_mask(w);
            assert_eq!(m & 0x80 != 0, is_printable(b), "byte {b:#x}");
            assert_eq!(m >> 8 & 0xff, 0);
            assert_eq!(m >> 16 & 0xff, 0x80);
            assert_eq!(m >> 24 & 0xff, 0x80);
            assert_eq!(m >> 32 & 0xff, 0);
            assert_eq!(m >> 48 & 0xff, 0);
            assert_eq!(m >> 40 & 0x80 != 0, is_printable(b));
            assert_eq!(m >> 56 & 0x80 != 0, is_printable(b));
        }
    }

    fn token() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..8),
            proptest::collection::vec(0x20u8..=0x7f, 0..12),
            proptest::sample::select(vec![
                b"MZ".to_vec(),
                b"HKEY_".to_vec(),
                b"c:\\".to_vec(),
                b"C:\\".to_vec(),
                b"http://".to_vec(),
                b"hTTps://".to_vec(),
                b"://".to_vec(),
                b":".to_vec(),
            ]),
            proptest::collection::vec(prop_oneof![Just(0u8), Just(0x10), Just(0xf0)], 0..20),
        ]
    }

    proptest! {
        #[test]
        fn prop_histograms_equal_oracles(
            data in proptest::collection::vec(any::<u8>(), 0..700),
            window in 1usize..80,
            step in 1usize..80,
        ) {
            check_all(&data, &[(window, step)]);
        }

        #[test]
        fn prop_structured_inputs_equal_oracles(
            tokens in proptest::collection::vec(token(), 0..60),
            window in 1usize..40,
            step in 1usize..40,
        ) {
            let data = tokens.concat();
            check_all(&data, &[(window, step)]);
        }

        #[test]
        fn prop_outputs_are_distributions(data in proptest::collection::vec(any::<u8>(), 1..3000)) {
            let mut out = [0f32; 256];
            byte_histogram(&data, EmptyInput::Nan, &mut out);
            let s: f64 = out.iter().map(|&x| x as f64).sum();
            prop_assert!((s - 1.0).abs() < 1e-5);
            EntropyHistogram::default().compute(&data, EmptyInput::Nan, &mut out);
            let s: f64 = out.iter().map(|&x| x as f64).sum();
            prop_assert!((s - 1.0).abs() < 1e-5);
        }
    }
}
