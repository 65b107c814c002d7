//! thrember's PE groups, written from its definitions over [`Pe`].
//!
//! Each `write_*` fills one group's slice of the row; a file pefile rejects
//! (`pe == None`) gets zeros in every PE group, as in thrember. Values are
//! computed in float64 (Python's ints and floats, scikit-learn's float64
//! `FeatureHasher`) and cast to float32 once, as thrember's `astype` does.

use std::collections::hash_map::{Entry, HashMap};

use super::general::pefile_entropy;
use crate::hashing::{murmur3_x86_32, sklearn_bucket_of_i32_min};
use crate::pe::{Pe, Section, DOS_FIELDS};
use crate::unicode_classes::python_str_lower;

/// scikit-learn's `FeatureHasher`: adds `value` for `feature` into `out`
/// (its bucket and, with `alternate_sign`, its sign). A zero value is
/// skipped, as scikit-learn skips it.
pub(crate) fn feature_hash(out: &mut [f64], feature: &[u8], value: f64, alternate_sign: bool) {
    if value == 0.0 {
        return;
    }
    let n = out.len() as u64;
    let h = murmur3_x86_32(feature, 0) as i32;
    let index = if h == i32::MIN {
        sklearn_bucket_of_i32_min(n)
    } else {
        u64::from(h.unsigned_abs()) % n
    };
    let sign = if alternate_sign && h < 0 { -1.0 } else { 1.0 };
    out[index as usize] += value * sign;
}

fn put(out: &mut [f32], values: &[f64]) {
    for (slot, &v) in out.iter_mut().zip(values) {
        *slot = v as f32;
    }
}

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

fn section_props(section: &Section) -> impl Iterator<Item = &'static str> + '_ {
    SECTION_FLAGS
        .iter()
        .filter(move |(_, bits)| bits & section.characteristics != 0)
        .map(|(name, _)| *name)
}

const MEM_EXECUTE: u32 = 0x2000_0000;
const MEM_READ: u32 = 0x4000_0000;
const MEM_WRITE: u32 = 0x8000_0000;

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

/// The `imports` group (1,282 values).
pub fn write_imports(pe: &Pe, out: &mut [f32]) {
    let Some(dlls) = &pe.imports else {
        return;
    };
    // thrember keys a dict by DLL name: a repeated name keeps its first
    // position and its last descriptor's symbols.
    // (A map from name to slot: thousands of descriptors stay linear.)
    let mut by_name: Vec<(&[u8], usize)> = Vec::new();
    let mut slot_of: HashMap<&[u8], usize> = HashMap::new();
    for (k, dll) in dlls.iter().enumerate() {
        match slot_of.entry(dll.dll.as_slice()) {
            Entry::Occupied(slot) => by_name[*slot.get()].1 = k,
            Entry::Vacant(slot) => {
                slot.insert(by_name.len());
                by_name.push((&dll.dll, k));
            }
        }
    }
    let mut libraries: Vec<Vec<u8>> = by_name
        .iter()
        .map(|(name, _)| name.to_ascii_lowercase())
        .collect();
    libraries.sort();
    libraries.dedup();
    let mut libraries_hashed = [0f64; 256];
    for library in &libraries {
        feature_hash(&mut libraries_hashed, library, 1.0, false);
    }
    let mut imports_hashed = vec![0f64; 1024];
    let mut count = 0usize;
    let mut feature = Vec::new();
    for &(name, k) in &by_name {
        for symbol in &dlls[k].imports {
            feature.clear();
            feature.extend(name.iter().map(u8::to_ascii_lowercase));
            feature.push(b':');
            match (&symbol.name, symbol.ordinal) {
                (Some(n), _) if !n.is_empty() => feature.extend_from_slice(n),
                (_, Some(ordinal)) => {
                    feature.extend_from_slice(name);
                    feature.extend_from_slice(format!(":ordinal{ordinal}").as_bytes());
                }
                // pefile keeps no symbol with neither.
                _ => continue,
            }
            feature_hash(&mut imports_hashed, &feature, 1.0, false);
            count += 1;
        }
    }
    put(&mut out[..2], &[count as f64, libraries.len() as f64]);
    put(&mut out[2..258], &libraries_hashed);
    put(&mut out[258..1282], &imports_hashed);
}

