//! EMBER2024 feature vectors ("thrember", EMBER feature version 3): 2,568
//! float32 values per file in twelve groups, written from thrember's
//! definitions (its `features.py`), bit for bit where thrember's result
//! does not depend on the machine.
//!
//! | group | values | from |
//! |---|---:|---|
//! | general | 7 | [`general::GeneralFileInfo`] plus `is_pe` |
//! | histogram | 256 | the byte counts of [`crate::byte_features::ByteHistogram`] |
//! | byteentropy | 256 | the grid of [`EntropyHistogram`] (window 2048, step 1024) |
//! | strings | 177 | [`strings::Ember2024Strings`] |
//! | header, section, imports, exports, datadirectories, richheader, pefilewarnings | 74, 224, 1282, 129, 34, 33, 88 | [`crate::pe`], in `pe_groups` |
//! | authenticode | 8 | [`authenticode`] |
//!
//! Both histograms are normalised as thrember's numpy code does it (float32
//! counts, numpy's float32 pairwise sum, a float32 division), so they agree
//! with thrember on files of any size; `byte_histogram` and
//! `byte_entropy_histogram` divide by the exact sum instead, which differs
//! once the counts pass 2^24 (files over 16 MiB, or 8 MiB for the
//! overlapping entropy windows).
//!
//! A file pefile rejects gets zeros in the PE groups, as in thrember.
//! thrember raises `IndexError` on an empty file; rustfx gives it an
//! all-zero row. Where rustfx and thrember can differ (pefile directories
//! read only for their warnings, `has_dynamic_relocs`, thrember's
//! run-to-run warning normalization) is measured in README, "EMBER2024".
//!
//! ```
//! use rustfx::ember2024::{EmberFeatures, EmberGroup, EMBER_FEATURES_DIM};
//! use rustfx::extractor::RowExtractor;
//! let all = EmberFeatures::new(3, &[]).unwrap();
//! assert_eq!(all.width(), EMBER_FEATURES_DIM);
//! let header = EmberFeatures::new(3, &[EmberGroup::Header]).unwrap();
//! assert_eq!(header.row(b"not a PE"), vec![0.0; 74]);
//! assert!(EmberFeatures::new(2, &[]).is_err());
//! ```

pub mod authenticode;
mod explain;
pub mod general;
mod pe_groups;
pub mod strings;

pub use pe_groups::{warning_id, PEFILE_WARNINGS};

use crate::byte_features::{
    byte_counts, normalise_like_numpy_f32, EntropyHistogram, EMBER_STEP, EMBER_WINDOW,
};
use crate::extractor::{check_width, RowExtractor};
use crate::pe::Pe;
use crate::{Error, Result};
use general::{write_general_file_info, GENERAL_FILE_INFO_DIM};
use strings::{Ember2024Strings, PATTERNS};

/// Values in a full feature-version-3 row.
pub const EMBER_FEATURES_DIM: usize = 2568;

/// The only feature version rustfx computes.
pub const FEATURE_VERSION: i64 = 3;

/// One of thrember's twelve groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum EmberGroup {
    General,
    Histogram,
    ByteEntropy,
    Strings,
    Header,
    Section,
    Imports,
    Exports,
    DataDirectories,
    RichHeader,
    Authenticode,
    PefileWarnings,
}

crate::names::named_values!(EmberGroup, "group", {
    General => "general",
    Histogram => "histogram",
    ByteEntropy => "byteentropy",
    Strings => "strings",
    Header => "header",
    Section => "section",
    Imports => "imports",
    Exports => "exports",
    DataDirectories => "datadirectories",
    RichHeader => "richheader",
    Authenticode => "authenticode",
    PefileWarnings => "pefilewarnings",
});

impl EmberGroup {
    /// Every group, in thrember's order.
    pub const ALL: [EmberGroup; 12] = [
        EmberGroup::General,
        EmberGroup::Histogram,
        EmberGroup::ByteEntropy,
        EmberGroup::Strings,
        EmberGroup::Header,
        EmberGroup::Section,
        EmberGroup::Imports,
        EmberGroup::Exports,
        EmberGroup::DataDirectories,
        EmberGroup::RichHeader,
        EmberGroup::Authenticode,
        EmberGroup::PefileWarnings,
    ];

