//! `general_file_info`'s explanation, and that of `ember_features`'
//! `general` group (the same values with `is_pe` between).

use crate::ember2024::general::{GeneralFileInfo, GENERAL_FILE_INFO_DIM};
use crate::explain::sums_from;
use crate::explain::{
    float32_row, Contribution, Contributions, Explain, ExplainOptions, Explanation,
};
use crate::Result;

/// What the contributions of the general values mean.
pub(super) const GENERAL_COMBINE: &str = "size: the length (whole document); entropy: each byte \
     value's term -p*log2(p) at its first offset, summed in first-occurrence order (pefile's \
     entropy_H); start_byte_k: byte k's value at offset k; output = sum as float32";

impl Explain for GeneralFileInfo {
    fn explain(&self, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
        let mut out = Contributions::new(options);
        explain_general(doc, [0, 1, 2, 3, 4, 5], &mut out);
        Ok(Explanation::new(
            out,
            GENERAL_COMBINE,
            Box::new(|contributions: &[Contribution]| {
                let mut row = [0f32; GENERAL_FILE_INFO_DIM];
                assemble_general(contributions, 0, &mut row)?;
                Ok(float32_row(row.to_vec()))
            }),
        ))
    }
}

/// Pushes the contributions of the general values of `doc`, value `k` of
/// a `general_file_info` row at row index `at[k]`. `false` once the cap
/// stopped it.
pub(super) fn explain_general(
    doc: &[u8],
    at: [u64; GENERAL_FILE_INFO_DIM],
    out: &mut Contributions,
) -> bool {
    let [size_at, entropy_at, start_at @ ..] = at;
    let length = doc.len() as u64;
    if !out.push(size_at, 0, length, doc.len() as f64, &[]) {
        return false;
    }
    // pefile's entropy_H: one term per distinct byte value, in the order of
    // first occurrence (Python's Counter). `e - t` and `e + (-t)` are the
    // same float64 operation, so summing the negated terms from 0 is
    // extraction's fold.
    let mut counts = [0u64; 256];
    let mut first = [0usize; 256];
    let mut order = Vec::new();
    for (offset, &b) in doc.iter().enumerate() {
        let i = usize::from(b);
        if counts[i] == 0 {
            first[i] = offset;
            order.push(b);
        }
        counts[i] += 1;
    }
    let size = doc.len() as f64;
    let ln2 = 2f64.ln();
    for b in order {
        let i = usize::from(b);
        let p = counts[i] as f64 / size;
        let term = -(p * (p.ln() / ln2));
        if !out.push(entropy_at, first[i] as u64, 1, term, &[]) {
            return false;
        }
    }
    for ((&index, &b), offset) in start_at.iter().zip(doc).zip(0u64..) {
        if !out.push(index, offset, 1, f64::from(b), &[]) {
            return false;
        }
    }
    true
}

/// Each sum as float32 (thrember's `np.hstack(..., dtype=np.float32)`):
/// the values of `row`, whose first index in the output is `base`.
pub(super) fn assemble_general(
    contributions: &[Contribution],
    base: u64,
    row: &mut [f32],
) -> Result<()> {
    let sums = sums_from(contributions, base, row.len())?;
    for (slot, sum) in row.iter_mut().zip(sums) {
        *slot = sum as f32;
    }
    Ok(())
}
