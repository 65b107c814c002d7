//! Explanations of the groups read from pefile's tables: `section`,
//! `imports` and `exports`.

use std::collections::HashMap;

use super::directories::import_feature;
use super::explain::{span, Sink};
use super::explain_headers::data_directory_entry;
use super::section::{section_name, section_props, MEM_EXECUTE, MEM_READ, MEM_WRITE};
use crate::ember2024::general::pefile_entropy;
use crate::pe::{FileSpan, Pe, Section};

const SECTION_HEADER_SIZE: u64 = 40;

fn header_of(s: &Section) -> FileSpan {
    span(s.header_offset(), SECTION_HEADER_SIZE)
}

/// The largest and the smallest of `(value, span)` candidates, each with
/// the span of the first candidate that has it (thrember's `max`/`min`
/// over the same values).
fn extremes(candidates: &[(f64, FileSpan)]) -> [(f64, FileSpan); 2] {
    let (hi, lo) = candidates
        .iter()
        .fold((f64::NEG_INFINITY, f64::INFINITY), |(hi, lo), &(v, _)| {
            (hi.max(v), lo.min(v))
        });
    let span_of = |target: f64| {
        candidates
            .iter()
            .find(|(v, _)| *v == target)
            .map_or_else(FileSpan::default, |&(_, s)| s)
    };
    [(hi, span_of(hi)), (lo, span_of(lo))]
}

/// `section`. Counts (0 to 4): one contribution of 1 per section counted,
/// at its header, its name the text. Maxima and minima (5 to 10): one
/// contribution carrying the value, at the first section (its data for
/// entropy, its header for size ratios) or overlay that has it, or nowhere
/// for the 0 thrember adds to each list. Hashed sizes, virtual sizes and
/// entropies: one per section, its signed value, at its header (its data
/// for entropy), its name the text; characteristics: one per section and
/// flag (`name:FLAG`) at its Characteristics field; the entry section's
/// name: one, at its header (at AddressOfEntryPoint when no section is
/// chosen). Overlay size, ratio and entropy: one each, at the overlay.
pub(super) fn section(pe: &Pe, sink: &mut Sink) -> Option<()> {
    let file_size = pe.data().len() as f64;
    let names: Vec<String> = pe.sections.iter().map(|s| section_name(&s.name)).collect();
    let data_spans: Vec<FileSpan> = pe
        .sections
        .iter()
        .map(|s| pe.span_of(pe.section_bytes(s)))
        .collect();
    let entropies: Vec<f64> = pe
        .sections
        .iter()
        .map(|s| pefile_entropy(pe.section_bytes(s)))
        .collect();
    // Called once, as extraction does: pefile's section cache moves with it.
    let overlay = pe.overlay();
    let overlay_span = overlay.map_or_else(FileSpan::default, |o| pe.span_of(o));

    for (k, s) in pe.sections.iter().enumerate() {
        let (header, name) = (header_of(s), names[k].as_bytes());
        let has = |bits: u32| s.characteristics & bits != 0;
        sink.push(0, header, 1.0, name)?;
        if s.size_of_raw_data == 0 {
            sink.push(1, header, 1.0, name)?;
        }
        if name.is_empty() {
            sink.push(2, header, 1.0, name)?;
        }
        if has(MEM_READ) && has(MEM_EXECUTE) {
            sink.push(3, header, 1.0, name)?;
        }
        if has(MEM_WRITE) {
            sink.push(4, header, 1.0, name)?;
        }
    }

    let (overlay_size, overlay_ratio, overlay_entropy) = match overlay {
        Some(o) => (
            o.len() as f64,
            o.len() as f64 / file_size,
            pefile_entropy(o),
        ),
        None => (0.0, 0.0, 0.0),
    };
    let nowhere = (0.0, FileSpan::default());
    let mut entropy: Vec<(f64, FileSpan)> = entropies.iter().copied().zip(data_spans).collect();
    entropy.extend([(overlay_entropy, overlay_span), nowhere]);
    let mut size_ratio: Vec<(f64, FileSpan)> = pe
        .sections
        .iter()
        .map(|s| (f64::from(s.size_of_raw_data) / file_size, header_of(s)))
        .collect();
    size_ratio.extend([(overlay_ratio, overlay_span), nowhere]);
    let mut vsize_ratio: Vec<(f64, FileSpan)> = pe
        .sections
        .iter()
        .map(|s| {
            let ratio = f64::from(s.size_of_raw_data) / f64::from(s.virtual_size.max(1));
            (ratio, header_of(s))
        })
        .collect();
    vsize_ratio.push(nowhere);
    let values = [entropy, size_ratio, vsize_ratio]
        .into_iter()
        .flat_map(|candidates| extremes(&candidates));
    for (local, (value, at)) in (5..11).zip(values) {
        sink.push(local, at, value, b"")?;
    }

    for (k, s) in pe.sections.iter().enumerate() {
        let (header, name) = (header_of(s), names[k].as_bytes());
        sink.hashed(11, 50, name, f64::from(s.size_of_raw_data), true, header)?;
        sink.hashed(61, 50, name, f64::from(s.virtual_size), true, header)?;
        sink.hashed(
            111,
            50,
            name,
            entropies[k],
            true,
            pe.span_of(pe.section_bytes(s)),
        )?;
    }
    let mut feature = Vec::new();
    for (k, s) in pe.sections.iter().enumerate() {
        let flags = span(s.header_offset() + 36, 4);
        for prop in section_props(s) {
            feature.clear();
            feature.extend_from_slice(names[k].as_bytes());
            feature.push(b':');
            feature.extend_from_slice(prop.as_bytes());
            sink.hashed(161, 50, &feature, 1.0, true, flags)?;
        }
    }

    let (entry_name, entry_span) = entry_section(pe, &names);
    sink.hashed(211, 10, entry_name.as_bytes(), 1.0, true, entry_span)?;

    if overlay.is_some() {
        sink.push(221, overlay_span, overlay_size, b"")?;
        sink.push(222, overlay_span, overlay_ratio, b"")?;
        sink.push(223, overlay_span, overlay_entropy, b"")?;
    }
    Some(())
}

