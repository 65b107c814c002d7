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

/// Counts summed as float64 back to integers (exact below 2^53).
fn counts_of<const N: usize>(sums: &[f64]) -> [u64; N] {
    let mut counts = [0u64; N];
    for (count, &sum) in counts.iter_mut().zip(sums) {
        *count = sum as u64;
    }
    counts
}