    /// Values in this group.
    pub fn width(self) -> usize {
        match self {
            EmberGroup::General => 7,
            EmberGroup::Histogram | EmberGroup::ByteEntropy => 256,
            EmberGroup::Strings => 177,
            EmberGroup::Header => 74,
            EmberGroup::Section => 224,
            EmberGroup::Imports => 1282,
            EmberGroup::Exports => 129,
            EmberGroup::DataDirectories => 34,
            EmberGroup::RichHeader => 33,
            EmberGroup::Authenticode => 8,
            EmberGroup::PefileWarnings => 88,
        }
    }

    /// Whether the group needs the PE parse.
    fn needs_pe(self) -> bool {
        !matches!(
            self,
            EmberGroup::Histogram | EmberGroup::ByteEntropy | EmberGroup::Strings
        )
    }

    /// The names of this group's values, `<group>_<value>`.
    pub fn feature_names(self) -> Vec<String> {
        let numbered = |n: usize| (0..n).map(|k| k.to_string()).collect::<Vec<_>>();
        let names: Vec<String> = match self {
            EmberGroup::General => ["size", "entropy", "is_pe"]
                .iter()
                .map(|s| s.to_string())
                .chain((0..4).map(|k| format!("start_byte_{k}")))
                .collect(),
            EmberGroup::Histogram | EmberGroup::ByteEntropy => numbered(256),
            EmberGroup::Strings => ["numstrings", "avlength", "printables"]
                .iter()
                .map(|s| s.to_string())
                .chain((0x20..0x80).map(|b| format!("printabledist_{b:02x}")))
                .chain(["entropy".to_string()])
                .chain(
                    PATTERNS
                        .iter()
                        .map(|(name, _, _)| format!("pattern_{name}")),
                )
                .collect(),
            EmberGroup::Header => pe_groups::header_names(),
            EmberGroup::Section => pe_groups::section_names(),
            EmberGroup::Imports => ["num_imports", "num_libraries"]
                .iter()
                .map(|s| s.to_string())
                .chain((0..256).map(|k| format!("libraries_hashed_{k}")))
                .chain((0..1024).map(|k| format!("imports_hashed_{k}")))
                .collect(),
            EmberGroup::Exports => ["hashed_width".to_string()]
                .into_iter()
                .chain((0..128).map(|k| format!("exports_hashed_{k}")))
                .collect(),
            EmberGroup::DataDirectories => pe_groups::data_directory_names(),
            EmberGroup::RichHeader => ["num_pairs".to_string()]
                .into_iter()
                .chain((0..32).map(|k| format!("pairs_hashed_{k}")))
                .collect(),
            EmberGroup::Authenticode => [
                "num_certs",
                "self_signed",
                "empty_program_name",
                "no_countersigner",
                "parse_error",
                "chain_max_depth",
                "latest_signing_time",
                "signing_time_diff",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            EmberGroup::PefileWarnings => PEFILE_WARNINGS
                .iter()
                .map(|w| w.to_string())
                .chain(["count".to_string()])
                .collect(),
        };
        debug_assert_eq!(names.len(), self.width());
        names
            .into_iter()
            .map(|n| format!("{}_{n}", self.name()))
            .collect()
    }
}

/// Groups from a comma-separated list of names (`""` is every group), as
/// the op's and the CLI's parameter gives them.
pub fn parse_groups(list: &str) -> Result<Vec<EmberGroup>> {
    list.split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(EmberGroup::from_name)
        .collect()
}

/// The `ember_features` extractor: the chosen groups (all by default) of
/// one feature version, concatenated in the order given.
#[derive(Debug, Clone)]
pub struct EmberFeatures {
    groups: Vec<EmberGroup>,
    width: usize,
    needs_pe: bool,
    needs_byte_counts: bool,
    byte_entropy: EntropyHistogram,
    strings: Ember2024Strings,
}

impl EmberFeatures {
    /// `feature_version` must be 3; `groups` empty means all twelve in
    /// thrember's order, otherwise distinct groups in the order wanted.
    pub fn new(feature_version: i64, groups: &[EmberGroup]) -> Result<Self> {
        if feature_version != FEATURE_VERSION {
            return Err(Error::invalid_argument(format!(
                "feature_version must be {FEATURE_VERSION} (EMBER2024, thrember), got {feature_version}"
            )));
        }
        let groups = if groups.is_empty() {
            EmberGroup::ALL.to_vec()
        } else {
            groups.to_vec()
        };
        for (k, group) in groups.iter().enumerate() {
            if groups[..k].contains(group) {
                return Err(Error::invalid_argument(format!(
                    "groups must be distinct, got {} twice",
                    group.name()
                )));
            }
        }
        Ok(EmberFeatures {
            width: groups.iter().map(|g| g.width()).sum(),
            needs_pe: groups.iter().any(|g| g.needs_pe()),
            needs_byte_counts: groups
                .iter()
                .any(|g| matches!(g, EmberGroup::General | EmberGroup::Histogram)),
            groups,
            byte_entropy: EntropyHistogram::new(EMBER_WINDOW, EMBER_STEP)?,
            strings: Ember2024Strings::new()?,
        })
    }

