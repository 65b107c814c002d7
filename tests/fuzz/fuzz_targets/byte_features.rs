//! Fuzz target `byte_features`: EMBER's byte histogram, byte/entropy
//! histogram (random window and step, valid and invalid) and string features
//! on arbitrary bytes, each against a naive oracle written from the module's
//! documented definitions.
//!
//! Checks:
//! - `EntropyHistogram::new` is `Err(InvalidArgument)` exactly when window or
//!   step is outside `1..=MAX_WINDOW`, and never panics;
//! - byte histogram: equals `(count / len) as f32` for every byte value,
//!   bit for bit;
//! - entropy histogram: the block enumeration (starts `0, step, ...` while
//!   `start + window <= len`, or the whole input when shorter than a window)
//!   and binning (`bin = min(floor(4·Σ -p·log2 p), 15)`, `p = count/window`)
//!   computed in f64 give the whole 16x16 grid bit for bit; blocks whose
//!   `4·H` is within 1e-4 of an integer (float32 rounding may move them to
//!   the neighbouring bin) may go to either bin, and the grid recovered from
//!   the output must be explained by such an assignment;
//! - string features: `numstrings`, `avlength`, `printables`, the 96-bin
//!   distribution and the four pattern counts equal the naive values exactly,
//!   the entropy within 1e-5;
//! - every value is finite and in range, except the documented all-NaN
//!   histograms of an empty input with `EmptyInput::Nan` (string features are
//!   all zeros there).
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use rustfx::byte_features::{
    byte_histogram, string_features, EmptyInput, EntropyHistogram, BYTE_ENTROPY_HISTOGRAM_DIM,
    BYTE_HISTOGRAM_DIM, EMBER_STEP, EMBER_WINDOW, MAX_WINDOW, STRING_FEATURES_DIM,
};
use rustfx::ember2024::strings::Ember2024Strings;
use rustfx::extractor::RowExtractor;
use rustfx::ember2024::general::GeneralFileInfo;
use rustfx::ErrorKind;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Size {
    /// 0..=255 (0 is invalid).
    Small(u8),
    /// 0..=65535 and one past it (around numpy 1.x's float32/float64 switch).
    Medium(u16),
    AtF64Switch,
    Ember,
    EmberStep,
    Max,
    MaxPlus1,
    Any(u64),
}

fn size(s: Size) -> usize {
    match s {
        Size::Small(x) => usize::from(x),
        Size::Medium(x) => usize::from(x),
        Size::AtF64Switch => 1 << 16,
        Size::Ember => EMBER_WINDOW,
        Size::EmberStep => EMBER_STEP,
        Size::Max => MAX_WINDOW,
        Size::MaxPlus1 => MAX_WINDOW + 1,
        Size::Any(x) => x as usize,
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    nan: bool,
    window: Size,
    step: Size,
    data: Vec<u8>,
}

/// Shannon entropy of `counts / divisor` in bits, in f64.
fn entropy(counts: &[u64], divisor: u64) -> f64 {
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / divisor as f64;
            -p * p.log2()
        })
        .sum()
}

fn nibbles(block: &[u8]) -> [u64; 16] {
    let mut c = [0u64; 16];
    for &b in block {
        c[usize::from(b >> 4)] += 1;
    }
    c
}