/// thrember's entry section: the last section that contains the entry
/// point if it has a name, else the first executable one with a name; its
/// name and header (the AddressOfEntryPoint field and an empty name when
/// no section contains the entry point).
fn entry_section<'n>(pe: &Pe, names: &'n [String]) -> (&'n str, FileSpan) {
    let entry = u64::from(pe.optional_header.address_of_entry_point);
    let containing = (0..pe.sections.len())
        .rev()
        .find(|&k| pe.section_contains(&pe.sections[k], entry));
    let executable = || {
        (0..pe.sections.len())
            .find(|&k| pe.sections[k].characteristics & MEM_EXECUTE != 0 && !names[k].is_empty())
    };
    // A containing section without a name is passed over, but it is still
    // where the (empty) name comes from if no executable one has a name.
    let chosen = containing
        .filter(|&k| !names[k].is_empty())
        .or_else(executable)
        .or(containing);
    match chosen {
        Some(k) => (&names[k], header_of(&pe.sections[k])),
        None => ("", span(pe.optional_header_offset as u64 + 16, 4)),
    }
}

/// `imports`: per library (DLL names lowercased, deduplicated), one
/// contribution of 1 to `num_libraries` and one to its bucket, the name
/// the text, at the name in the file of the first descriptor with it; per
/// import, one of 1 to `num_imports` and one to its bucket, the text the
/// `dll:function` thrember hashes (`dll:DLL:ordinalN` for an unnamed
/// ordinal), at the name of its hint/name entry (its thunk for an import
/// by ordinal).
pub(super) fn imports(pe: &Pe, sink: &mut Sink) -> Option<()> {
    let Some(dlls) = &pe.imports else {
        return Some(());
    };
    // thrember's dict by DLL name: a repeated name keeps its first position
    // and the symbols of its last descriptor.
    let mut order: Vec<&[u8]> = Vec::new();
    let mut last: HashMap<&[u8], usize> = HashMap::new();
    for (k, dll) in dlls.iter().enumerate() {
        if last.insert(&dll.dll, k).is_none() {
            order.push(&dll.dll);
        }
    }
    let mut first_span: HashMap<Vec<u8>, FileSpan> = HashMap::new();
    for dll in dlls {
        first_span
            .entry(dll.dll.to_ascii_lowercase())
            .or_insert(dll.name_span);
    }
    let mut libraries: Vec<(Vec<u8>, FileSpan)> = first_span.into_iter().collect();
    libraries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, at) in &libraries {
        sink.push(1, *at, 1.0, name)?;
        sink.hashed(2, 256, name, 1.0, false, *at)?;
    }
    let mut feature = Vec::new();
    for name in order {
        let Some(&k) = last.get(name) else {
            continue;
        };
        for symbol in &dlls[k].imports {
            if !import_feature(name, symbol, &mut feature) {
                continue;
            }
            sink.push(0, symbol.span, 1.0, &feature)?;
            sink.hashed(258, 1024, &feature, 1.0, false, symbol.span)?;
        }
    }
    Some(())
}

/// `exports`: `hashed_width` (128 whenever there are exports) is one
/// contribution at the export directory's entry; each export one of ±1 to
/// its bucket, its name (`ordinalN` when it has none) the text, at its
/// name (its address-table entry when it has none).
pub(super) fn exports(pe: &Pe, sink: &mut Sink) -> Option<()> {
    let Some(exports) = pe.exports.as_ref().filter(|e| !e.is_empty()) else {
        return Some(());
    };
    sink.push(0, data_directory_entry(pe, 0), 128.0, b"")?;
    for export in exports {
        let feature = match &export.name {
            Some(name) if !name.is_empty() => name.clone(),
            _ => format!("ordinal{}", export.ordinal).into_bytes(),
        };
        sink.hashed(1, 128, &feature, 1.0, true, export.span)?;
    }
    Some(())
}