    /// The groups of a row, in order.
    pub fn groups(&self) -> &[EmberGroup] {
        &self.groups
    }

    /// The name of every value of a row, in order.
    pub fn feature_names(&self) -> Vec<String> {
        self.groups.iter().flat_map(|g| g.feature_names()).collect()
    }
}

impl RowExtractor for EmberFeatures {
    type Value = f32;

    fn width(&self) -> usize {
        self.width
    }

    fn feature_names(&self) -> Option<Vec<String>> {
        Some(EmberFeatures::feature_names(self))
    }

    fn write_row(&self, doc: &[u8], out: &mut [f32]) -> Result<()> {
        check_width(out.len(), self.width)?;
        out.fill(0.0);
        // One count of the bytes serves `general` (entropy), `histogram`
        // and pefile's byte-share warnings.
        let counts = self.needs_byte_counts.then(|| byte_counts(doc));
        let pe = if self.needs_pe {
            Pe::parse_with_byte_counts(doc, counts.as_ref()).ok()
        } else {
            None
        };
        let mut rest = out;
        for &group in &self.groups {
            let (slot, tail) = rest.split_at_mut(group.width());
            rest = tail;
            match group {
                EmberGroup::General => {
                    let mut general = [0f32; GENERAL_FILE_INFO_DIM];
                    write_general_file_info(
                        doc,
                        &counts.unwrap_or_else(|| byte_counts(doc)),
                        &mut general,
                    );
                    slot[..2].copy_from_slice(&general[..2]);
                    // An empty file cannot be PE; thrember raises on it.
                    slot[2] = f32::from(u8::from(pe.is_some()));
                    slot[3..].copy_from_slice(&general[2..]);
                }
                // thrember's float32 normalisation, not byte_histogram's
                // exact one: they differ once the counts pass 2^24 (files
                // over 16 MiB; over 8 MiB for the overlapping windows).
                EmberGroup::Histogram => {
                    normalise_like_numpy_f32(&counts.unwrap_or_else(|| byte_counts(doc)), slot)
                }
                EmberGroup::ByteEntropy => {
                    normalise_like_numpy_f32(&self.byte_entropy.counts(doc), slot)
                }
                EmberGroup::Strings => self.strings.write_row(doc, slot)?,
                EmberGroup::Header
                | EmberGroup::Section
                | EmberGroup::Imports
                | EmberGroup::Exports
                | EmberGroup::DataDirectories
                | EmberGroup::RichHeader
                | EmberGroup::Authenticode
                | EmberGroup::PefileWarnings => {
                    if let Some(pe) = &pe {
                        write_pe_group(pe, group, slot);
                    }
                }
            }
        }
        Ok(())
    }
}

/// One PE group's values (the other groups have nothing to write here).
fn write_pe_group(pe: &Pe, group: EmberGroup, out: &mut [f32]) {
    match group {
        EmberGroup::Header => pe_groups::write_header(pe, out),
        EmberGroup::Section => pe_groups::write_section(pe, out),
        EmberGroup::Imports => pe_groups::write_imports(pe, out),
        EmberGroup::Exports => pe_groups::write_exports(pe, out),
        EmberGroup::DataDirectories => pe_groups::write_data_directories(pe, out),
        EmberGroup::RichHeader => pe_groups::write_rich_header(pe, out),
        EmberGroup::Authenticode => {
            authenticode::authenticode(pe.data(), pe.file_header.time_date_stamp).write(out)
        }
        EmberGroup::PefileWarnings => pe_groups::write_pefile_warnings(pe, out),
        EmberGroup::General
        | EmberGroup::Histogram
        | EmberGroup::ByteEntropy
        | EmberGroup::Strings => {}
    }
}

#[cfg(test)]
mod tests;
