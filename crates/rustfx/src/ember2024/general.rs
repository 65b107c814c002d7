//! General file information as EMBER2024 ("thrember", feature version 3)
//! computes it, without its one PE-dependent value.
//!
//! thrember's `general` group is 7 values: `size`, `entropy`, `is_pe`, and
//! the first four bytes. [`GeneralFileInfo`] gives the 6 that need no PE
//! parser, in thrember's order with `is_pe` left out:
//!
//! * `size`: the length in bytes;
//! * `entropy`: Shannon entropy of the byte values in bits, computed like
//!   pefile's `entropy_H` (which thrember copies): over the distinct byte
//!   values *in the order of their first occurrence* (Python's `Counter`),
//!   `entropy -= p * math.log(p, 2)` in float64 with `p = count / size`, and
//!   `math.log(p, 2)` is `ln(p) / ln(2)` (CPython divides two natural logs;
//!   it is not `log2`). The order and the division decide the last bits;
//! * `start_bytes`: bytes 0 to 3, 0 past the end.
//!
//! All as float32 (thrember's `np.hstack(..., dtype=np.float32)`).
//! thrember raises `IndexError` on an empty file (it reads byte 0); rustfx
//! returns zeros for it.

use crate::byte_features::byte_counts;
use crate::extractor::{fixed_row, RowExtractor};
use crate::Result;

/// Length of a [`GeneralFileInfo`] row.
pub const GENERAL_FILE_INFO_DIM: usize = 6;

/// The names of the row's values, in order.
pub const GENERAL_FILE_INFO_NAMES: [&str; GENERAL_FILE_INFO_DIM] = [
    "size",
    "entropy",
    "start_byte_0",
    "start_byte_1",
    "start_byte_2",
    "start_byte_3",
];

/// The `general_file_info` extractor (no parameters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GeneralFileInfo;

impl RowExtractor for GeneralFileInfo {
    type Value = f32;

    fn width(&self) -> usize {
        GENERAL_FILE_INFO_DIM
    }

    fn feature_names(&self) -> Option<Vec<String>> {
        Some(
            GENERAL_FILE_INFO_NAMES
                .iter()
                .map(|s| s.to_string())
                .collect(),
        )
    }

    fn write_row(&self, doc: &[u8], out: &mut [f32]) -> Result<()> {
        write_general_file_info(doc, &byte_counts(doc), fixed_row(out)?);
        Ok(())
    }
}

/// The [`GeneralFileInfo`] row of `data`, whose byte counts
/// (`byte_features::byte_counts`) the caller has (`ember_features` shares
/// them between groups).
pub(crate) fn write_general_file_info(
    data: &[u8],
    counts: &[u64; 256],
    row: &mut [f32; GENERAL_FILE_INFO_DIM],
) {
    row[0] = data.len() as f32;
    row[1] = pefile_entropy_of_counts(data, counts) as f32;
    for (slot, k) in row[2..].iter_mut().zip(0..) {
        *slot = data.get(k).map_or(0.0, |&b| f32::from(b));
    }
}

/// pefile's `entropy_H` (see the module docs); 0 for an empty input.
pub fn pefile_entropy(data: &[u8]) -> f64 {
    pefile_entropy_of_counts(data, &byte_counts(data))
}

/// [`pefile_entropy`] given the byte counts of `data`.
fn pefile_entropy_of_counts(data: &[u8], counts: &[u64; 256]) -> f64 {
    let distinct = counts.iter().filter(|&&c| c != 0).count();
    // Byte values in the order they first occur, as Python's Counter keeps;
    // the scan stops once every distinct value has been seen.
    let mut order = Vec::with_capacity(distinct);
    let mut seen = [false; 256];
    for &b in data {
        if order.len() == distinct {
            break;
        }
        if !std::mem::replace(&mut seen[usize::from(b)], true) {
            order.push(b);
        }
    }
    let size = data.len() as f64;
    let ln2 = 2f64.ln();
    order.iter().fold(0.0, |entropy, &b| {
        let p = counts[usize::from(b)] as f64 / size;
        entropy - p * (p.ln() / ln2)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, written the obvious way (a map in first-occurrence
    /// order, then the same float64 operations).
    fn naive(data: &[u8]) -> Vec<f32> {
        let mut seen: Vec<(u8, u64)> = Vec::new();
        for &b in data {
            match seen.iter_mut().find(|(v, _)| *v == b) {
                Some((_, n)) => *n += 1,
                None => seen.push((b, 1)),
            }
        }
        let mut entropy = 0.0f64;
        for &(_, n) in &seen {
            let p = n as f64 / data.len() as f64;
            entropy -= p * (p.ln() / 2f64.ln());
        }
        let byte = |k: usize| data.get(k).map_or(0.0, |&b| b as f32);
        vec![
            data.len() as f32,
            entropy as f32,
            byte(0),
            byte(1),
            byte(2),
            byte(3),
        ]
    }

    #[test]
    fn known_values() {
        assert_eq!(GeneralFileInfo.row(b""), [0.0; 6]);
        assert_eq!(GeneralFileInfo.row(b"a"), [1.0, 0.0, 97.0, 0.0, 0.0, 0.0]);
        assert_eq!(GeneralFileInfo.row(b"ab"), [2.0, 1.0, 97.0, 98.0, 0.0, 0.0]);
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(GeneralFileInfo.row(&all)[1], 8.0);
        assert_eq!(GENERAL_FILE_INFO_NAMES.len(), GeneralFileInfo.width());
    }

    #[test]
    fn wrong_row_length_is_internal() {
        let e = GeneralFileInfo.write_row(b"x", &mut [0.0; 5]).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Internal);
    }

    proptest::proptest! {
        #[test]
        fn equals_the_naive_definition(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
            offset in 0usize..8,
        ) {
            let mut buffer = vec![0u8; offset];
            buffer.extend_from_slice(&data);
            let doc = &buffer[offset..];
            let got: Vec<u32> = GeneralFileInfo.row(doc).iter().map(|v| v.to_bits()).collect();
            let want: Vec<u32> = naive(doc).iter().map(|v| v.to_bits()).collect();
            proptest::prop_assert_eq!(got, want);
        }
    }
}
