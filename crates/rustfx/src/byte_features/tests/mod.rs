//! The optimised byte features against the naive oracles, at every
//! alignment and length around every block boundary, plus known values.
//!
//! Helpers here; the tests by what they test: histograms.rs (the byte
//! and entropy histograms), counts.rs (byte and nibble counting),
//! numerics.rs (log2 and numpy's sums), printable.rs (printable runs and
//! the string features) and properties.rs (proptest).

use super::counting::{byte_counts, nibble_counts};
use super::entropy_histogram::Overlap;
use super::numpy::*;
use super::strings::*;
use super::*;
use crate::oracles::byte_features::*;
use proptest::prelude::*;

mod counts;
mod histograms;
mod numerics;
mod printable;
mod properties;

// -- Helpers ---------------------------------------------------------

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

const OVERLAPS: [Overlap; 3] = [
    Overlap::ByteByByte,
    Overlap::SumSteps,
    Overlap::SlideBySteps,
];

/// The entropy histogram, after checking that every way of counting
/// overlapping blocks gives the same bits as the default one.
fn entropy_histogram(data: &[u8], window: usize, step: usize, empty: EmptyInput) -> Vec<f32> {
    let params = EntropyHistogram::new(window, step).unwrap();
    let mut out = [1.5f32; 256];
    params.compute(data, empty, &mut out);
    for overlap in OVERLAPS {
        let mut other = [2.5f32; 256];
        params.compute_with(data, empty, &mut other, overlap);
        assert_eq!(
            bits(&other),
            bits(&out),
            "{overlap:?} len {} window {window} step {step}",
            data.len()
        );
    }
    out.to_vec()
}

fn check_all(data: &[u8], params: &[(usize, usize)]) {
    for empty in [EmptyInput::Zeros, EmptyInput::Nan] {
        let mut out = [1.5f32; 256];
        byte_histogram(data, empty, &mut out);
        assert_eq!(
            bits(&out),
            bits(&oracle_byte_histogram(data, empty)),
            "byte_histogram len {}",
            data.len()
        );
        for &(w, s) in params {
            assert_eq!(
                bits(&entropy_histogram(data, w, s, empty)),
                bits(&oracle_entropy_histogram(data, w, s, empty)),
                "entropy histogram len {} window {w} step {s}",
                data.len()
            );
        }
        let mut sf = [1.5f32; 104];
        string_features(data, empty, &mut sf);
        assert_eq!(
            bits(&sf),
            bits(&oracle_string_features(data)),
            "strings len {}",
            data.len()
        );
    }
}

/// Deterministic mixture of random bytes, printable runs of every
/// length and the patterns the string features count.
fn mixed_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    const PATTERNS: &[&[u8]] = &[
        b"MZ",
        b"MZMZ",
        b"HKEY_",
        b"hkey_",
        b"c:\\",
        b"C:\\",
        b"http://",
        b"HtTpS://",
        b"https:/",
        b"://",
        b":\\",
        b"xhttp://",
        b"httpss://",
        b"\x7f\x7f\x7f",
        b"\x1f",
        b"\x80",
    ];
    let mut v = Vec::with_capacity(len + 16);
    while v.len() < len {
        let r = next();
        match r % 5 {
            0 => v.extend((0..r % 13).map(|_| next() as u8)),
            1 | 2 => v.extend((0..(r >> 8) % 12).map(|_| 0x20 + (next() % 96) as u8)),
            3 => v.extend_from_slice(PATTERNS[((r >> 8) as usize) % PATTERNS.len()]),
            _ => v.extend((0..(r >> 8) % 9).map(|_| ((next() % 4) as u8) << 4)),
        }
    }
    v.truncate(len);
    v
}

const SMALL_PARAMS: &[(usize, usize)] = &[
    (1, 1),
    (2, 1),
    (3, 2),
    (4, 4),
    (5, 7),
    (8, 3),
    (16, 8),
    (16, 16),
    (32, 5),
    (64, 1),
    (7, 64),
];

/// The entropy histogram against the oracle for inputs of the `lengths`
/// given and of `w + k·s - 1`, `w + k·s`, `w + k·s + 1` for each `k`, at
/// `offsets` alignments.
fn check_around_boundaries(
    w: usize,
    s: usize,
    lengths: &[usize],
    steps: std::ops::Range<usize>,
    seed: u64,
    offsets: usize,
) {
    let mut lengths = lengths.to_vec();
    for k in steps {
        lengths.extend([w + k * s - 1, w + k * s, w + k * s + 1]);
    }
    for (i, &len) in lengths.iter().enumerate() {
        let data = mixed_bytes(i as u64 + seed, len + offsets);
        for offset in 0..offsets {
            let d = &data[offset..offset + len];
            assert_eq!(
                bits(&entropy_histogram(d, w, s, EmptyInput::Nan)),
                bits(&oracle_entropy_histogram(d, w, s, EmptyInput::Nan)),
                "len {len} window {w} step {s}"
            );
        }
    }
}

/// The strings `string_statistics` hands out, in order.
fn scanned_strings(data: &[u8]) -> Vec<&[u8]> {
    let mut strings = Vec::new();
    super::string_statistics(data, |s| strings.push(s));
    strings
}
