//! Fuzz target `pe`: the pefile-compatible PE reader and the EMBER2024
//! feature vector on arbitrary bytes (seeded with the PE corpus,
//! tests/golden/pe, by run.sh).
//!
//! Checks:
//! - `Pe::parse` and `EmberFeatures` never panic, and every value is finite;
//! - a parse stays within pefile's limits: at most 16 data directories,
//!   0x800 sections, 0x2000 import symbols per table walk (pefile's shared
//!   counter), 2 x 0x2000 + 1 exports, an even number of Rich values, and
//!   a number of warnings bounded by those limits;
//! - `is_pe` (general, value 2) is 1 exactly when `Pe::parse` succeeds, and
//!   a file that is not PE has zeros in every PE group;
//! - each group computed alone equals its slice of the whole row.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rustfx::ember2024::{EmberFeatures, EmberGroup};
use rustfx::extractor::RowExtractor;
use rustfx::pe::Pe;
use std::sync::OnceLock;

fn all() -> &'static EmberFeatures {
    static ALL: OnceLock<EmberFeatures> = OnceLock::new();
    ALL.get_or_init(|| EmberFeatures::new(3, &[]).expect("valid parameters"))
}

/// One extractor per group (built once: the strings group compiles a
/// RegexSet).
fn alone(k: usize) -> &'static EmberFeatures {
    static ALONE: OnceLock<Vec<EmberFeatures>> = OnceLock::new();
    &ALONE.get_or_init(|| {
        EmberGroup::ALL
            .iter()
            .map(|&g| EmberFeatures::new(3, &[g]).expect("valid parameters"))
            .collect()
    })[k]
}

fuzz_target!(|data: &[u8]| {
    let pe = Pe::parse(data);
    if let Ok(pe) = &pe {
        assert!(pe.data_directories.len() <= 16);
        assert!(pe.sections.len() <= 0x800);
        let imports: usize = pe.imports.iter().flatten().map(|d| d.imports.len()).sum();
        assert!(imports <= 2 * 0x2000 + 2, "{imports} imports");
        assert!(pe.exports.as_ref().map_or(0, Vec::len) <= 2 * 0x2000 + 2);
        assert!(pe.rich_values.as_ref().map_or(0, Vec::len) % 2 == 0);
        // Per section at most 7 warnings, plus a bounded number per
        // directory entry and import/export table walk.
        assert!(
            pe.warnings().len() <= 300 + 8 * pe.sections.len() + 4 * imports,
            "{}",
            pe.warnings().len()
        );
    }
    let row = all().row(data);
    assert_eq!(row.len(), 2568);
    assert!(row.iter().all(|v| v.is_finite()), "non-finite value");
    assert_eq!(row[2], f32::from(u8::from(pe.is_ok())), "is_pe");
    if pe.is_err() {
        assert!(
            row[696..].iter().all(|&v| v == 0.0),
            "PE groups of a non-PE file"
        );
    }
    // One group alone (picked by the input) equals its slice.
    let k = data
        .first()
        .map_or(0, |&b| usize::from(b) % EmberGroup::ALL.len());
    let group = EmberGroup::ALL[k];
    let offset: usize = EmberGroup::ALL[..k].iter().map(|g| g.width()).sum();
    let alone = alone(k).row(data);
    assert_eq!(
        alone,
        row[offset..offset + group.width()],
        "{}",
        group.name()
    );
});
