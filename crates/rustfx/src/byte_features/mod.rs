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

mod counting;
mod entropy_histogram;
mod explain;
mod histogram;
mod numpy;
mod strings;
mod strings_explain;
#[cfg(test)]
mod tests;

pub use entropy_histogram::{ByteEntropyHistogram, EntropyHistogram};
pub use histogram::{byte_histogram, ByteHistogram};
pub use strings::{string_features, StringFeatures};
// Shared with the EMBER2024 extractors: byte counts (for `ember2024::general`'s
// entropy), numpy's float64 sum and the string statistics both string groups
// start with (for `ember2024::strings`).
pub(crate) use counting::{byte_counts, normalise_like_numpy_f32};
pub(crate) use explain::{explain_byte_values, explain_entropy_blocks};
pub(crate) use numpy::numpy_sum_f64;
pub(crate) use strings::{put_string_statistics, string_statistics};

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
pub(super) const NUMPY1_FLOAT32_DIVISOR_LIMIT: u64 = 1 << 16;

/// The bits of the NaN numpy returns for `0.0f32 / 0.0f32` on x86-64.
pub(super) const NUMPY_X86_NAN_BITS: u32 = 0xFFC0_0000;

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

crate::names::named_values!(EmptyInput, "empty", {
    Zeros => "zeros",
    Nan => "nan",
});
