//! The `section` group: the section table, its names, entropies and
//! flags, and the overlay.

use super::{feature_hash, put};
use crate::ember2024::general::pefile_entropy;
use crate::pe::{Pe, Section};
use crate::unicode_classes::python_str_lower;

/// `section.Name.strip(b"\x00").decode(errors="ignore").lower()`.
pub(crate) fn section_name(raw: &[u8; 8]) -> String {
    let start = raw.iter().position(|&b| b != 0).unwrap_or(raw.len());
    let end = raw.iter().rposition(|&b| b != 0).map_or(start, |k| k + 1);
    let mut decoded = String::new();
    // `errors="ignore"` drops each invalid sequence, as the chunks do.
    for chunk in raw[start..end].utf8_chunks() {
        decoded.push_str(chunk.valid());
    }
    let mut lower = String::with_capacity(decoded.len());
    python_str_lower(&decoded, &mut lower);
    lower
}

/// pefile's section flags (`section_characteristics`), in its order, with
/// thrember's names (`IMAGE_SCN_` removed). A flag is set when any of its
/// bits is (`ALIGN_*` values included), as pefile's `set_flags` tests.
const SECTION_FLAGS: [(&str, u32); 46] = [
    ("TYPE_REG", 0x0000_0000),
    ("TYPE_DSECT", 0x0000_0001),
    ("TYPE_NOLOAD", 0x0000_0002),
    ("TYPE_GROUP", 0x0000_0004),
    ("TYPE_NO_PAD", 0x0000_0008),
    ("TYPE_COPY", 0x0000_0010),
    ("CNT_CODE", 0x0000_0020),
    ("CNT_INITIALIZED_DATA", 0x0000_0040),
    ("CNT_UNINITIALIZED_DATA", 0x0000_0080),
    ("LNK_OTHER", 0x0000_0100),
    ("LNK_INFO", 0x0000_0200),
    ("LNK_OVER", 0x0000_0400),
    ("LNK_REMOVE", 0x0000_0800),
    ("LNK_COMDAT", 0x0000_1000),
    ("MEM_PROTECTED", 0x0000_4000),
    ("NO_DEFER_SPEC_EXC", 0x0000_4000),
    ("GPREL", 0x0000_8000),
    ("MEM_FARDATA", 0x0000_8000),
    ("MEM_SYSHEAP", 0x0001_0000),
    ("MEM_PURGEABLE", 0x0002_0000),
    ("MEM_16BIT", 0x0002_0000),
    ("MEM_LOCKED", 0x0004_0000),
    ("MEM_PRELOAD", 0x0008_0000),
    ("ALIGN_1BYTES", 0x0010_0000),
    ("ALIGN_2BYTES", 0x0020_0000),
    ("ALIGN_4BYTES", 0x0030_0000),
    ("ALIGN_8BYTES", 0x0040_0000),
    ("ALIGN_16BYTES", 0x0050_0000),
    ("ALIGN_32BYTES", 0x0060_0000),
    ("ALIGN_64BYTES", 0x0070_0000),
    ("ALIGN_128BYTES", 0x0080_0000),
    ("ALIGN_256BYTES", 0x0090_0000),
    ("ALIGN_512BYTES", 0x00A0_0000),
    ("ALIGN_1024BYTES", 0x00B0_0000),
    ("ALIGN_2048BYTES", 0x00C0_0000),
    ("ALIGN_4096BYTES", 0x00D0_0000),
    ("ALIGN_8192BYTES", 0x00E0_0000),
    ("ALIGN_MASK", 0x00F0_0000),
    ("LNK_NRELOC_OVFL", 0x0100_0000),
    ("MEM_DISCARDABLE", 0x0200_0000),
    ("MEM_NOT_CACHED", 0x0400_0000),
    ("MEM_NOT_PAGED", 0x0800_0000),
    ("MEM_SHARED", 0x1000_0000),
    ("MEM_EXECUTE", 0x2000_0000),
    ("MEM_READ", 0x4000_0000),
    ("MEM_WRITE", 0x8000_0000),
];

pub(super) fn section_props(section: &Section) -> impl Iterator<Item = &'static str> + '_ {
    SECTION_FLAGS
        .iter()
        .filter(move |(_, bits)| bits & section.characteristics != 0)
        .map(|(name, _)| *name)
}

pub(super) const MEM_EXECUTE: u32 = 0x2000_0000;
pub(super) const MEM_READ: u32 = 0x4000_0000;
pub(super) const MEM_WRITE: u32 = 0x8000_0000;