fn check_entropy_histogram(h: &EntropyHistogram, data: &[u8], empty: EmptyInput) {
    let (window, step) = (h.window(), h.step());
    let mut out = [0.5f32; BYTE_ENTROPY_HISTOGRAM_DIM];
    h.compute(data, empty, &mut out);
    if data.is_empty() {
        match empty {
            EmptyInput::Zeros => assert!(out.iter().all(|&v| v == 0.0)),
            EmptyInput::Nan => assert!(out.iter().all(|v| v.is_nan())),
        }
        return;
    }
    // Naive blocks.
    let mut blocks: Vec<&[u8]> = Vec::new();
    if data.len() < window {
        blocks.push(data);
    } else {
        let mut start = 0usize;
        while start + window <= data.len() {
            blocks.push(&data[start..start + window]);
            start += step;
        }
    }
    // Each block's bin from the f64 entropy. Where 4·H is within 1e-4 of an
    // integer (but not exactly one), float32 rounding may legitimately put
    // the block in the neighbouring bin: such blocks get two candidates.
    let mut fixed = [[0u64; 16]; 16];
    let mut loose = [[0u64; 16]; 16];
    let mut loose_columns = [0u64; 16];
    let mut columns = [0u64; 16];
    let mut ambiguous = false;
    for block in &blocks {
        let counts = nibbles(block);
        let x = 4.0 * entropy(&counts, window as u64);
        let lo = ((x - 1e-4).max(0.0) as usize).min(15);
        let hi = ((x + 1e-4) as usize).min(15);
        let bin = (x as usize).min(15);
        for n in 0..16 {
            columns[n] += counts[n];
        }
        if lo == hi || x == x.round() {
            for n in 0..16 {
                fixed[bin][n] += counts[n];
            }
        } else {
            ambiguous = true;
            for n in 0..16 {
                loose[lo][n] += counts[n];
                loose[hi][n] += counts[n];
                loose_columns[n] += counts[n];
            }
        }
    }
    let total: u64 = columns.iter().sum();
    assert!(total > 0);
    assert!(
        out.iter().all(|v| v.is_finite() && (0.0..=1.0).contains(v)),
        "{out:?}"
    );
    if !ambiguous {
        for bin in 0..16 {
            for n in 0..16 {
                let want = (fixed[bin][n] as f64 / total as f64) as f32;
                assert_eq!(
                    out[bin * 16 + n].to_bits(),
                    want.to_bits(),
                    "entropy histogram [{bin}][{n}] window {window} step {step} len {}",
                    data.len()
                );
            }
        }
    } else if total < 1 << 23 {
        // Recover the integer grid from the float output (exact below 2^23)
        // and check that it is the fixed blocks plus some assignment of the
        // ambiguous ones to their candidate bins (necessary conditions).
        for n in 0..16 {
            let mut residual_column = 0u64;
            for bin in 0..16 {
                let g = (f64::from(out[bin * 16 + n]) * total as f64).round() as u64;
                assert!(
                    g >= fixed[bin][n],
                    "grid [{bin}][{n}] below the sure blocks"
                );
                let residual = g - fixed[bin][n];
                assert!(residual <= loose[bin][n], "grid [{bin}][{n}] not explained");
                residual_column += residual;
            }
            assert_eq!(residual_column, loose_columns[n], "nibble {n} column");
        }
    }
}

fn check_strings(data: &[u8]) {
    let mut out = [0.5f32; STRING_FEATURES_DIM];
    string_features(data, EmptyInput::Nan, &mut out);
    assert!(out.iter().all(|v| v.is_finite() && *v >= 0.0), "{out:?}");

    let printable = |b: u8| (0x20..=0x7f).contains(&b);
    let (mut numstrings, mut printables) = (0u64, 0u64);
    let mut dist = [0u64; 96];
    for run in data.split(|&b| !printable(b)) {
        if run.len() >= 5 {
            numstrings += 1;
            printables += run.len() as u64;
            for &b in run {
                dist[usize::from(b - 0x20)] += 1;
            }
        }
    }
    let count =
        |pred: &dyn Fn(&[u8]) -> bool| (0..data.len()).filter(|&i| pred(&data[i..])).count();
    let starts_ci = |s: &[u8], p: &[u8]| s.len() >= p.len() && s[..p.len()].eq_ignore_ascii_case(p);
    let paths = count(&|s| starts_ci(s, b"c:\\"));
    let urls = count(&|s| starts_ci(s, b"http://") || starts_ci(s, b"https://"));
    let registry = count(&|s| s.starts_with(b"HKEY_"));
    let mz = count(&|s| s.starts_with(b"MZ"));

    assert_eq!(out[0], numstrings as f32, "numstrings");
    let avlength = if numstrings > 0 {
        (printables as f64 / numstrings as f64) as f32
    } else {
        0.0
    };
    assert_eq!(out[1], avlength, "avlength");
    assert_eq!(out[2], printables as f32, "printables");
    for k in 0..96 {
        let want = if printables > 0 {
            (dist[k] as f64 / printables as f64) as f32
        } else {
            0.0
        };
        assert_eq!(out[3 + k], want, "printabledist[{k}]");
    }
    let e = if printables > 0 {
        entropy(&dist, printables)
    } else {
        0.0
    };
    assert!(
        (f64::from(out[99]) - e).abs() <= 1e-5 * e.max(1.0),
        "string entropy {} vs naive {e}",
        out[99]
    );
    assert_eq!(out[100], paths as f32, "paths");
    assert_eq!(out[101], urls as f32, "urls");
    assert_eq!(out[102], registry as f32, "registry");
    assert_eq!(out[103], mz as f32, "MZ");
}