/// The `exports` group (129 values). Its first value is thrember's
/// `len(exports_hashed)`, which is always 128 when there are exports.
pub fn write_exports(pe: &Pe, out: &mut [f32]) {
    let Some(exports) = pe.exports.as_ref().filter(|e| !e.is_empty()) else {
        return;
    };
    let mut hashed = [0f64; 128];
    for export in exports {
        let feature = match &export.name {
            Some(name) if !name.is_empty() => name.clone(),
            _ => format!("ordinal{}", export.ordinal).into_bytes(),
        };
        feature_hash(&mut hashed, &feature, 1.0, true);
    }
    out[0] = 128.0;
    put(&mut out[1..129], &hashed);
}

/// thrember's machine list (its index is the feature); pefile names 0x284
/// `AXP64` (its second name for that value), index 21.
const MACHINES: [u16; 36] = [
    0x0, 0x014C, 0x0162, 0x0166, 0x0168, 0x0169, 0x0184, 0x01A2, 0x01A3, 0x01A4, 0x01A6, 0x01A8,
    0x01C0, 0x01C2, 0x01C4, 0x01D3, 0x01F0, 0x01F1, 0x0200, 0x0266, 0x0284, 0x0284, 0x0366, 0x0466,
    0x0520, 0x0CEF, 0x0EBC, 0x5032, 0x5064, 0x5128, 0x6232, 0x6264, 0x8664, 0x9041, 0xAA64, 0xC0EE,
];

/// thrember's subsystem list, by value.
const SUBSYSTEMS: [u16; 14] = [0, 1, 2, 3, 5, 7, 8, 9, 10, 11, 12, 13, 14, 16];

/// The `header` group (74 values).
pub fn write_header(pe: &Pe, out: &mut [f32]) {
    let fh = &pe.file_header;
    let oh = &pe.optional_header;
    let machine = MACHINES.iter().rposition(|&m| m == fh.machine).unwrap_or(0);
    let subsystem = SUBSYSTEMS
        .iter()
        .position(|&s| s == oh.subsystem)
        .unwrap_or(0);
    let values: [f32; 30] = [
        fh.time_date_stamp as f32,
        fh.number_of_sections as f32,
        fh.number_of_symbols as f32,
        fh.size_of_optional_header as f32,
        fh.pointer_to_symbol_table as f32,
        machine as f32,
        subsystem as f32,
        oh.major_image_version as f32,
        oh.minor_image_version as f32,
        oh.major_linker_version as f32,
        oh.minor_linker_version as f32,
        oh.major_operating_system_version as f32,
        oh.minor_operating_system_version as f32,
        oh.major_subsystem_version as f32,
        oh.minor_subsystem_version as f32,
        oh.size_of_code as f32,
        oh.size_of_headers as f32,
        oh.size_of_image as f32,
        oh.size_of_initialized_data as f32,
        oh.size_of_uninitialized_data as f32,
        oh.size_of_stack_reserve as f32,
        oh.size_of_stack_commit as f32,
        oh.size_of_heap_reserve as f32,
        oh.size_of_heap_commit as f32,
        oh.address_of_entry_point as f32,
        oh.base_of_code as f32,
        oh.image_base as f32,
        oh.section_alignment as f32,
        oh.check_sum as f32,
        oh.number_of_rva_and_sizes as f32,
    ];
    // thrember's column is int64 (np.hstack of ints and bools), cast to
    // float32 directly: one rounding, as `as f32` does.
    out[..30].copy_from_slice(&values);
    for bit in 0..16 {
        out[30 + bit] = f32::from(u8::from(fh.characteristics & (1 << bit) != 0));
    }
    // thrember's 11 DLL characteristics are bits 5 to 15.
    for (k, bit) in (5..16).enumerate() {
        out[46 + k] = f32::from(u8::from(oh.dll_characteristics & (1 << bit) != 0));
    }
    for (k, &v) in pe.dos.iter().enumerate() {
        out[57 + k] = v as f32;
    }
}

