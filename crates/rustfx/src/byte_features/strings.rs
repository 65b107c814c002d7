//! EMBER's `StringExtractor`: printable runs and pattern counts.
//!
//! Strings (runs of at least 5 printable bytes) are found 64 bytes at a time
//! from a 64-bit mask of the printable bytes, with no branch per byte or per
//! run: a byte belongs to a string exactly when some window of 5 printable
//! bytes covers it, and the windows are an AND of shifted masks. Then only
//! the string bytes of a chunk are counted, one by one when they are few,
//! else the whole chunk is counted and the printable bytes outside strings
//! are taken back. A window can straddle two chunks, so a chunk is done once
//! the next chunk's mask is known; the input's last partial chunk is padded
//! with zeros (never printable).
//!
//! The four pattern counts are separate `memchr` passes: they run at many
//! GB/s, far faster than the scan.

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

/// Bytes per chunk: one bit per byte in a `u64` mask.
const CHUNK: usize = 64;

/// Bit `i` is set when `chunk[i]` is printable.
pub(super) fn printable_bits(chunk: &[u8; CHUNK]) -> u64 {
    // Multiplying the 8 high bits (moved to bits 0, 8, …, 56) by this gathers
    // them into the top byte in order; no two partial products overlap, so
    // nothing carries. (Portable SWAR: LLVM does not turn a per-byte loop
    // into a movemask here.)
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let mut bits = 0u64;
    for (k, word) in chunk.chunks_exact(8).enumerate() {
        if let Ok(&word) = <&[u8; 8]>::try_from(word) {
            let high = printable_mask(u64::from_le_bytes(word)) >> 7;
            bits |= (high.wrapping_mul(GATHER) >> 56) << (8 * k);
        }
    }
    bits
}

/// From this many string bytes in a chunk on, count the whole chunk and take
/// back the rest, rather than counting the string bytes one by one.
const COUNT_WHOLE_CHUNK_FROM: u32 = 32;

/// The string statistics of the chunks seen so far.
struct StringScan {
    /// Byte counts of string bytes (bins `0x20..=0x7F` are meaningful), in
    /// four tables so that repeated bytes do not serialise. A chunk counted
    /// whole is corrected by wrapping subtractions, so only the sum of the
    /// four tables is a count.
    tables: [[u64; 256]; 4],
    numstrings: u64,
    printables: u64,
    /// Bit `i`: the 5 bytes from byte `i` of the previous chunk are printable.
    prev_windows: u64,
    /// The string bytes of the previous chunk.
    prev_strings: u64,
}

impl StringScan {
    /// Scans all of `data`, calling `on_string` with each string in order.
    fn new<'a>(data: &'a [u8], mut on_string: impl FnMut(&'a [u8])) -> Self {
        let mut scan = StringScan {
            tables: [[0; 256]; 4],
            numstrings: 0,
            printables: 0,
            prev_windows: 0,
            prev_strings: 0,
        };
        let full = data.chunks_exact(CHUNK);
        let mut tail = [0u8; CHUNK];
        for (t, &b) in tail.iter_mut().zip(full.remainder()) {
            *t = b;
        }
        let chunks = full
            .filter_map(|c| <&[u8; CHUNK]>::try_from(c).ok())
            .chain(core::iter::once(&tail));
        // Each chunk waits for the next one's mask.
        let mut pending: Option<(&[u8; CHUNK], u64)> = None;
        let mut string_start = 0;
        let mut base = 0;
        let mut add = |scan: &mut StringScan, chunk: &[u8; CHUNK], bits: u64, next: u64| {
            // A branch per string edge, not per short printable run: binaries
            // have a run every few bytes. The zero tail closes the last string.
            let (mut edges, starts) = scan.add_chunk(chunk, bits, next);
            while edges != 0 {
                let i = edges.trailing_zeros();
                edges &= edges - 1;
                let at = base + i as usize;
                if starts >> i & 1 == 1 {
                    string_start = at;
                } else if let Some(string) = data.get(string_start..at) {
                    on_string(string);
                }
            }
            base += CHUNK;
        };
        for chunk in chunks {
            let bits = printable_bits(chunk);
            if let Some((prev, prev_bits)) = pending {
                add(&mut scan, prev, prev_bits, bits);
            }
            pending = Some((chunk, bits));
        }
        if let Some((last, bits)) = pending {
            add(&mut scan, last, bits, 0);
        }
        scan
    }

