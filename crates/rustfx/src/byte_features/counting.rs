//! Counting byte values and high nibbles, and turning counts into
//! EMBER's normalised float32 rows.

use super::{EmptyInput, NUMPY_X86_NAN_BITS};

/// Interleaved tables or registers in the counting loops: byte `i` of each
/// group of `LANES` goes to lane `i`.
const LANES: usize = 4;

/// Counts each byte value.
///
/// Four interleaved tables, so that a run of one byte value (zero padding)
/// does not serialise on store-to-load forwarding. They hold `u16` counters,
/// flushed to `u64` every 65535 groups before any can overflow. Of 2 to 8
/// tables of `u16`, `u32` or `u64`, indexed by byte loads or by shifting
/// 8-byte words, this measured fastest on real files on one core and kept
/// its speed with the other core busy (8 tables, or shifting words, lost up
/// to a fifth there).
pub(crate) fn byte_counts(data: &[u8]) -> [u64; 256] {
    const FLUSH_GROUPS: usize = u16::MAX as usize;
    let mut counts = [0u64; 256];
    for piece in data.chunks(FLUSH_GROUPS * LANES) {
        let mut t = [[0u16; 256]; LANES];
        let mut groups = piece.chunks_exact(LANES);
        for group in &mut groups {
            for (table, &b) in t.iter_mut().zip(group) {
                // One count per table per group: at most 65535.
                table[usize::from(b)] += 1;
            }
        }
        for &b in groups.remainder() {
            counts[usize::from(b)] += 1;
        }
        for (i, c) in counts.iter_mut().enumerate() {
            *c += t.iter().map(|table| u64::from(table[i])).sum::<u64>();
        }
    }
    counts
}

/// `1 << (4 * (b >> 4))`: the high nibble of `b` as a one in the 4-bit field
/// of that nibble.
const NIBBLE_ONE_HOT: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = 1 << (4 * (b >> 4));
        b += 1;
    }
    t
};

const LOW_NIBBLES: u64 = 0x0F0F_0F0F_0F0F_0F0F;

/// Counts the high nibbles (`byte >> 4`).
///
/// No table is written per byte: each byte adds its one-hot word from
/// [`NIBBLE_ONE_HOT`] to one of four registers holding 16 4-bit counters,
/// so the loop is two loads and an add per byte. A register takes one byte
/// per group of four, so after 15 groups (a run) the fields are spread into
/// byte lanes (even and odd nibbles), and the byte lanes are flushed to
/// `u64` after four runs (at most 240 per lane).
pub(super) fn nibble_counts(data: &[u8]) -> [u64; 16] {
    const RUN: usize = 15 * LANES;
    let mut counts = [0u64; 16];
    for block in data.chunks(4 * RUN) {
        let (mut even, mut odd) = (0u64, 0u64);
        for run in block.chunks(RUN) {
            let mut acc = [0u64; LANES];
            let mut groups = run.chunks_exact(LANES);
            for group in &mut groups {
                for (a, &b) in acc.iter_mut().zip(group) {
                    *a += NIBBLE_ONE_HOT[usize::from(b)];
                }
            }
            // A short run has at most 14 groups: one more byte per register
            // still fits in 15.
            for (a, &b) in acc.iter_mut().zip(groups.remainder()) {
                *a += NIBBLE_ONE_HOT[usize::from(b)];
            }
            for a in acc {
                even += a & LOW_NIBBLES;
                odd += (a >> 4) & LOW_NIBBLES;
            }
        }
        for (m, pair) in counts.chunks_exact_mut(2).enumerate() {
            pair[0] += (even >> (8 * m)) & 0xFF;
            pair[1] += (odd >> (8 * m)) & 0xFF;
        }
    }
    counts
}

/// `counts / counts.sum()` the way EMBER's and thrember's numpy code computes
/// it: each count as `float32`, summed with numpy's float32 pairwise sum
/// (which rounds once the running sums pass 2^24), then a `float32`
/// division. Equal to [`normalise`] until the sum passes 2^24; zeros for an
/// empty input. For `ember_features`, whose contract is thrember's exact
/// output.
pub(crate) fn normalise_like_numpy_f32(counts: &[u64; 256], out: &mut [f32]) {
    let counts = counts.map(|c| c as f32);
    let total = super::numpy::numpy_sum_f32(&counts);
    if total == 0.0 {
        out.fill(0.0);
        return;
    }
    for (o, &c) in out.iter_mut().zip(&counts) {
        *o = c / total;
    }
}

/// Writes `counts / Σcounts` as the correctly rounded `float32` of the exact
/// ratio (see the module docs), or the empty-input value when the sum is 0.
pub(super) fn normalise<'a>(
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