/// The `datadirectories` group (34 values): size and address of each
/// directory pefile read except the last (thrember's loop stops one short),
/// then `has_relocs` and `has_dynamic_relocs`.
pub fn write_data_directories(pe: &Pe, out: &mut [f32]) {
    let count = pe.data_directories.len().saturating_sub(1);
    for (k, dir) in pe.data_directories[..count].iter().enumerate() {
        out[2 * k] = dir.size as f32;
        out[2 * k + 1] = dir.virtual_address as f32;
    }
    out[32] = f32::from(u8::from(pe.has_relocs));
    out[33] = f32::from(u8::from(pe.has_dynamic_relocs));
}

/// The `richheader` group (33 values).
pub fn write_rich_header(pe: &Pe, out: &mut [f32]) {
    let Some(values) = pe.rich_values.as_ref().filter(|v| !v.is_empty()) else {
        return;
    };
    let mut hashed = [0f64; 32];
    for pair in values.chunks_exact(2) {
        feature_hash(
            &mut hashed,
            pair[0].to_string().as_bytes(),
            f64::from(pair[1]),
            true,
        );
    }
    out[0] = (values.len() / 2) as f32;
    put(&mut out[1..33], &hashed);
}

/// thrember's `pefile_warnings.txt`: the warning kinds, by id. `prefix...`
/// matches a warning that starts with `prefix`, `...suffix` one that ends
/// with `suffix`.
pub const PEFILE_WARNINGS: [&str; 87] = [
    "AddressOfEntryPoint lies outside the sections' boundaries...",
    "Bad RVA in relocation data...",
    "Byte 0x...",
    "Corrupt header...",
    "Damaged Import Table information...",
    "Don't know how to parse LOAD_CONFIG information for non-PE32...",
    "Error, too many imported symbols...",
    "Error parsing a resource directory data entry...",
    "Error parsing export directory at RVA...",
    "Error parsing resource of type RT_STRING at...",
    "Error parsing StringFileInfo/VarFileInfo struct...",
    "Error parsing the Delay import directory...",
    "Error parsing the Delay import directory at RVA...",
    "Error parsing the import directory at RVA...",
    "Error parsing the import directory. Invalid Import data at RVA...",
    "Error parsing the import table. Entries go beyond bounds...",
    "Error parsing the import table. AddressOfData overlaps with THUNK_DATA for THUNK at RVA...",
    "Error parsing the import table. Invalid data at RVA...",
    "Error parsing the resources directory. Excessively nested table depth...",
    "Error parsing the resources directory. The directory contains...",
    "Error parsing the resources directory. The file contains at least...",
    "Error parsing the resources directory. Entry...",
    "Error parsing the resources directory, attempting to read entry name. Entry names overlap...",
    "Error parsing the resources directory, attempting to read entry name. Can't read unicode string at offset...",
    "Error parsing the version information, attempting to read OffsetToData with RVA...",
    "Error parsing the version information, attempting to read VS_VERSION_INFO string...",
    "Error parsing the version information, attempting to read VarFileInfo Var string...",
    "Error parsing the version information, attempting to read StringFileInfo string...",
    "Error parsing the version information, attempting to read StringTable string...",
    "Error parsing the version information, attempting to read StringTable Key string...",
    "Error parsing the version information, to read StringTable Value string...",
    "Excessive number of imports...",
    "Export directory contains more than 10 repeated entries...",
    "Failed parsing FunctionEntry of UNWIND_INFO at...",
    "Failed rendering pascal string, attempting to read from RVA 0x...",
    "Failed rendering unicode string, attempting to read from RVA 0x...",
    "Failed to process directory...",
    "FunctionEntry of UNWIND_INFO at...",
    "If SectionAlignment...",
    "If FileAlignment > 0x200 it should be a power of 2. Value...",
    "Imported symbols contain entries typical of packed executables...",
    "Invalid bdd dynamic relocation...",
    "Invalid bdd info...",
    "Invalid debug information...",
    "Invalid function override header...",
    "Invalid function override info...",
    "Invalid IMAGE_DYNAMIC_RELOCATION_TABLE information...",
    "Invalid LOAD_CONFIG information...",
    "Invalid relocation information. Can't read...",
    "Invalid relocation information. SizeOfBlock too large...",
    "Invalid relocation information. VirtualAddress outside...",
    "Invalid resources directory. Can't read...",
    "Invalid resources directory. Can't parse directory data at RVA...",
    "Invalid TLS information. Can't read...",
    "Invalid type 0x...",
    "Invalid VS_VERSION_INFO block...",
    "No parsing available for IMAGE_DYNAMIC_RELOCATION_TABLE...",
    "Overlapping offsets in relocation data...",
    "Possibly corrupt file. AddressOfEntryPoint lies outside the file...",
    "Relocating image but PE does not have (or pefile cannot parse) a DIRECTORY_ENTRY_BASERELOC...",
    "Resource size...",
    "Rich Header is malformed...",
    "Rich Header is not in Microsoft format, possibly malformed...",
    "RVA AddressOfFunctions in the export directory points to an invalid...",
    "RVA AddressOfNames in the export directory points to an invalid...",
    "RVA of IMAGE_BOUND_IMPORT_DESCRIPTOR points...",
    "SizeOfHeaders is smaller than AddressOfEntryPoint...",
    "Suspicious flags set for section...",
    "Suspicious NumberOfRvaAndSizes in the Optional Header...",
    "Suspicious value found parsing section...",
    "The Bound Imports directory exists but can't be parsed...",
    "Too many warnings parsing section. Aborting...",
    "Too many errors parsing the Delay import directory...",
    "Too many errors parsing the import directory...",
    "Too many sections...",
    "Unknown UNWIND_CODE at...",
    "Unsupported version of UNWIND_INFO...",
    "...Contents are null-bytes.",
    "...No data in the file (is this corkami's virtsectblXP?).",
    "...PointerToRawData points beyond the end of the file.",
    "...PointerToRawData should normally be a multiple of FileAlignment, this might imply the file is trying to confuse tools which parse this incorrectly.",
    "...SizeOfRawData is larger than file.",
    "...VirtualSize is extremely large > 256MiB",
    "...VirtualAddress is beyond 0x10000000",
    "...symbol entries. Assuming corrupt.",
    "...ordinal entries. Assuming corrupt.",
    "...Assuming corrupt.",
];

