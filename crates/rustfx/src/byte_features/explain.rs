//! Explanations of the byte histograms. The contributions are counts; the
//! output is each index's count divided by the total ([`normalise`]), as
//! extraction computes it.

use super::counting::normalise;
use super::{
    ByteEntropyHistogram, ByteHistogram, EmptyInput, BYTE_ENTROPY_HISTOGRAM_DIM, BYTE_HISTOGRAM_DIM,
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
        if options.byte_offsets {
            for (offset, &b) in doc.iter().enumerate() {
                if !out.push(u64::from(b), offset as u64, 1, 1.0, &[]) {
                    break;
                }
            }
        } else {
            let mut first = [usize::MAX; BYTE_HISTOGRAM_DIM];
            let mut counts = [0u64; BYTE_HISTOGRAM_DIM];
            for (offset, &b) in doc.iter().enumerate() {
                let i = usize::from(b);
                counts[i] += 1;
                first[i] = first[i].min(offset);
            }
            for (b, (&count, &offset)) in counts.iter().zip(&first).enumerate() {
                if count > 0 && !out.push(b as u64, offset as u64, 1, count as f64, &[]) {
                    break;
                }
            }
        }
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
        self.blocks().visit_blocks(doc, |start, len, bin, counts| {
            for (nibble, &count) in counts.iter().enumerate() {
                if count > 0 {
                    let index = (bin * 16 + nibble) as u64;
                    if !out.push(index, start as u64, len as u64, count as f64, &[]) {
                        return false;
                    }
                }
            }
            true
        });
        Ok(Explanation::new(
            out,
            "count of the high nibble in blocks of that entropy bin; output = count / total",
            normalised(BYTE_ENTROPY_HISTOGRAM_DIM, self.empty()),
        ))
    }
}
