//! The `header` group: the COFF file header, the optional header and the
//! DOS header fields.

use crate::pe::{Pe, DOS_FIELDS};

/// thrember's machine list (its index is the feature); pefile names 0x284
/// `AXP64` (its second name for that value), index 21.
pub(super) const MACHINES: [u16; 36] = [
    0x0, 0x014C, 0x0162, 0x0166, 0x0168, 0x0169, 0x0184, 0x01A2, 0x01A3, 0x01A4, 0x01A6, 0x01A8,
    0x01C0, 0x01C2, 0x01C4, 0x01D3, 0x01F0, 0x01F1, 0x0200, 0x0266, 0x0284, 0x0284, 0x0366, 0x0466,
    0x0520, 0x0CEF, 0x0EBC, 0x5032, 0x5064, 0x5128, 0x6232, 0x6264, 0x8664, 0x9041, 0xAA64, 0xC0EE,
];

/// thrember's subsystem list, by value.
pub(super) const SUBSYSTEMS: [u16; 14] = [0, 1, 2, 3, 5, 7, 8, 9, 10, 11, 12, 13, 14, 16];

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