fuzz_target!(|input: Input| {
    let data = &input.data[..];
    let empty = if input.nan {
        EmptyInput::Nan
    } else {
        EmptyInput::Zeros
    };

    // Byte histogram.
    let mut hist = [0.5f32; BYTE_HISTOGRAM_DIM];
    byte_histogram(data, empty, &mut hist);
    if data.is_empty() {
        match empty {
            EmptyInput::Zeros => assert!(hist.iter().all(|&v| v == 0.0)),
            EmptyInput::Nan => assert!(hist.iter().all(|v| v.is_nan())),
        }
    } else {
        let mut counts = [0u64; 256];
        for &b in data {
            counts[usize::from(b)] += 1;
        }
        for (v, &c) in hist.iter().zip(&counts) {
            assert_eq!(
                v.to_bits(),
                ((c as f64 / data.len() as f64) as f32).to_bits()
            );
        }
    }

    // Entropy histogram, random parameters.
    let (window, step) = (size(input.window), size(input.step));
    let valid = (1..=MAX_WINDOW).contains(&window) && (1..=MAX_WINDOW).contains(&step);
    match EntropyHistogram::new(window, step) {
        Ok(h) => {
            assert!(valid, "accepted window {window} step {step}");
            assert_eq!((h.window(), h.step()), (window, step));
            check_entropy_histogram(&h, data, empty);
        }
        Err(e) => {
            assert!(!valid, "rejected window {window} step {step}: {e}");
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        }
    }
    // EMBER's defaults on every input as well.
    check_entropy_histogram(&EntropyHistogram::default(), data, empty);

    check_strings(data);
    check_general_file_info(data);
    check_ember2024_strings(data);
});

/// ember2024_string_features: the statistics agree with the EMBER 2018
/// string features on the same strings (same run definition), every
/// pattern count is at most the number of strings, never a panic.
fn check_ember2024_strings(data: &[u8]) {
    static EXTRACTOR: std::sync::OnceLock<Ember2024Strings> = std::sync::OnceLock::new();
    let row = EXTRACTOR
        .get_or_init(|| Ember2024Strings::new().expect("patterns compile"))
        .row(data);
    let mut ember = [0f32; 104];
    string_features(data, EmptyInput::Zeros, &mut ember);
    assert_eq!(row[0], ember[0], "numstrings");
    assert_eq!(row[2], ember[2], "printables");
    assert_eq!(&row[3..99], &ember[3..99], "printable distribution");
    assert!(
        row[100..].iter().all(|&c| c <= row[0]),
        "a pattern counted twice"
    );
}

/// general_file_info: the size and start bytes as given, an entropy in
/// [0, 8] bits (the order of summation is checked by the unit tests and the
/// thrember golden vectors), never a panic.
fn check_general_file_info(data: &[u8]) {
    let row = GeneralFileInfo.row(data);
    assert_eq!(row.len(), 6);
    assert_eq!(row[0], data.len() as f32);
    let entropy = row[1];
    assert!((0.0..=8.0 + 1e-5).contains(&entropy), "entropy {entropy}");
    if data.iter().all(|&b| Some(&b) == data.first()) {
        assert_eq!(entropy, 0.0);
    }
    for k in 0..4 {
        assert_eq!(row[2 + k], data.get(k).map_or(0.0, |&b| f32::from(b)));
    }
}