/// The `section` group (224 values).
pub fn write_section(pe: &Pe, out: &mut [f32]) {
    let file_size = pe.data().len() as f64;
    let entry = u64::from(pe.optional_header.address_of_entry_point);
    let names: Vec<String> = pe.sections.iter().map(|s| section_name(&s.name)).collect();
    // The last section that contains the entry point, else the first
    // executable one with a non-empty name.
    let mut entry_name = String::new();
    for (k, s) in pe.sections.iter().enumerate() {
        if pe.section_contains(s, entry) {
            entry_name.clone_from(&names[k]);
        }
    }
    if entry_name.is_empty() {
        if let Some(k) = (0..pe.sections.len())
            .find(|&k| pe.sections[k].characteristics & MEM_EXECUTE != 0 && !names[k].is_empty())
        {
            entry_name.clone_from(&names[k]);
        }
    }
    let entropies: Vec<f64> = pe
        .sections
        .iter()
        .map(|s| pefile_entropy(pe.section_bytes(s)))
        .collect();
    let (overlay_size, overlay_ratio, overlay_entropy) = match pe.overlay() {
        Some(overlay) => (
            overlay.len() as f64,
            overlay.len() as f64 / file_size,
            pefile_entropy(overlay),
        ),
        None => (0.0, 0.0, 0.0),
    };
    let size_ratios = pe
        .sections
        .iter()
        .map(|s| f64::from(s.size_of_raw_data) / file_size);
    let vsize_ratios = pe
        .sections
        .iter()
        .map(|s| f64::from(s.size_of_raw_data) / f64::from(s.virtual_size.max(1)));
    let max_min = |values: &mut dyn Iterator<Item = f64>| {
        values.fold((f64::NEG_INFINITY, f64::INFINITY), |(hi, lo), v| {
            (hi.max(v), lo.min(v))
        })
    };
    let (max_entropy, min_entropy) =
        max_min(&mut entropies.iter().copied().chain([overlay_entropy, 0.0]));
    let (max_size_ratio, min_size_ratio) = max_min(&mut size_ratios.chain([overlay_ratio, 0.0]));
    let (max_vsize_ratio, min_vsize_ratio) = max_min(&mut vsize_ratios.chain([0.0]));
    let has = |s: &Section, bits: u32| s.characteristics & bits != 0;
    let general = [
        pe.sections.len() as f64,
        pe.sections
            .iter()
            .filter(|s| s.size_of_raw_data == 0)
            .count() as f64,
        names.iter().filter(|n| n.is_empty()).count() as f64,
        pe.sections
            .iter()
            .filter(|s| has(s, MEM_READ) && has(s, MEM_EXECUTE))
            .count() as f64,
        pe.sections.iter().filter(|s| has(s, MEM_WRITE)).count() as f64,
        max_entropy,
        min_entropy,
        max_size_ratio,
        min_size_ratio,
        max_vsize_ratio,
        min_vsize_ratio,
    ];
    put(&mut out[..11], &general);
    let mut sizes = [0f64; 50];
    let mut vsizes = [0f64; 50];
    let mut section_entropy = [0f64; 50];
    let mut characteristics = [0f64; 50];
    for (k, s) in pe.sections.iter().enumerate() {
        let name = names[k].as_bytes();
        feature_hash(&mut sizes, name, f64::from(s.size_of_raw_data), true);
        feature_hash(&mut vsizes, name, f64::from(s.virtual_size), true);
        feature_hash(&mut section_entropy, name, entropies[k], true);
    }
    let mut feature = Vec::new();
    for (k, s) in pe.sections.iter().enumerate() {
        for prop in section_props(s) {
            feature.clear();
            feature.extend_from_slice(names[k].as_bytes());
            feature.push(b':');
            feature.extend_from_slice(prop.as_bytes());
            feature_hash(&mut characteristics, &feature, 1.0, true);
        }
    }
    let mut entry_hashed = [0f64; 10];
    feature_hash(&mut entry_hashed, entry_name.as_bytes(), 1.0, true);
    put(&mut out[11..61], &sizes);
    put(&mut out[61..111], &vsizes);
    put(&mut out[111..161], &section_entropy);
    put(&mut out[161..211], &characteristics);
    put(&mut out[211..221], &entry_hashed);
    put(
        &mut out[221..224],
        &[overlay_size, overlay_ratio, overlay_entropy],
    );
}

/// Names of the `section` group.
pub fn section_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "num_sections",
        "num_zero_size",
        "num_empty_name",
        "num_read_execute",
        "num_write",
        "max_entropy",
        "min_entropy",
        "max_size_ratio",
        "min_size_ratio",
        "max_vsize_ratio",
        "min_vsize_ratio",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (prefix, n) in [
        ("size_hashed", 50),
        ("vsize_hashed", 50),
        ("entropy_hashed", 50),
        ("characteristics_hashed", 50),
        ("entry_name_hashed", 10),
    ] {
        names.extend((0..n).map(|k| format!("{prefix}_{k}")));
    }
    names.extend(["overlay_size", "overlay_size_ratio", "overlay_entropy"].map(String::from));
    names
}