    /// Adds a chunk with printable mask `bits`, followed by a chunk with
    /// printable mask `next`; returns its string edges (bytes that start a
    /// string or end one: the first byte after it) and, among them, the
    /// starts.
    fn add_chunk(&mut self, chunk: &[u8; CHUNK], bits: u64, next: u64) -> (u64, u64) {
        // Bit i of `ahead(j)`: byte i + j is printable (into the next chunk).
        let ahead = |j: u32| (bits >> j) | (next << (64 - j));
        let windows = bits & ahead(1) & ahead(2) & ahead(3) & ahead(4);
        // Each window marks its 5 bytes; windows starting in the previous
        // chunk's last 4 bytes reach into this one.
        let w = windows;
        let p = self.prev_windows;
        let strings = w | w << 1 | w << 2 | w << 3 | w << 4 | p >> 60 | p >> 61 | p >> 62 | p >> 63;
        let edges = strings ^ (strings << 1 | self.prev_strings >> 63);
        let starts = strings & edges;
        self.prev_windows = windows;
        self.prev_strings = strings;
        if strings == 0 {
            return (edges, starts);
        }
        self.numstrings += u64::from(starts.count_ones());
        let n = strings.count_ones();
        self.printables += u64::from(n);
        let t = &mut self.tables;
        if n >= COUNT_WHOLE_CHUNK_FROM {
            for group in chunk.chunks_exact(4) {
                for (table, &b) in t.iter_mut().zip(group) {
                    table[usize::from(b)] = table[usize::from(b)].wrapping_add(1);
                }
            }
            // Non-printable bytes land in bins that are never read.
            for_each_bit(bits & !strings, |i| {
                if let Some(&b) = chunk.get(i) {
                    t[0][usize::from(b)] = t[0][usize::from(b)].wrapping_sub(1);
                }
            });
        } else {
            for_each_bit(strings, |i| {
                if let Some(&b) = chunk.get(i) {
                    t[1][usize::from(b)] = t[1][usize::from(b)].wrapping_add(1);
                }
            });
        }
        (edges, starts)
    }

    /// The count of each byte `0x20..=0x7F` in the strings (bin `k` is byte
    /// `0x20 + k`).
    fn printable_counts(&self) -> [u64; 96] {
        let mut dist = [0u64; 96];
        for (k, d) in dist.iter_mut().enumerate() {
            *d = self
                .tables
                .iter()
                .fold(0u64, |sum, t| sum.wrapping_add(t[k + 0x20]));
        }
        dist
    }
}

/// The statistics of the strings of `data`: how many, their bytes, and the
/// count of each byte `0x20..=0x7F` in them (bin `k` is byte `0x20 + k`);
/// `on_string` gets each string in order, from the same scan.
pub(crate) fn string_statistics<'a>(
    data: &'a [u8],
    on_string: impl FnMut(&'a [u8]),
) -> (u64, u64, [u64; 96]) {
    let scan = StringScan::new(data, on_string);
    (scan.numstrings, scan.printables, scan.printable_counts())
}

/// Calls `f` with the index of each set bit of `bits`, lowest first.
fn for_each_bit(mut bits: u64, mut f: impl FnMut(usize)) {
    while bits != 0 {
        f(bits.trailing_zeros() as usize);
        bits &= bits - 1;
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
    let (numstrings, printables, dist) = string_statistics(data, |_| {});

    let entropy = if printables > 0 {
        numpy1_entropy(&dist, printables)
    } else {
        0.0
    };
    let (paths, urls) = count_paths_and_urls(data);
    let registry = memmem::find_iter(data, b"HKEY_").count() as u64;
    let mz = memmem::find_iter(data, b"MZ").count() as u64;

    // The row in EMBER's order, written front to back.
    let mut row = out.iter_mut();
    let mut put = |value: f64| {
        if let Some(slot) = row.next() {
            *slot = value as f32;
        }
    };
    put_string_statistics(numstrings, printables, &dist, entropy, &mut put);
    put(paths as f64);
    put(urls as f64);
    put(registry as f64);
    put(mz as f64);
}

/// The head EMBER's and EMBER2024's string groups share, in their order:
/// `numstrings`, `avlength` (the mean length, correctly rounded float64),
/// `printables`, the 96 printable counts divided (float64) by `printables`
/// (by 1 when there are none), then `entropy`; each value as float64 for
/// `put` to round.
pub(crate) fn put_string_statistics(
    numstrings: u64,
    printables: u64,
    dist: &[u64; 96],
    entropy: f64,
    put: &mut impl FnMut(f64),
) {
    let avlength = mean_length(printables, numstrings);
    let divisor = if printables > 0 {
        printables as f64
    } else {
        1.0
    };
    put(numstrings as f64);
    put(avlength);
    put(printables as f64);
    for &count in dist {
        put(count as f64 / divisor);
    }
    put(entropy);
}

/// `avlength`: the total length of the strings over their number
/// (correctly rounded float64), 0 without strings.
pub(super) fn mean_length(total: u64, numstrings: u64) -> f64 {
    if numstrings > 0 {
        total as f64 / numstrings as f64
    } else {
        0.0
    }
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
