//! `PE(data=...)` in pefile's order: the headers, the section table, the
//! entry point checks, every data directory, the Rich header and the
//! byte-share warnings.

use std::cell::Cell;

use super::headers::read_optional_header;
use super::{
    directories, exceptions, exports, imports, load_config, py_slice, resources, rich, u16_at,
    u32_at, BadRva, DataDirectory, DirectoryError, FileHeader, NotPe, Pe, FILE_HEADER_SIZE,
    IMAGE_DOSZM_SIGNATURE, IMAGE_DOS_SIGNATURE, IMAGE_NT_SIGNATURE, OPTIONAL_HEADER32_SIZE,
    OPTIONAL_HEADER64_SIZE, PE32_MAGIC, PE32_PLUS_MAGIC,
};

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
