//! Explanations of the groups read from the headers' fixed layout:
//! `header`, `datadirectories` and `richheader`.

use super::explain::{span, Sink};
use super::header::{MACHINES, SUBSYSTEMS};
use crate::pe::{FileSpan, Pe, PE32_PLUS_MAGIC};

/// Offsets of the 16 two-byte DOS fields thrember reads (`e_lfanew`, the
/// 17th, is 4 bytes at 60).
const DOS_OFFSETS: [u64; 16] = [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 36, 38];
const FILE_HEADER_SIZE: u64 = 20;

/// A header field's value as float64 such that the one cast to float32
/// gives thrember's `int64 -> float32`: the field itself when float64
/// holds it exactly (every field but the 64-bit ones past 2^53), else its
/// float32 value, which is then what the contribution carries.
fn field_value(v: u64) -> f64 {
    if v <= 1 << 53 {
        v as f64
    } else {
        f64::from(v as f32)
    }
}

fn is_pe32_plus(pe: &Pe) -> bool {
    pe.pe_type == Some(PE32_PLUS_MAGIC)
}

/// The 8-byte entry of data directory `k` in the optional header.
pub(super) fn data_directory_entry(pe: &Pe, k: u64) -> FileSpan {
    let fixed = if is_pe32_plus(pe) { 112 } else { 96 };
    span(pe.optional_header_offset as u64 + fixed + 8 * k, 8)
}

/// `header`: each of the 30 values and 17 DOS fields is one contribution
/// carrying it, at its field (machine and subsystem: their position in
/// thrember's list, at the field); each flag set is one contribution of 1
/// at its characteristics field. Flags not set have none.
pub(super) fn header(pe: &Pe, sink: &mut Sink) -> Option<()> {
    let fh = &pe.file_header;
    let oh = &pe.optional_header;
    let o = pe.optional_header_offset as u64;
    let f = o.saturating_sub(FILE_HEADER_SIZE);
    let plus = is_pe32_plus(pe);
    let at = |offset: u64, length: u64| span(o + offset, length);
    // PE32+ widens the image base and the stack and heap sizes to 8 bytes.
    let wide = |at32: u64, at64: u64| {
        if plus {
            span(o + at64, 8)
        } else {
            span(o + at32, 4)
        }
    };
    let machine = MACHINES.iter().rposition(|&m| m == fh.machine).unwrap_or(0);
    let subsystem = SUBSYSTEMS
        .iter()
        .position(|&s| s == oh.subsystem)
        .unwrap_or(0);
    let fields: [(FileSpan, u64); 30] = [
        (span(f + 4, 4), u64::from(fh.time_date_stamp)),
        (span(f + 2, 2), u64::from(fh.number_of_sections)),
        (span(f + 12, 4), u64::from(fh.number_of_symbols)),
        (span(f + 16, 2), u64::from(fh.size_of_optional_header)),
        (span(f + 8, 4), u64::from(fh.pointer_to_symbol_table)),
        (span(f, 2), machine as u64),
        (at(68, 2), subsystem as u64),
        (at(44, 2), u64::from(oh.major_image_version)),
        (at(46, 2), u64::from(oh.minor_image_version)),
        (at(2, 1), u64::from(oh.major_linker_version)),
        (at(3, 1), u64::from(oh.minor_linker_version)),
        (at(40, 2), u64::from(oh.major_operating_system_version)),
        (at(42, 2), u64::from(oh.minor_operating_system_version)),
        (at(48, 2), u64::from(oh.major_subsystem_version)),
        (at(50, 2), u64::from(oh.minor_subsystem_version)),
        (at(4, 4), u64::from(oh.size_of_code)),
        (at(60, 4), u64::from(oh.size_of_headers)),
        (at(56, 4), u64::from(oh.size_of_image)),
        (at(8, 4), u64::from(oh.size_of_initialized_data)),
        (at(12, 4), u64::from(oh.size_of_uninitialized_data)),
        (wide(72, 72), oh.size_of_stack_reserve),
        (wide(76, 80), oh.size_of_stack_commit),
        (wide(80, 88), oh.size_of_heap_reserve),
        (wide(84, 96), oh.size_of_heap_commit),
        (at(16, 4), u64::from(oh.address_of_entry_point)),
        (at(20, 4), u64::from(oh.base_of_code)),
        (wide(28, 24), oh.image_base),
        (at(32, 4), u64::from(oh.section_alignment)),
        (at(64, 4), u64::from(oh.check_sum)),
        (
            at(if plus { 108 } else { 92 }, 4),
            u64::from(oh.number_of_rva_and_sizes),
        ),
    ];
    for (local, (field, value)) in fields.into_iter().enumerate() {
        sink.push(local, field, field_value(value), b"")?;
    }
    for bit in 0..16 {
        if fh.characteristics & (1 << bit) != 0 {
            sink.push(30 + bit, span(f + 18, 2), 1.0, b"")?;
        }
    }
    // thrember's 11 DLL characteristics are bits 5 to 15.
    for (k, bit) in (5..16).enumerate() {
        if oh.dll_characteristics & (1 << bit) != 0 {
            sink.push(46 + k, at(70, 2), 1.0, b"")?;
        }
    }
    let dos_fields = DOS_OFFSETS
        .iter()
        .map(|&at| span(at, 2))
        .chain([span(60, 4)]);
    for (k, (field, &value)) in dos_fields.zip(&pe.dos).enumerate() {
        sink.push(57 + k, field, f64::from(value), b"")?;
    }
    Some(())
}

/// `datadirectories`: each size and address is one contribution carrying
/// it, at its field of the directory's entry; `has_relocs` and
/// `has_dynamic_relocs`, when true, one contribution of 1 at the entry of
/// the base-relocation or load-config directory that pefile read them from.
pub(super) fn data_directories(pe: &Pe, sink: &mut Sink) -> Option<()> {
    // thrember's loop stops one short of the directories pefile read.
    let count = pe.data_directories.len().saturating_sub(1);
    for (k, dir) in pe.data_directories.iter().take(count).enumerate() {
        let entry = data_directory_entry(pe, k as u64);
        sink.push(2 * k, span(entry.offset + 4, 4), f64::from(dir.size), b"")?;
        sink.push(
            2 * k + 1,
            span(entry.offset, 4),
            f64::from(dir.virtual_address),
            b"",
        )?;
    }
    if pe.has_relocs {
        sink.push(32, data_directory_entry(pe, 5), 1.0, b"")?;
    }
    if pe.has_dynamic_relocs {
        sink.push(33, data_directory_entry(pe, 10), 1.0, b"")?;
    }
    Some(())
}

/// Where the Rich header's (comp id, count) pairs start: after "DanS" and
/// its three padding dwords at 0x80, where pefile reads them.
const RICH_PAIRS_AT: u64 = 0x80 + 16;

/// `richheader`: each (comp id, count) pair is one contribution of 1 to
/// `num_pairs` and one of its ±count to the bucket of its comp id (in
/// decimal, the text of both), at the pair's 8 bytes.
pub(super) fn rich_header(pe: &Pe, sink: &mut Sink) -> Option<()> {
    let Some(values) = pe.rich_values.as_ref() else {
        return Some(());
    };
    for (k, pair) in values.chunks_exact(2).enumerate() {
        let at = span(RICH_PAIRS_AT + 8 * k as u64, 8);
        let comp_id = pair[0].to_string();
        sink.push(0, at, 1.0, comp_id.as_bytes())?;
        sink.hashed(1, 32, comp_id.as_bytes(), f64::from(pair[1]), true, at)?;
    }
    Some(())
}
