//! Counting byte values and high nibbles, and turning counts into
//! EMBER's normalised float32 rows.

use super::{EmptyInput, NUMPY_X86_NAN_BITS};

/// Counts each byte value. Four interleaved tables, so that a run of one
/// byte value does not serialise on store-to-load forwarding.
pub(super) fn byte_counts(data: &[u8]) -> [u64; 256] {
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
pub(super) fn nibble_counts(data: &[u8]) -> [u64; 16] {
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
