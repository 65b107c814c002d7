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
//! This file holds the `Pe` type, its errors and the byte readers; the
//! headers are in headers.rs, the parse in pefile's order in parse.rs, and
//! the section table and RVA translation, which every directory reader
//! uses, in sections.rs.

use std::cell::Cell;

mod directories;
#[cfg(test)]
mod directory_tests;
mod exceptions;
pub mod exports;
mod headers;
pub mod imports;
mod load_config;
pub mod ordinals;
mod parse;
mod resources;
pub mod rich;
mod sections;

pub use exports::Export;
pub use headers::{DataDirectory, FileHeader, OptionalHeader, DOS_FIELDS};
pub use imports::{Import, ImportedDll};

/// Where something pefile read lies in the file: its first byte and its
/// length (offset 0, length 0 when it lies nowhere in the file). Kept so
/// that an explanation can point at the bytes behind a value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileSpan {
    /// The first byte.
    pub offset: u64,
    /// How many bytes.
    pub length: u64,
}

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
    /// Where its 40-byte header is in the file (the table is sorted by
    /// address, so its position there does not say).
    header_offset: u64,
}

impl Section {
    /// The file offset of this section's header.
    pub fn header_offset(&self) -> u64 {
        self.header_offset
    }
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
    /// The whole file.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Where `part`, a slice borrowed from this file (as pefile's readers
    /// return them), lies in it; the empty span for any other slice. Costs
    /// two comparisons, so the parser records spans for free.
    pub fn span_of(&self, part: &[u8]) -> FileSpan {
        let file = self.data.as_ptr_range();
        let range = part.as_ptr_range();
        if part.is_empty() || range.start < file.start || range.end > file.end {
            return FileSpan::default();
        }
        FileSpan {
            offset: (range.start as usize - file.start as usize) as u64,
            length: part.len() as u64,
        }
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
