//! The DOS, COFF file and optional headers and the data directory
//! entries, as pefile reads them.

use super::{u16_at, u32_at, u64_at};

/// The 17 DOS header fields thrember reads, in its order.
pub const DOS_FIELDS: [&str; 17] = [
    "e_magic",
    "e_cblp",
    "e_cp",
    "e_crlc",
    "e_cparhdr",
    "e_minalloc",
    "e_maxalloc",
    "e_ss",
    "e_sp",
    "e_csum",
    "e_ip",
    "e_cs",
    "e_lfarlc",
    "e_ovno",
    "e_oemid",
    "e_oeminfo",
    "e_lfanew",
];

/// The COFF file header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct FileHeader {
    pub machine: u16,
    pub number_of_sections: u16,
    pub time_date_stamp: u32,
    pub pointer_to_symbol_table: u32,
    pub number_of_symbols: u32,
    pub size_of_optional_header: u16,
    pub characteristics: u16,
}

/// The optional header, PE32 and PE32+ fields in one (PE32+ has no
/// `base_of_data`; it stays 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct OptionalHeader {
    pub magic: u16,
    pub major_linker_version: u8,
    pub minor_linker_version: u8,
    pub size_of_code: u32,
    pub size_of_initialized_data: u32,
    pub size_of_uninitialized_data: u32,
    pub address_of_entry_point: u32,
    pub base_of_code: u32,
    pub base_of_data: u32,
    pub image_base: u64,
    pub section_alignment: u32,
    pub file_alignment: u32,
    pub major_operating_system_version: u16,
    pub minor_operating_system_version: u16,
    pub major_image_version: u16,
    pub minor_image_version: u16,
    pub major_subsystem_version: u16,
    pub minor_subsystem_version: u16,
    pub size_of_image: u32,
    pub size_of_headers: u32,
    pub check_sum: u32,
    pub subsystem: u16,
    pub dll_characteristics: u16,
    pub size_of_stack_reserve: u64,
    pub size_of_stack_commit: u64,
    pub size_of_heap_reserve: u64,
    pub size_of_heap_commit: u64,
    pub loader_flags: u32,
    pub number_of_rva_and_sizes: u32,
}

/// One data directory entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DataDirectory {
    /// Its RVA.
    pub virtual_address: u32,
    /// Its size in bytes.
    pub size: u32,
}

/// The optional header in either layout: PE32+ has no `BaseOfData`, a
/// 64-bit `ImageBase` in its place, and 64-bit stack and heap sizes, which
/// move the last two fields by 16 bytes; every other field is at the same
/// offset.
pub(super) fn read_optional_header(raw: &[u8], plus: bool) -> OptionalHeader {
    // A field that is 32-bit in PE32 and 64-bit in PE32+.
    let wide = |at32: usize, at64: usize| {
        if plus {
            u64_at(raw, at64)
        } else {
            u64::from(u32_at(raw, at32))
        }
    };
    let tail = if plus { 16 } else { 0 };
    OptionalHeader {
        magic: u16_at(raw, 0),
        major_linker_version: raw[2],
        minor_linker_version: raw[3],
        size_of_code: u32_at(raw, 4),
        size_of_initialized_data: u32_at(raw, 8),
        size_of_uninitialized_data: u32_at(raw, 12),
        address_of_entry_point: u32_at(raw, 16),
        base_of_code: u32_at(raw, 20),
        base_of_data: if plus { 0 } else { u32_at(raw, 24) },
        image_base: wide(28, 24),
        section_alignment: u32_at(raw, 32),
        file_alignment: u32_at(raw, 36),
        major_operating_system_version: u16_at(raw, 40),
        minor_operating_system_version: u16_at(raw, 42),
        major_image_version: u16_at(raw, 44),
        minor_image_version: u16_at(raw, 46),
        major_subsystem_version: u16_at(raw, 48),
        minor_subsystem_version: u16_at(raw, 50),
        size_of_image: u32_at(raw, 56),
        size_of_headers: u32_at(raw, 60),
        check_sum: u32_at(raw, 64),
        subsystem: u16_at(raw, 68),
        dll_characteristics: u16_at(raw, 70),
        size_of_stack_reserve: wide(72, 72),
        size_of_stack_commit: wide(76, 80),
        size_of_heap_reserve: wide(80, 88),
        size_of_heap_commit: wide(84, 96),
        loader_flags: u32_at(raw, 88 + tail),
        number_of_rva_and_sizes: u32_at(raw, 92 + tail),
    }
}
