//! A PE reader that sees a file the way pefile 2024.8.26 sees it.
//!
//! EMBER2024 ("thrember", feature version 3) defines its PE groups through
//! pefile: which files are PE at all, which sections exist, which imports
//! and exports are found and which warnings are raised all follow pefile's
//! lenient rules (a short optional header is zero-padded, section and
//! directory sizes are clamped, bad tables are skipped with a warning, and
//! many limits stop loops early). A strict parser (goblin, object, pelite)
//! rejects or reads differently exactly the malformed files these rules
//! exist for, so this module ports pefile's rules directly; see
//! BUILD_NOTES.md, "EMBER2024: why a PE reader of our own".
//!
//! Everything is bounded by the input: every read is a checked slice of
//! `data`, every loop has pefile's own limit (sections 0x800, import symbols
//! 0x2000, export symbols 0x2000), and nothing allocates more than a small
//! multiple of those limits.
//!
//! Every directory pefile reads is walked: imports, exports and base
//! relocations for their contents; the resource (resources/), debug,
//! TLS, load-config, delay-import (imports.rs), bound-import and exception
//! directories (directories.rs, load_config.rs, exceptions.rs) only for
//! pefile's warnings, side effects and `has_dynamic_relocs`, which is all
//! thrember reads of them.
//!
//! This file holds the headers and the parse in pefile's order; the section
//! table and RVA translation, which every directory reader uses, are in
//! sections.rs.

use std::cell::Cell;

mod directories;
#[cfg(test)]
mod directory_tests;
mod exceptions;
pub mod exports;
pub mod imports;
mod load_config;
pub mod ordinals;
mod resources;
pub mod rich;
mod sections;

pub use exports::Export;
pub use imports::{Import, ImportedDll};

/// pefile's `MAX_SECTIONS`.
const MAX_SECTIONS: usize = 0x800;
const IMAGE_DOS_SIGNATURE: u16 = 0x5A4D;
const IMAGE_DOSZM_SIGNATURE: u16 = 0x4D5A;
const IMAGE_NT_SIGNATURE: u32 = 0x4550;
/// Optional header magics.
pub const PE32_MAGIC: u16 = 0x10B;
/// See [`PE32_MAGIC`].
pub const PE32_PLUS_MAGIC: u16 = 0x20B;
const SECTION_HEADER_SIZE: usize = 40;
const FILE_HEADER_SIZE: usize = 20;
const OPTIONAL_HEADER32_SIZE: usize = 96;
const OPTIONAL_HEADER64_SIZE: usize = 112;

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

/// One section header, with the addresses pefile derives from it.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct Section {
    pub name: [u8; 8],
    pub virtual_size: u32,
    pub virtual_address: u32,
    pub size_of_raw_data: u32,
    pub pointer_to_raw_data: u32,
    pub characteristics: u32,
    /// pefile's `get_PointerToRawData_adj()`.
    pointer_adj: u64,
    /// pefile's `get_VirtualAddress_adj()`.
    address_adj: u64,
    /// The virtual address of the next section by address (pefile's
    /// `next_section_virtual_address`).
    next_address: Option<u32>,
}

/// Why pefile would not give a `PE` object for a file (it raised
/// `PEFormatError`; thrember then treats the file as not PE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotPe(pub &'static str);

/// A failed read inside a directory (pefile's `PEFormatError` raised by
/// `get_data` or `get_offset_from_rva`), caught by the directory's parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadRva(pub String);

/// What can escape one of pefile's directory parsers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DirectoryError {
    /// A `PEFormatError`: `parse_data_directories` turns it into the
    /// "Failed to process directory" warning and goes on.
    Format(BadRva),
    /// Any other exception (pefile reads a field of a structure it failed
    /// to unpack, an `AttributeError` on `None`): `PE()` itself raises, and
    /// thrember treats the file as not PE.
    Crash(NotPe),
}

