//! Fuzz target `byte_features`: EMBER's byte histogram, byte/entropy
//! histogram (random window and step, valid and invalid) and string features
//! on arbitrary bytes, each against the core's oracle
//! (`rustfx::oracles::byte_features`, what the unit tests compare with).
//!
//! Checks:
//! - `EntropyHistogram::new` is `Err(InvalidArgument)` exactly when window or
//!   step is outside `1..=MAX_WINDOW`, and never panics;
//! - byte histogram: equals the oracle's, bit for bit;
//! - entropy histogram: equals the oracle's (the blocks, each block's bin
//!   from its nibble counts' entropy in numpy's dtype, the grid normalised),
//!   bit for bit, when the grid's total is at most 2^24 (where the oracle's
//!   normalisation is exact); every value in [0, 1] whatever the total;
//! - string features: equal the oracle's, bit for bit;
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
use rustfx::ember2024::general::GeneralFileInfo;
use rustfx::ember2024::strings::Ember2024Strings;
use rustfx::extractor::RowExtractor;
use rustfx::oracles::byte_features;
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
    assert!(
        out.iter().all(|v| v.is_finite() && (0.0..=1.0).contains(v)),
        "{out:?}"
    );
    // The grid's total: every block's bytes (the whole input as one block
    // when shorter than a window).
    let total = if data.len() < window {
        data.len()
    } else {
        ((data.len() - window) / step + 1).saturating_mul(window)
    };
    if total <= 1 << 24 {
        assert_eq!(
            bits(&out),
            bits(&byte_features::oracle_entropy_histogram(
                data, window, step, empty
            )),
            "entropy histogram, window {window} step {step} len {}",
            data.len()
        );
    }
}

fn check_strings(data: &[u8]) {
    let mut out = [0.5f32; STRING_FEATURES_DIM];
    string_features(data, EmptyInput::Nan, &mut out);
    assert!(out.iter().all(|v| v.is_finite() && *v >= 0.0), "{out:?}");
    assert_eq!(
        bits(&out),
        bits(&byte_features::oracle_string_features(data)),
        "string features"
    );
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
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
    } else if data.len() <= 1 << 24 {
        // (The oracle normalises exactly up to 2^24 bytes.)
        assert_eq!(
            bits(&hist),
            bits(&byte_features::oracle_byte_histogram(data, empty)),
            "byte histogram"
        );
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
