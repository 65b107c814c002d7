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
//! use rustfx::ember2024::{EmberFeatures, EmberGroup, PeGroup, EMBER_FEATURES_DIM};
//! use rustfx::extractor::RowExtractor;
//! let all = EmberFeatures::new(3, &[]).unwrap();
//! assert_eq!(all.width(), EMBER_FEATURES_DIM);
//! let header = EmberFeatures::new(3, &[EmberGroup::Pe(PeGroup::Header)]).unwrap();
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

/// One of thrember's twelve groups: four read the bytes, the eight
/// [`PeGroup`]s read pefile's parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EmberGroup {
    /// `general`: size, entropy, `is_pe` and the first four bytes.
    General,
    /// `histogram`: the byte histogram.
    Histogram,
    /// `byteentropy`: the byte-entropy grid.
    ByteEntropy,
    /// `strings`: EMBER2024's string statistics and patterns.
    Strings,
    /// A group of the PE parse (zeros when pefile rejects the file).
    Pe(PeGroup),
}

/// The groups thrember reads from pefile's parse, in thrember's order.
/// Every list of PE groups (the row's order, the names, the widths,
/// extraction and explanation) comes from this enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum PeGroup {
    Header,
    Section,
    Imports,
    Exports,
    DataDirectories,
    RichHeader,
    Authenticode,
    PefileWarnings,
}

crate::names::named_values!(PeGroup, "PE group", {
    Header => "header",
    Section => "section",
    Imports => "imports",
    Exports => "exports",
    DataDirectories => "datadirectories",
    RichHeader => "richheader",
    Authenticode => "authenticode",
    PefileWarnings => "pefilewarnings",
});

impl From<PeGroup> for EmberGroup {
    fn from(group: PeGroup) -> Self {
        EmberGroup::Pe(group)
    }
}

/// The groups before the PE groups in a row, in thrember's order.
const BYTE_GROUPS: [EmberGroup; 4] = [
    EmberGroup::General,
    EmberGroup::Histogram,
    EmberGroup::ByteEntropy,
    EmberGroup::Strings,
];

/// How many groups there are.
const GROUP_COUNT: usize = BYTE_GROUPS.len() + PeGroup::VALUES.len();

impl EmberGroup {
    /// Every group, in thrember's order: the byte groups, then
    /// [`PeGroup::VALUES`].
    pub const ALL: [EmberGroup; GROUP_COUNT] = {
        let mut all = [EmberGroup::General; GROUP_COUNT];
        let mut k = 0;
        while k < GROUP_COUNT {
            all[k] = if k < BYTE_GROUPS.len() {
                BYTE_GROUPS[k]
            } else {
                EmberGroup::Pe(PeGroup::VALUES[k - BYTE_GROUPS.len()])
            };
            k += 1;
        }
        all
    };

    /// Every group's name, in the order of [`EmberGroup::ALL`].
    pub const NAMES: &'static [&'static str] = &{
        let mut names = [""; GROUP_COUNT];
        let mut k = 0;
        while k < GROUP_COUNT {
            names[k] = EmberGroup::ALL[k].name();
            k += 1;
        }
        names
    };

    /// The name [`from_name`](Self::from_name) parses to this group
    /// (thrember's).
    pub const fn name(self) -> &'static str {
        match self {
            EmberGroup::General => "general",
            EmberGroup::Histogram => "histogram",
            EmberGroup::ByteEntropy => "byteentropy",
            EmberGroup::Strings => "strings",
            EmberGroup::Pe(group) => group.name(),
        }
    }

    /// Parses a group's name; the error says which names are allowed.
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|group| group.name() == name)
            .ok_or_else(|| {
                Error::invalid_argument(format!(
                    "group must be one of {}, got '{name}'",
                    Self::NAMES.join(", ")
                ))
            })
    }

    /// Values in this group.
    pub fn width(self) -> usize {
        match self {
            EmberGroup::General => 7,
            EmberGroup::Histogram | EmberGroup::ByteEntropy => 256,
            EmberGroup::Strings => 177,
            EmberGroup::Pe(group) => group.width(),
        }
    }

    /// Whether the group needs the PE parse (`general` too: `is_pe`).
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
            EmberGroup::Pe(group) => group.value_names(),
        };
        debug_assert_eq!(names.len(), self.width());
        names
            .into_iter()
            .map(|n| format!("{}_{n}", self.name()))
            .collect()
    }
}

impl PeGroup {
    /// Values in this group.
    pub fn width(self) -> usize {
        match self {
            PeGroup::Header => 74,
            PeGroup::Section => 224,
            PeGroup::Imports => 1282,
            PeGroup::Exports => 129,
            PeGroup::DataDirectories => 34,
            PeGroup::RichHeader => 33,
            PeGroup::Authenticode => 8,
            PeGroup::PefileWarnings => 88,
        }
    }

    /// The names of this group's values, without the group's prefix.
    fn value_names(self) -> Vec<String> {
        match self {
            PeGroup::Header => pe_groups::header_names(),
            PeGroup::Section => pe_groups::section_names(),
            PeGroup::Imports => ["num_imports", "num_libraries"]
                .iter()
                .map(|s| s.to_string())
                .chain((0..256).map(|k| format!("libraries_hashed_{k}")))
                .chain((0..1024).map(|k| format!("imports_hashed_{k}")))
                .collect(),
            PeGroup::Exports => ["hashed_width".to_string()]
                .into_iter()
                .chain((0..128).map(|k| format!("exports_hashed_{k}")))
                .collect(),
            PeGroup::DataDirectories => pe_groups::data_directory_names(),
            PeGroup::RichHeader => ["num_pairs".to_string()]
                .into_iter()
                .chain((0..32).map(|k| format!("pairs_hashed_{k}")))
                .collect(),
            PeGroup::Authenticode => [
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
            PeGroup::PefileWarnings => PEFILE_WARNINGS
                .iter()
                .map(|w| w.to_string())
                .chain(["count".to_string()])
                .collect(),
        }
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
                EmberGroup::Pe(group) => {
                    if let Some(pe) = &pe {
                        write_pe_group(pe, group, slot);
                    }
                }
            }
        }
        Ok(())
    }
}

/// One PE group's values.
fn write_pe_group(pe: &Pe, group: PeGroup, out: &mut [f32]) {
    match group {
        PeGroup::Header => pe_groups::write_header(pe, out),
        PeGroup::Section => pe_groups::write_section(pe, out),
        PeGroup::Imports => pe_groups::write_imports(pe, out),
        PeGroup::Exports => pe_groups::write_exports(pe, out),
        PeGroup::DataDirectories => pe_groups::write_data_directories(pe, out),
        PeGroup::RichHeader => pe_groups::write_rich_header(pe, out),
        PeGroup::Authenticode => {
            authenticode::authenticode(pe.data(), pe.file_header.time_date_stamp).write(out)
        }
        PeGroup::PefileWarnings => pe_groups::write_pefile_warnings(pe, out),
    }
}

#[cfg(test)]
mod tests;
