//! The groups read from pefile's data directories (`imports`, `exports`,
//! `datadirectories`) and the `richheader` group.

use std::collections::hash_map::{Entry, HashMap};

use super::{feature_hash, put};
use crate::pe::{Import, Pe};

/// thrember's text of an import of library `dll` into `feature`:
/// `dll:function` (the library lowercased), or `dll:DLL:ordinalN` for an
/// import by ordinal. `false` for a symbol with neither, which pefile does
/// not keep. What `imports` hashes and its explanation shows.
pub(super) fn import_feature(dll: &[u8], symbol: &Import, feature: &mut Vec<u8>) -> bool {
    feature.clear();
    feature.extend(dll.iter().map(u8::to_ascii_lowercase));
    feature.push(b':');
    match (&symbol.name, symbol.ordinal) {
        (Some(n), _) if !n.is_empty() => feature.extend_from_slice(n),
        (_, Some(ordinal)) => {
            feature.extend_from_slice(dll);
            feature.extend_from_slice(format!(":ordinal{ordinal}").as_bytes());
        }
        _ => return false,
    }
    true
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
            if !import_feature(name, symbol, &mut feature) {
                continue;
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
