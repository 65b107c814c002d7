//! EMBER's byte features, for [`crate::byte_features`]: the most obvious
//! loops over EMBER's definitions (byte and nibble counts, entropy,
//! printable runs, the string features), and numpy's summation transcribed
//! with indices, written independently of the optimised code that the
//! tests compare with them.

use crate::byte_features::EmptyInput;
use core::ops::Add;

/// numpy's pairwise sum, transcribed with indices (independently of the
/// slice-pattern version in `numpy.rs`).
#[allow(clippy::needless_range_loop, clippy::manual_memcpy)]
pub fn oracle_pairwise<T: Copy + core::ops::AddAssign + Add<Output = T>>(
    a: &[T],
    neg_zero: T,
) -> T {
    let n = a.len();
    if n < 8 {
        let mut res = neg_zero;
        for i in 0..n {
            res += a[i];
        }
        res
    } else if n <= 128 {
        let mut r = [a[0]; 8];
        for j in 0..8 {
            r[j] = a[j];
        }
        let mut i = 8;
        while i < n - (n % 8) {
            for j in 0..8 {
                r[j] += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += a[i];
            i += 1;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        oracle_pairwise(&a[..n2], neg_zero) + oracle_pairwise(&a[n2..], neg_zero)
    }
}

/// EMBER's entropy of `counts / divisor` (nonzero bins only), in numpy
/// 1.x's dtype.
pub fn oracle_entropy(counts: &[u64], divisor: u64) -> f64 {
    let nonzero: Vec<u64> = counts.iter().copied().filter(|&c| c > 0).collect();
    if divisor < 65536 {
        let terms: Vec<f32> = nonzero
            .iter()
            .map(|&c| {
                let p = c as f32 / divisor as f32;
                -p * ((p as f64).log2() as f32)
            })
            .collect();
        (0.0f32 + oracle_pairwise(&terms, -0.0f32)) as f64
    } else {
        let terms: Vec<f64> = nonzero
            .iter()
            .map(|&c| {
                let p = (c as f32) as f64 / divisor as f64;
                -p * p.log2()
            })
            .collect();
        0.0f64 + oracle_pairwise(&terms, -0.0f64)
    }
}

/// numpy's `counts.astype(float32) / counts.sum()`: exact while the total
/// is at most 2^24, which holds for every test input.
pub fn oracle_normalise(counts: &[u64], empty: EmptyInput) -> Vec<f32> {
    let total: u64 = counts.iter().sum();
    assert!(total <= 1 << 24);
    if total == 0 {
        return match empty {
            EmptyInput::Zeros => vec![0.0; counts.len()],
            EmptyInput::Nan => vec![f32::from_bits(0xFFC0_0000); counts.len()],
        };
    }
    counts.iter().map(|&c| c as f32 / total as f32).collect()
}

/// How many times each byte value occurs.
pub fn oracle_byte_counts(data: &[u8]) -> Vec<u64> {
    let mut counts = vec![0u64; 256];
    for &b in data {
        counts[b as usize] += 1;
    }
    counts
}

/// How many bytes have each high nibble (`b >> 4`), EMBER's entropy
/// histogram's columns.
pub fn oracle_nibble_counts(data: &[u8]) -> Vec<u64> {
    let mut counts = vec![0u64; 16];
    for &b in data {
        counts[(b >> 4) as usize] += 1;
    }
    counts
}

/// EMBER's byte histogram: each value's count over the length.
pub fn oracle_byte_histogram(data: &[u8], empty: EmptyInput) -> Vec<f32> {
    oracle_normalise(&oracle_byte_counts(data), empty)
}

/// EMBER's byte/entropy histogram: the blocks (`window` bytes every `step`,
/// or the whole input when shorter than a window), each block's nibble
/// counts added to the row of its entropy bin (`min(floor(4·H), 15)`), the
/// grid normalised as numpy does.
pub fn oracle_entropy_histogram(
    data: &[u8],
    window: usize,
    step: usize,
    empty: EmptyInput,
) -> Vec<f32> {
    let mut blocks: Vec<&[u8]> = Vec::new();
    if data.len() < window {
        blocks.push(data);
    } else {
        let mut offset = 0;
        while offset + window <= data.len() {
            blocks.push(&data[offset..offset + window]);
            offset += step;
        }
    }
    let mut grid = vec![0u64; 256];
    for block in blocks {
        let c = oracle_nibble_counts(block);
        let h = oracle_entropy(&c, window as u64) * 2.0;
        let mut bin = (h * 2.0).floor() as usize;
        if bin == 16 {
            bin = 15;
        }
        for k in 0..16 {
            grid[bin * 16 + k] += c[k];
        }
    }
    oracle_normalise(&grid, empty)
}

/// EMBER's printable byte: `[\x20-\x7f]`.
pub fn is_printable(b: u8) -> bool {
    (0x20..=0x7f).contains(&b)
}

/// EMBER's strings: the regex `[\x20-\x7f]{5,}` over bytes, its
/// definition written out (the maximal runs of printable bytes, at least 5
/// long).
pub fn oracle_strings(data: &[u8]) -> Vec<&[u8]> {
    data.split(|&b| !is_printable(b))
        .filter(|run| run.len() >= 5)
        .collect()
}

/// EMBER's string features (104 values): numstrings, avlength, printables,
/// the 96-bin distribution of the strings' bytes, its entropy, then the
/// counts of `c:\` and `http://` or `https://` (any case), `HKEY_` and `MZ`
/// at every offset.
pub fn oracle_string_features(data: &[u8]) -> Vec<f32> {
    let strings = oracle_strings(data);
    let count = |pattern: &[u8], case_insensitive: bool| -> u64 {
        let mut n = 0;
        for start in 0..data.len() {
            if let Some(s) = data.get(start..start + pattern.len()) {
                if s == pattern || (case_insensitive && s.eq_ignore_ascii_case(pattern)) {
                    n += 1;
                }
            }
        }
        n
    };
    let mut dist = vec![0u64; 96];
    let mut lengths = 0u64;
    for s in &strings {
        lengths += s.len() as u64;
        for &b in *s {
            dist[(b - 0x20) as usize] += 1;
        }
    }
    let printables: u64 = dist.iter().sum();
    assert_eq!(printables, lengths);
    let numstrings = strings.len() as f64;
    let (avlength, entropy) = if strings.is_empty() {
        (0.0, 0.0)
    } else {
        (
            lengths as f64 / numstrings,
            oracle_entropy(&dist, printables),
        )
    };
    let divisor = if printables > 0 {
        printables as f64
    } else {
        1.0
    };
    let mut v = vec![numstrings, avlength, printables as f64];
    v.extend(dist.iter().map(|&c| c as f64 / divisor));
    v.push(entropy);
    v.push(count(b"c:\\", true) as f64);
    v.push((count(b"http://", true) + count(b"https://", true)) as f64);
    v.push(count(b"HKEY_", false) as f64);
    v.push(count(b"MZ", false) as f64);
    v.into_iter().map(|x| x as f32).collect()
}
