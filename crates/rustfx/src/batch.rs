//! Batch extraction for pure-Rust programs: one extractor over many
//! documents, in parallel on rayon's pool.
//!
//! The TensorFlow kernels do not use this: they run chunks on their own
//! rayon pool with the calling thread, and yield to other running calls
//! (`op_threads`, BUILD_NOTES.md).
//!
//! ```
//! use rustfx::batch::map_documents;
//! use rustfx::byte_features::{byte_histogram, EmptyInput};
//! let docs: Vec<&[u8]> = vec![b"abc", b"MZ\x90\x00"];
//! let rows = map_documents(&docs, |doc| {
//!     let mut row = [0f32; 256];
//!     byte_histogram(doc, EmptyInput::Zeros, &mut row);
//!     row
//! });
//! assert_eq!(rows.len(), 2);
//! ```

use rayon::prelude::*;

/// Below this many bytes in total a batch runs on the calling thread: the
/// hand-off to the pool would cost more than it saves.
pub const PARALLEL_MIN_BYTES: usize = 256 << 10;

/// `extract` applied to every document, in order; in parallel when the batch
/// is large enough to gain from it.
pub fn map_documents<D, T, F>(docs: &[D], extract: F) -> Vec<T>
where
    D: AsRef<[u8]> + Sync,
    T: Send,
    F: Fn(&[u8]) -> T + Sync,
{
    let total: usize = docs.iter().map(|d| d.as_ref().len()).sum();
    if docs.len() < 2 || total < PARALLEL_MIN_BYTES {
        docs.iter().map(|d| extract(d.as_ref())).collect()
    } else {
        docs.par_iter().map(|d| extract(d.as_ref())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_equals_serial_in_order() {
        let docs: Vec<Vec<u8>> = (0..64u32)
            .map(|i| (0..(i * 9000)).map(|j| (j * 31 + i) as u8).collect())
            .collect();
        assert!(docs.iter().map(Vec::len).sum::<usize>() >= PARALLEL_MIN_BYTES);
        let sums = map_documents(&docs, |d| d.iter().map(|&b| u64::from(b)).sum::<u64>());
        let serial: Vec<u64> = docs
            .iter()
            .map(|d| d.iter().map(|&b| u64::from(b)).sum())
            .collect();
        assert_eq!(sums, serial);
    }
}
