//! Explanations of the EMBER2024 groups: `general_file_info`,
//! `ember2024_string_features`, and `ember_features`, which composes its
//! groups' explanations (the PE groups' are in `pe_groups/explain.rs`).
//!
//! Each explanation walks the document by its own simple path (a byte loop,
//! a naive string scan, every entropy block counted from scratch) and its
//! `assemble` finishes the sums with extraction's own functions (the
//! entropy's summation order, `put_string_statistics`, numpy's float32
//! normalisation), so that reassembly equals extraction bit for bit.

mod features;
mod general;
mod strings;
#[cfg(test)]
mod tests;

use crate::explain::Contribution;
use crate::{Error, ErrorKind, Result};

/// The sums of the contributions at indices `base..base + width`, in the
/// order they were made, indexed from 0. An index outside is an `Internal`
/// error (a bug in rustfx).
fn group_sums(contributions: &[Contribution], base: u64, width: usize) -> Result<Vec<f64>> {
    let mut sums = vec![0.0f64; width];
    for c in contributions {
        let slot = c
            .index
            .checked_sub(base)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| sums.get_mut(i))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Internal,
                    format!(
                        "contribution to index {} outside {base}..{base}+{width} (a bug in rustfx)",
                        c.index
                    ),
                )
            })?;
        *slot += c.value;
    }
    Ok(sums)
}

/// Counts summed as float64 back to integers (exact below 2^53).
fn counts_of<const N: usize>(sums: &[f64]) -> [u64; N] {
    let mut counts = [0u64; N];
    for (count, &sum) in counts.iter_mut().zip(sums) {
        *count = sum as u64;
    }
    counts
}
