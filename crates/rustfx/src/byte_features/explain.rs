//! Explanations of the byte histograms. The contributions are counts; the
//! output is each index's count divided by the total ([`normalise`]), as
//! extraction computes it.

use super::counting::normalise;
use super::{
    ByteEntropyHistogram, ByteHistogram, EmptyInput, EntropyHistogram, BYTE_ENTROPY_HISTOGRAM_DIM,
    BYTE_HISTOGRAM_DIM,
};
use crate::explain::{
    float32_row, sums_by_index, Contribution, Contributions, Explain, ExplainOptions, Explanation,
};
use crate::Result;

/// The finishing step of both histograms: summed counts, normalised.
fn normalised(width: usize, empty: EmptyInput) -> crate::explain::Assemble {
    Box::new(move |contributions: &[Contribution]| {
        // Counts are integers: their f64 sums are exact up to 2^53.
        let counts: Vec<u64> = sums_by_index(contributions, width)?
            .into_iter()
            .map(|sum| sum as u64)
            .collect();
        let mut row = vec![0.0f32; width];
        normalise(counts.iter(), empty, &mut row);
        Ok(float32_row(row))
    })
}

impl Explain for ByteHistogram {
    /// Index: the byte value. By default one contribution per byte value
    /// present (its count, at its first offset, length 1); with
    /// `byte_offsets`, one per byte (value 1).
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        let mut out = Contributions::new(options);
        explain_byte_values(doc, 0, options.byte_offsets, &mut out);
        Ok(Explanation::new(
            out,
            "count of the byte value; output = count / length",
            normalised(BYTE_HISTOGRAM_DIM, self.empty()),
        ))
    }
}

impl Explain for ByteEntropyHistogram {
    /// Index: `entropy_bin * 16 + high_nibble`. One contribution per block
    /// and high nibble present: the block's span, the nibble's count in it.
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        let mut out = Contributions::new(options);
        explain_entropy_blocks(self.blocks(), doc, 0, &mut out);
        Ok(Explanation::new(
            out,
            "count of the high nibble in blocks of that entropy bin; output = count / total",
            normalised(BYTE_ENTROPY_HISTOGRAM_DIM, self.empty()),
        ))
    }
}

/// The byte histogram's contributions, indices from `base` (also
/// `ember_features`' histogram group): one per byte value present (its
/// count, at its first offset), or with `byte_offsets` one per byte.
/// `false` once the cap stopped it.
pub(crate) fn explain_byte_values(
    doc: &[u8],
    base: u64,
    byte_offsets: bool,
    out: &mut Contributions,
) -> bool {
    if byte_offsets {
        return (0u64..)
            .zip(doc)
            .all(|(offset, &b)| out.push(base + u64::from(b), offset, 1, 1.0, &[]));
    }
    let mut first = [0u64; BYTE_HISTOGRAM_DIM];
    let mut counts = [0u64; BYTE_HISTOGRAM_DIM];
    for (offset, &b) in (0u64..).zip(doc) {
        let i = usize::from(b);
        if counts[i] == 0 {
            first[i] = offset;
        }
        counts[i] += 1;
    }
    (0u64..)
        .zip(counts.iter().zip(&first))
        .filter(|(_, (&count, _))| count > 0)
        .all(|(b, (&count, &offset))| out.push(base + b, offset, 1, count as f64, &[]))
}

/// The entropy histogram's contributions over `blocks`, indices from
/// `base` (also `ember_features`' byteentropy group): one per block and
/// high nibble present, `bin * 16 + nibble`, the block's span, the
/// nibble's count. `false` once the cap stopped it.
pub(crate) fn explain_entropy_blocks(
    blocks: &EntropyHistogram,
    doc: &[u8],
    base: u64,
    out: &mut Contributions,
) -> bool {
    let mut more = true;
    blocks.visit_blocks(doc, |start, len, bin, counts| {
        for (nibble, &count) in (0u64..).zip(counts) {
            let index = base + bin as u64 * 16 + nibble;
            if count > 0 && !out.push(index, start as u64, len as u64, count as f64, &[]) {
                more = false;
                return false;
            }
        }
        true
    });
    more
}