/// The id of a warning as thrember normalizes it: a suffix kind first,
/// then a prefix kind. thrember tries the kinds in Python `set` order,
/// which changes from run to run; where two kinds match, rustfx takes the
/// longest (the most specific), which is one of thrember's possible
/// answers (README, "EMBER2024").
pub fn warning_id(warning: &str) -> Option<usize> {
    let best = |suffix: bool| {
        PEFILE_WARNINGS
            .iter()
            .enumerate()
            .filter_map(|(id, kind)| {
                let matched = if suffix {
                    kind.strip_prefix("...")
                        .is_some_and(|s| warning.ends_with(s))
                } else {
                    !kind.starts_with("...")
                        && kind
                            .strip_suffix("...")
                            .is_some_and(|p| warning.starts_with(p))
                };
                matched.then_some((kind.len(), id))
            })
            .max()
            .map(|(_, id)| id)
    };
    best(true).or_else(|| best(false))
}

/// The `pefilewarnings` group (88 values): one flag per warning kind seen,
/// then how many kinds were seen.
pub fn write_pefile_warnings(pe: &Pe, out: &mut [f32]) {
    let mut seen = [false; 87];
    for warning in pe.warnings() {
        if let Some(id) = warning_id(warning) {
            seen[id] = true;
        }
    }
    let count = seen.iter().filter(|&&s| s).count();
    if count == 0 {
        return;
    }
    for (slot, &s) in out.iter_mut().zip(&seen) {
        *slot = f32::from(u8::from(s));
    }
    out[87] = count as f32;
}