impl From<BadRva> for DirectoryError {
    fn from(error: BadRva) -> Self {
        DirectoryError::Format(error)
    }
}

/// A parsed PE, as pefile's `PE(data=...)` with `fast_load=False` leaves it
/// (for the parts thrember reads).
#[derive(Debug)]
pub struct Pe<'a> {
    data: &'a [u8],
    /// DOS header fields, in [`DOS_FIELDS`] order.
    pub dos: [u32; 17],
    /// COFF file header.
    pub file_header: FileHeader,
    /// Optional header.
    pub optional_header: OptionalHeader,
    /// File offset of the optional header.
    pub optional_header_offset: usize,
    /// `Some(magic)` when the magic is PE32 or PE32+ (pefile's `PE_TYPE`).
    pub pe_type: Option<u16>,
    /// The data directories pefile read (at most 16).
    pub data_directories: Vec<DataDirectory>,
    /// Sections, sorted by virtual address as pefile keeps them.
    pub sections: Vec<Section>,
    /// Imported DLLs (pefile's `DIRECTORY_ENTRY_IMPORT`, when it set it).
    pub imports: Option<Vec<ImportedDll>>,
    /// Exported symbols (`DIRECTORY_ENTRY_EXPORT.symbols`, when set).
    pub exports: Option<Vec<Export>>,
    /// Whether pefile found base relocations (`has_relocs()`).
    pub has_relocs: bool,
    /// Whether pefile found dynamic relocations in the load config
    /// directory (`has_dynamic_relocs()`).
    pub has_dynamic_relocs: bool,
    /// `RICH_HEADER.values`, when pefile found a Rich header.
    pub rich_values: Option<Vec<u32>>,
    warnings: Vec<String>,
    header_len: usize,
    file_alignment_warned: bool,
    section_alignment_warned: bool,
    /// pefile's `_get_section_by_rva_last_used` cache, which decides which
    /// of two overlapping sections an address resolves to.
    last_section: Cell<Option<usize>>,
    /// pefile's `__total_import_symbols`, shared by every import table.
    total_import_symbols: usize,
}

fn u16_at(data: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([data[at], data[at + 1]])
}

fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]])
}

fn u64_at(data: &[u8], at: usize) -> u64 {
    u64::from(u32_at(data, at)) | (u64::from(u32_at(data, at + 4)) << 32)
}

/// The little-endian value of `width` bytes at `at` (0 if out of range,
/// which the callers' unpacked structures never are).
pub(crate) fn le(bytes: &[u8], at: usize, width: usize) -> u64 {
    bytes.get(at..at.saturating_add(width)).map_or(0, |b| {
        b.iter().rev().fold(0, |acc, &x| acc << 8 | u64::from(x))
    })
}

/// `data[start:end]` with Python's slice rules for non-negative bounds
/// (out of range clamps, an end before the start is empty).
pub(crate) fn py_slice(data: &[u8], start: i128, end: Option<i128>) -> &[u8] {
    let len = data.len() as i128;
    let clamp = |i: i128| -> usize {
        if i < 0 {
            (len + i).max(0) as usize
        } else {
            i.min(len) as usize
        }
    };
    let from = clamp(start);
    let to = end.map_or(data.len(), clamp);
    if to <= from {
        &[]
    } else {
        &data[from..to]
    }
}

/// The bytes up to the first NUL (pefile's `get_string_from_data(0, ...)`).
pub(crate) fn until_nul(data: &[u8]) -> &[u8] {
    memchr::memchr(0, data).map_or(data, |end| &data[..end])
}

