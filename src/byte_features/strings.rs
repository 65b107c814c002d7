//! EMBER's `StringExtractor`: printable runs and pattern counts.

use super::numpy::numpy1_entropy;
use super::{EmptyInput, STRING_FEATURES_DIM};
use crate::extractor::{fixed_row, RowExtractor};
use crate::Result;
use memchr::memmem;

pub(super) const ONES: u64 = 0x0101_0101_0101_0101;
pub(super) const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` that is in `0x20..=0x7F`: the high bit
/// is clear and bit 5 or 6 is set (`(b & 0x60) + 0x60` reaches 0x80 exactly
/// when `b & 0x60 != 0`, with no carry between bytes).
pub(super) fn printable_mask(w: u64) -> u64 {
    let bits_5_6 = 0x60 * ONES;
    !w & HIGH_BITS & ((w & bits_5_6) + bits_5_6)
}

pub(super) fn is_printable(b: u8) -> bool {
    (0x20..=0x7F).contains(&b)
}

/// The first index at or after `i` whose byte has `printable(b) == want`, or
/// `data.len()`.
pub(super) fn find_class(data: &[u8], mut i: usize, want: bool) -> usize {
    while let Some(word) = data.get(i..).and_then(|s| s.first_chunk::<8>()) {
        let printable = printable_mask(u64::from_le_bytes(*word));
        let hits = if want {
            printable
        } else {
            !printable & HIGH_BITS
        };
        if hits != 0 {
            return i + (hits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&b) = data.get(i) {
        if is_printable(b) == want {
            return i;
        }
        i += 1;
    }
    data.len()
}

/// Adds the bytes of `run` (all in `0x20..=0x7F`) to four interleaved
/// 128-entry tables.
pub(super) fn count_printables(run: &[u8], t: &mut [[u64; 128]; 4]) {
    let mut chunks = run.chunks_exact(4);
    for chunk in &mut chunks {
        if let &[a, b, c, d] = chunk {
            t[0][usize::from(a & 0x7F)] += 1;
            t[1][usize::from(b & 0x7F)] += 1;
            t[2][usize::from(c & 0x7F)] += 1;
            t[3][usize::from(d & 0x7F)] += 1;
        }
    }
    for &b in chunks.remainder() {
        t[0][usize::from(b & 0x7F)] += 1;
    }
}

/// Occurrences of `c:\` (ASCII-case-insensitive) and of `http://` or
/// `https://` (ASCII-case-insensitive). Neither pattern can overlap itself,
/// so every occurrence is a regex `findall` match.
pub(super) fn count_paths_and_urls(data: &[u8]) -> (u64, u64) {
    let (mut paths, mut urls) = (0u64, 0u64);
    for i in memchr::memchr_iter(b':', data) {
        let Some(after) = data.get(i + 1..) else {
            continue;
        };
        if after.first() == Some(&b'\\') {
            let before = i.checked_sub(1).and_then(|j| data.get(j));
            if before.is_some_and(|b| b.eq_ignore_ascii_case(&b'c')) {
                paths += 1;
            }
        } else if after.starts_with(b"//") {
            let ends_with = |prefix: &[u8]| {
                i.checked_sub(prefix.len())
                    .and_then(|j| data.get(j..i))
                    .is_some_and(|s| s.eq_ignore_ascii_case(prefix))
            };
            if ends_with(b"http") || ends_with(b"https") {
                urls += 1;
            }
        }
    }
    (paths, urls)
}

/// EMBER's `StringExtractor` (104 values, in EMBER's order; see the module
/// docs). Computed in `float64` like EMBER, except the entropy, which
/// follows EMBER's numpy dtype (`float32` when `printables < 65536`), and
/// returned as `float32`.
///
/// `empty` has no effect: EMBER's string features of an empty input (or of
/// any input without strings) are all zeros, never NaN. It is accepted so
/// that the three EMBER byte features share one calling convention.
pub fn string_features(data: &[u8], empty: EmptyInput, out: &mut [f32; STRING_FEATURES_DIM]) {
    let _ = empty;
    let mut tables = [[0u64; 128]; 4];
    let (mut numstrings, mut printables) = (0u64, 0u64);
    let mut i = 0;
    while i < data.len() {
        let start = find_class(data, i, true);
        if start >= data.len() {
            break;
        }
        let end = find_class(data, start, false);
        if let Some(run) = data.get(start..end) {
            if run.len() >= 5 {
                numstrings += 1;
                printables += run.len() as u64;
                count_printables(run, &mut tables);
            }
        }
        // data[start] is printable, so end > start: the loop advances.
        i = end.max(start + 1);
    }
    // Bin k counts byte 0x20 + k.
    let mut dist = [0u64; 96];
    for (k, d) in dist.iter_mut().enumerate() {
        let b = k + 0x20;
        *d = tables[0][b] + tables[1][b] + tables[2][b] + tables[3][b];
    }

    let avlength = if numstrings > 0 {
        printables as f64 / numstrings as f64
    } else {
        0.0
    };
    let entropy = if printables > 0 {
        numpy1_entropy(&dist, printables)
    } else {
        0.0
    };
    let (paths, urls) = count_paths_and_urls(data);
    let registry = memmem::find_iter(data, b"HKEY_").count() as u64;
    let mz = memmem::find_iter(data, b"MZ").count() as u64;

    let divisor = if printables > 0 {
        printables as f64
    } else {
        1.0
    };
    // The row in EMBER's order, written front to back.
    let mut row = out.iter_mut();
    let mut put = |value: f64| {
        if let Some(slot) = row.next() {
            *slot = value as f32;
        }
    };
    put(numstrings as f64);
    put(avlength);
    put(printables as f64);
    for &count in &dist {
        put(count as f64 / divisor);
    }
    put(entropy);
    put(paths as f64);
    put(urls as f64);
    put(registry as f64);
    put(mz as f64);
}

/// The `string_features` extractor (no parameters: an input without strings
/// gives zeros, as in EMBER).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StringFeatures;

impl RowExtractor for StringFeatures {
    type Value = f32;

    fn width(&self) -> usize {
        STRING_FEATURES_DIM
    }

    fn write_row(&self, doc: &[u8], out: &mut [f32]) -> Result<()> {
        string_features(doc, EmptyInput::Zeros, fixed_row(out)?);
        Ok(())
    }
}