/// The names of the PE groups' values, in row order (header, section,
/// imports, exports, datadirectories, richheader, authenticode,
/// pefilewarnings).
pub fn header_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "timestamp",
        "number_of_sections",
        "number_of_symbols",
        "sizeof_optional_header",
        "pointer_to_symbol_table",
        "machine",
        "subsystem",
        "major_image_version",
        "minor_image_version",
        "major_linker_version",
        "minor_linker_version",
        "major_operating_system_version",
        "minor_operating_system_version",
        "major_subsystem_version",
        "minor_subsystem_version",
        "sizeof_code",
        "sizeof_headers",
        "sizeof_image",
        "sizeof_initialized_data",
        "sizeof_uninitialized_data",
        "sizeof_stack_reserve",
        "sizeof_stack_commit",
        "sizeof_heap_reserve",
        "sizeof_heap_commit",
        "address_of_entrypoint",
        "base_of_code",
        "image_base",
        "section_alignment",
        "checksum",
        "number_of_rvas_and_sizes",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    const IMAGE: [&str; 16] = [
        "RELOCS_STRIPPED",
        "EXECUTABLE_IMAGE",
        "LINE_NUMS_STRIPPED",
        "LOCAL_SYMS_STRIPPED",
        "AGGRESIVE_WS_TRIM",
        "LARGE_ADDRESS_AWARE",
        "16BIT_MACHINE",
        "BYTES_REVERSED_LO",
        "32BIT_MACHINE",
        "DEBUG_STRIPPED",
        "REMOVABLE_RUN_FROM_SWAP",
        "NET_RUN_FROM_SWAP",
        "SYSTEM",
        "DLL",
        "UP_SYSTEM_ONLY",
        "BYTES_REVERSED_HI",
    ];
    const DLL: [&str; 11] = [
        "HIGH_ENTROPY_VA",
        "DYNAMIC_BASE",
        "FORCE_INTEGRITY",
        "NX_COMPAT",
        "NO_ISOLATION",
        "NO_SEH",
        "NO_BIND",
        "APPCONTAINER",
        "WDM_DRIVER",
        "GUARD_CF",
        "TERMINAL_SERVER_AWARE",
    ];
    names.extend(IMAGE.iter().map(|n| format!("characteristics_{n}")));
    names.extend(DLL.iter().map(|n| format!("dll_characteristics_{n}")));
    names.extend(DOS_FIELDS.iter().map(|n| format!("dos_{n}")));
    names
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

/// Names of the `datadirectories` group.
pub fn data_directory_names() -> Vec<String> {
    const ORDER: [&str; 16] = [
        "EXPORT",
        "IMPORT",
        "RESOURCE",
        "EXCEPTION",
        "SECURITY",
        "BASERELOC",
        "DEBUG",
        "COPYRIGHT",
        "GLOBALPTR",
        "TLS",
        "LOAD_CONFIG",
        "BOUND_IMPORT",
        "IAT",
        "DELAY_IMPORT",
        "COM_DESCRIPTOR",
        "RESERVED",
    ];
    let mut names: Vec<String> = ORDER
        .iter()
        .flat_map(|n| [format!("{n}_size"), format!("{n}_virtual_address")])
        .collect();
    names.extend(["has_relocs", "has_dynamic_relocs"].map(String::from));
    names
}