impl<'a> Pe<'a> {
    /// Parses `data` as pefile does, or says why pefile would raise.
    pub fn parse(data: &'a [u8]) -> Result<Pe<'a>, NotPe> {
        Self::parse_with_byte_counts(data, None)
    }

    /// [`Pe::parse`] for a caller that has already counted the bytes of
    /// `data` (`byte_features::byte_counts`), which pefile's first warnings
    /// need; `None` counts them once the file is known to be PE.
    pub fn parse_with_byte_counts(
        data: &'a [u8],
        byte_counts: Option<&[u64; 256]>,
    ) -> Result<Pe<'a>, NotPe> {
        let mut warnings = Vec::new();
        if data.len() < 64 {
            return Err(NotPe(
                "Unable to read the DOS Header, possibly a truncated file.",
            ));
        }
        let mut dos = [0u32; 17];
        // Offsets of the 17 fields in IMAGE_DOS_HEADER (e_res and e_res2
        // are skipped, as thrember skips them).
        const DOS_OFFSETS: [usize; 16] =
            [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 36, 38];
        for (slot, &at) in dos.iter_mut().zip(DOS_OFFSETS.iter()) {
            *slot = u32::from(u16_at(data, at));
        }
        dos[16] = u32_at(data, 60);
        let e_magic = dos[0] as u16;
        if e_magic == IMAGE_DOSZM_SIGNATURE {
            return Err(NotPe("Probably a ZM Executable (not a PE file)."));
        }
        if e_magic != IMAGE_DOS_SIGNATURE {
            return Err(NotPe("DOS Header magic not found."));
        }
        let nt_offset = dos[16] as usize;
        if nt_offset > data.len() {
            return Err(NotPe("Invalid e_lfanew value, probably not a PE file"));
        }
        let Some(signature) = data.get(nt_offset..nt_offset + 4) else {
            return Err(NotPe("NT Headers not found."));
        };
        let signature = u32_at(signature, 0);
        if signature == 0 {
            return Err(NotPe("NT Headers not found."));
        }
        match signature & 0xFFFF {
            0x454E => return Err(NotPe("Invalid NT Headers signature. Probably a NE file")),
            0x454C => return Err(NotPe("Invalid NT Headers signature. Probably a LE file")),
            0x584C => return Err(NotPe("Invalid NT Headers signature. Probably a LX file")),
            0x5A56 => return Err(NotPe("Invalid NT Headers signature. Probably a TE file")),
            _ => {}
        }
        if signature != IMAGE_NT_SIGNATURE {
            return Err(NotPe("Invalid NT Headers signature."));
        }
        let Some(fh) = data.get(nt_offset + 4..nt_offset + 4 + FILE_HEADER_SIZE) else {
            return Err(NotPe("File Header missing"));
        };
        let file_header = FileHeader {
            machine: u16_at(fh, 0),
            number_of_sections: u16_at(fh, 2),
            time_date_stamp: u32_at(fh, 4),
            pointer_to_symbol_table: u32_at(fh, 8),
            number_of_symbols: u32_at(fh, 12),
            size_of_optional_header: u16_at(fh, 16),
            characteristics: u16_at(fh, 18),
        };
        let oh_offset = nt_offset + 4 + FILE_HEADER_SIZE;
        let sections_offset = oh_offset + usize::from(file_header.size_of_optional_header);

        // pefile reads the PE32 layout first, then the PE32+ one if the magic
        // says so; a header too short for a layout is zero-padded when at
        // least 69 (PE32) or 73 (PE32+) bytes are there.
        let oh_bytes = py_slice(data, oh_offset as i128, Some(oh_offset as i128 + 0x200));
        let corrupt = |warnings: &mut Vec<String>, name: &str| {
            warnings.push(format!(
                "Corrupt header \"{name}\" at file offset {oh_offset}. Exception: 'Data length less than expected header length.'"
            ));
        };
        let padded = |min: usize, size: usize, warnings: &mut Vec<String>| -> Option<Vec<u8>> {
            let name = if size == OPTIONAL_HEADER32_SIZE {
                "IMAGE_OPTIONAL_HEADER"
            } else {
                "IMAGE_OPTIONAL_HEADER64"
            };
            if oh_bytes.len() >= size {
                return Some(oh_bytes[..size].to_vec());
            }
            corrupt(warnings, name);
            if oh_bytes.len() >= min {
                let mut v = oh_bytes.to_vec();
                v.resize(size.max(v.len() + 128), 0);
                Some(v)
            } else {
                None
            }
        };
        // (pefile reads up to 256 bytes for the PE32 layout, which never
        // changes whether it fits.)
        let mut optional_header = None;
        let mut oh_size = OPTIONAL_HEADER32_SIZE;
        let mut pe_type = None;
        if let Some(raw) = padded(69, OPTIONAL_HEADER32_SIZE, &mut warnings) {
            let oh = read_optional_header(&raw, false);
            optional_header = Some(oh);
            if oh.magic == PE32_MAGIC {
                pe_type = Some(PE32_MAGIC);
            } else if oh.magic == PE32_PLUS_MAGIC {
                pe_type = Some(PE32_PLUS_MAGIC);
                oh_size = OPTIONAL_HEADER64_SIZE;
                optional_header = padded(73, OPTIONAL_HEADER64_SIZE, &mut warnings)
                    .map(|raw| read_optional_header(&raw, true));
            }
        }
        let Some(optional_header) = optional_header else {
            return Err(NotPe(
                "No Optional Header found, invalid PE32 or PE32+ file.",
            ));
        };
        if pe_type.is_none() {
            warnings.push(format!(
                "Invalid type 0x{:04x} in Optional Header.",
                optional_header.magic
            ));
        }
        if optional_header.address_of_entry_point < optional_header.size_of_headers {
            warnings.push(
                "SizeOfHeaders is smaller than AddressOfEntryPoint: this file cannot run under Windows 8."
                    .into(),
            );
        }
        if optional_header.number_of_rva_and_sizes > 0x10 {
            warnings.push(format!(
                "Suspicious NumberOfRvaAndSizes in the Optional Header. Normal values are never larger than 0x10, the value is: 0x{:x}",
                optional_header.number_of_rva_and_sizes
            ));
        }
        let mut data_directories = Vec::new();
        let dirs_start = oh_offset + oh_size;
        let mut offset = dirs_start;
        // pefile stops at 16 entries (its name table) and past the space of
        // 16 entries, whatever NumberOfRvaAndSizes says.
        for _ in 0..(optional_header.number_of_rva_and_sizes & 0x7FFF_FFFF).min(16) {
            if data.len() == offset {
                break;
            }
            let mut entry = [0u8; 8];
            let available = py_slice(data, offset as i128, Some(offset as i128 + 8));
            entry[..available.len()].copy_from_slice(available);
            data_directories.push(DataDirectory {
                virtual_address: u32_at(&entry, 0),
                size: u32_at(&entry, 4),
            });
            offset += 8;
            if offset >= dirs_start + 8 * 16 {
                break;
            }
        }

        let mut pe = Pe {
            data,
            dos,
            file_header,
            optional_header,
            optional_header_offset: oh_offset,
            pe_type,
            data_directories,
            sections: Vec::new(),
            imports: None,
            exports: None,
            has_relocs: false,
            has_dynamic_relocs: false,
            rich_values: None,
            warnings,
            header_len: 0,
            file_alignment_warned: false,
            section_alignment_warned: false,
            last_section: Cell::new(None),
            total_import_symbols: 0,
        };
        let end_of_section_table = pe.parse_sections(sections_offset)?;
        let lowest_raw = pe
            .sections
            .iter()
            .filter(|s| s.pointer_to_raw_data > 0)
            .map(|s| u64::from(s.pointer_to_raw_data & !0x1FF))
            .min();
        pe.header_len = match lowest_raw {
            Some(lowest) if lowest != 0 && lowest >= end_of_section_table as u64 => {
                lowest.min(data.len() as u64) as usize
            }
            _ => end_of_section_table.min(data.len()),
        };
        let entry = pe.optional_header.address_of_entry_point;
        if pe.section_by_rva(u64::from(entry)).is_some() {
            if let Ok(offset) = pe.offset_from_rva(u64::from(entry)) {
                if offset > data.len() as i128 {
                    pe.warnings.push(format!(
                        "Possibly corrupt file. AddressOfEntryPoint lies outside the file. AddressOfEntryPoint: 0x{entry:x}"
                    ));
                }
            }
        } else {
            pe.warnings.push(format!(
                "AddressOfEntryPoint lies outside the sections' boundaries. AddressOfEntryPoint: 0x{entry:x}"
            ));
        }
        pe.parse_data_directories()?;
        let rich = rich::parse(data, oh_offset);
        pe.rich_values = rich.values;
        pe.warnings
            .extend(rich.warnings.iter().map(|w| w.to_string()));
        // pefile counts the bytes first of all; the warnings only matter for
        // a file it accepts (thrember reads them as a set), so rustfx counts
        // last and never for a file that is not PE.
        let counted;
        let byte_counts = match byte_counts {
            Some(counts) => counts,
            None => {
                counted = crate::byte_features::byte_counts(data);
                &counted
            }
        };
        byte_share_warnings(data.len(), byte_counts, &mut pe.warnings);
        Ok(pe)
    }

    /// The whole file.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// pefile's warnings, in the order it raised them.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    pub(crate) fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }

    /// pefile's `__unpack_data__`: the first `size` bytes of `bytes` (a
    /// structure named `name` read at `file_offset`), or `None` with pefile's
    /// "Corrupt header" warning when there are fewer.
    pub(crate) fn unpack<'b>(
        &mut self,
        name: &str,
        bytes: &'b [u8],
        size: usize,
        file_offset: i128,
    ) -> Option<&'b [u8]> {
        let structure = bytes.get(..size);
        if structure.is_none() {
            self.warn(format!(
                "Corrupt header \"{name}\" at file offset {file_offset}. Exception: 'Data length less than expected header length.'"
            ));
        }
        structure
    }

    /// pefile's `parse_data_directories`. pefile walks its directory list
    /// in a fixed order and stops at the first index the file does not have;
    /// that order is kept so the same ones are skipped, and so the
    /// section-lookup cache and the import-symbol count carry over from one
    /// directory to the next as in pefile.
    fn parse_data_directories(&mut self) -> Result<(), NotPe> {
        const EXPORT: usize = 0;
        const IMPORT: usize = 1;
        const RESOURCE: usize = 2;
        const EXCEPTION: usize = 3;
        const BASERELOC: usize = 5;
        const DEBUG: usize = 6;
        const TLS: usize = 9;
        const LOAD_CONFIG: usize = 10;
        const BOUND_IMPORT: usize = 11;
        const DELAY_IMPORT: usize = 13;
        for (index, name) in [
            (IMPORT, "IMAGE_DIRECTORY_ENTRY_IMPORT"),
            (EXPORT, "IMAGE_DIRECTORY_ENTRY_EXPORT"),
            (RESOURCE, "IMAGE_DIRECTORY_ENTRY_RESOURCE"),
            (DEBUG, "IMAGE_DIRECTORY_ENTRY_DEBUG"),
            (BASERELOC, "IMAGE_DIRECTORY_ENTRY_BASERELOC"),
            (TLS, "IMAGE_DIRECTORY_ENTRY_TLS"),
            (LOAD_CONFIG, "IMAGE_DIRECTORY_ENTRY_LOAD_CONFIG"),
            (DELAY_IMPORT, "IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"),
            (BOUND_IMPORT, "IMAGE_DIRECTORY_ENTRY_BOUND_IMPORT"),
            (EXCEPTION, "IMAGE_DIRECTORY_ENTRY_EXCEPTION"),
        ] {
            let Some(&dir) = self.data_directories.get(index) else {
                break;
            };
            if dir.virtual_address == 0 {
                continue;
            }
            let (rva, size) = (u64::from(dir.virtual_address), u64::from(dir.size));
            let result: Result<(), DirectoryError> = match index {
                IMPORT => imports::parse_import_directory(self, rva)
                    .map(|dlls| {
                        if !dlls.is_empty() {
                            self.imports = Some(dlls);
                        }
                    })
                    .map_err(DirectoryError::from),
                EXPORT => exports::parse_export_directory(self, rva, size)
                    .map(|symbols| {
                        self.exports = symbols;
                    })
                    .map_err(DirectoryError::from),
                RESOURCE => resources::parse_resources_directory(self, rva, size)
                    .map_err(DirectoryError::from),
                DEBUG => directories::parse_debug_directory(self, rva, size),
                BASERELOC => {
                    let blocks =
                        directories::parse_image_base_relocation_list(self, rva, size, None);
                    self.has_relocs = blocks > 0;
                    Ok(())
                }
                TLS => {
                    directories::parse_directory_tls(self, rva);
                    Ok(())
                }
                LOAD_CONFIG => load_config::parse_directory_load_config(self, rva).map(|dynamic| {
                    self.has_dynamic_relocs = dynamic;
                }),
                DELAY_IMPORT => imports::parse_delay_import_directory(self, rva),
                BOUND_IMPORT => directories::parse_directory_bound_imports(self, rva),
                EXCEPTION => exceptions::parse_exceptions_directory(self, rva, size),
                _ => Ok(()),
            };
            match result {
                Ok(()) => {}
                Err(DirectoryError::Format(BadRva(message))) => self.warnings.push(format!(
                    "Failed to process directory \"{name}\": '{message}'"
                )),
                Err(DirectoryError::Crash(not_pe)) => return Err(not_pe),
            }
        }
        Ok(())
    }

    /// pefile's `get_overlay()`: the bytes after everything the headers
    /// describe, or `None`.
    pub fn overlay(&self) -> Option<&'a [u8]> {
        let file_size = self.data.len() as u64;
        let mut largest = 0u64;
        let mut consider = |offset: u64, size: u64| {
            let end = offset + size;
            if largest < end && end <= file_size {
                largest = end;
            }
        };
        consider(
            self.optional_header_offset as u64,
            u64::from(self.file_header.size_of_optional_header),
        );
        for s in &self.sections {
            consider(
                u64::from(s.pointer_to_raw_data),
                u64::from(s.size_of_raw_data),
            );
        }
        for (index, dir) in self.data_directories.iter().enumerate() {
            // The certificate table's address is a file offset, not an RVA.
            if index == 4 {
                continue;
            }
            if let Ok(offset) = self.offset_from_rva(u64::from(dir.virtual_address)) {
                if offset >= 0 {
                    consider(offset as u64, u64::from(dir.size));
                }
            }
        }
        (file_size > largest).then(|| &self.data[largest as usize..])
    }
}

/// The optional header in either layout: PE32+ has no `BaseOfData`, a
/// 64-bit `ImageBase` in its place, and 64-bit stack and heap sizes, which
/// move the last two fields by 16 bytes; every other field is at the same
/// offset.
fn read_optional_header(raw: &[u8], plus: bool) -> OptionalHeader {
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

/// pefile's first warnings: any byte value that makes up more than half
/// (zero) or 15% (any other) of the file.
fn byte_share_warnings(len: usize, counts: &[u64; 256], warnings: &mut Vec<String>) {
    if len == 0 {
        return;
    }
    let len = len as f64;
    for (byte, &count) in counts.iter().enumerate() {
        let share = count as f64 / len;
        if (byte == 0 && share > 0.5) || (byte != 0 && share > 0.15) {
            warnings.push(format!(
                "Byte 0x{byte:02x} makes up {:.4}% of the file's contents. This may indicate truncation / malformation.",
                100.0 * share
            ));
        }
    }
}
