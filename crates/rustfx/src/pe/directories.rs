//! The debug, base relocation, TLS and bound-import directories as pefile
//! 2024.8.26 reads them (`parse_debug_directory`,
//! `parse_image_base_relocation_list`, `parse_directory_tls`,
//! `parse_directory_bound_imports`); the delay-import directory shares the
//! import readers and lives with them in imports.rs.
//!
//! thrember reads none of their contents, only the warnings pefile raises
//! on the way (and whether any relocation block was found), so these
//! readers keep nothing but that: each step that can warn, raise or move
//! pefile's section-lookup cache is taken in pefile's order, with pefile's
//! wording. Every loop ends where pefile's does: at the end of the declared
//! size or of the bytes there are, whichever comes first.

use std::collections::HashSet;

use super::{le, py_slice, until_nul, BadRva, DirectoryError, NotPe, Pe, PE32_PLUS_MAGIC};

/// pefile's `MAX_STRING_LENGTH`.
const MAX_STRING_LENGTH: i128 = 0x10_0000;

/// pefile's `parse_debug_directory`. Only the entry types pefile looks
/// into (CodeView, misc, extended DLL characteristics) can warn.
pub(crate) fn parse_debug_directory(
    pe: &mut Pe,
    rva: u64,
    size: u64,
) -> Result<(), DirectoryError> {
    const ENTRY_SIZE: u64 = 28;
    for index in 0..size / ENTRY_SIZE {
        let at = rva + ENTRY_SIZE * index;
        let Ok(bytes) = pe.get_data(at, Some(ENTRY_SIZE.into())) else {
            // (pefile names the directory's RVA, not the entry's.)
            pe.warn(format!(
                "Invalid debug information. Can't read data at RVA: 0x{rva:x}"
            ));
            return Ok(());
        };
        let file_offset = pe.offset_from_rva(at)?;
        let Some(entry) = pe.unpack("IMAGE_DEBUG_DIRECTORY", bytes, 28, file_offset) else {
            return Ok(());
        };
        let (kind, size_of_data, pointer) = (le(entry, 12, 4), le(entry, 16, 4), le(entry, 24, 4));
        let (pointer, size_of_data) = (i128::from(pointer), i128::from(size_of_data));
        let raw = py_slice(pe.data, pointer, Some(pointer + size_of_data));
        // A structure with a variable tail takes all of the declared size
        // when that is longer than its fixed part.
        let whole = |fixed: usize| (size_of_data.max(fixed as i128)) as usize;
        match kind {
            2 if raw.starts_with(b"RSDS") => {
                pe.unpack("CV_INFO_PDB70", raw, whole(24), pointer);
            }
            2 if raw.starts_with(b"NB10") => {
                pe.unpack("CV_INFO_PDB20", raw, whole(16), pointer);
            }
            4 => {
                if let Some(misc) = pe.unpack("IMAGE_DEBUG_MISC", raw, 12, pointer) {
                    // Only a Unicode flag of 0 or 1 makes pefile read the data.
                    if le(misc, 8, 1) <= 1 {
                        pe.unpack("IMAGE_DEBUG_MISC", raw, whole(12), pointer);
                    }
                }
            }
            // pefile then reads a field of the `None` it got.
            20 if pe
                .unpack("IMAGE_DEBUG_EX_DLLCHARACTERISTICS", raw, 4, pointer)
                .is_none() =>
            {
                return Err(DirectoryError::Crash(NotPe(
                    "'NoneType' object has no attribute 'ExDllCharacteristics'",
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

/// How pefile reads the entries of a relocation block: two-byte words
/// keyed by (offset, type), or one of the dynamic relocation bitfield
/// formats, of this many bytes, keyed by their 12-bit page offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RelocationEntries {
    /// `IMAGE_BASE_RELOCATION_ENTRY` (`parse_relocations`).
    Words,
    /// A bitfield format (`parse_relocations_with_format`).
    PageOffsets(usize),
}

/// pefile's `parse_image_base_relocation_list`: the number of blocks it
/// keeps (its list's length), with its warnings.
pub(crate) fn parse_image_base_relocation_list(
    pe: &mut Pe,
    mut rva: u64,
    size: u64,
    entries: Option<RelocationEntries>,
) -> usize {
    let end = rva.saturating_add(size);
    let mut blocks = 0;
    let size_of_image = pe.optional_header.size_of_image;
    while rva < end {
        let block = pe.data_and_offset(rva, Some(8));
        let Ok((bytes, file_offset)) = block else {
            pe.warn(format!(
                "Invalid relocation information. Can't read data at RVA: 0x{rva:x}"
            ));
            break;
        };
        let Some(header) = pe.unpack("IMAGE_BASE_RELOCATION", bytes, 8, file_offset) else {
            break;
        };
        let (virtual_address, size_of_block) = (le(header, 0, 4), le(header, 4, 4));
        if virtual_address > u64::from(size_of_image) {
            pe.warn(format!(
                "Invalid relocation information. VirtualAddress outside of Image: 0x{virtual_address:x}"
            ));
            break;
        }
        if size_of_block > u64::from(size_of_image) {
            pe.warn(format!(
                "Invalid relocation information. SizeOfBlock too large: {size_of_block}"
            ));
            break;
        }
        parse_relocations(
            pe,
            rva + 8,
            virtual_address,
            i128::from(size_of_block) - 8,
            entries.unwrap_or(RelocationEntries::Words),
        );
        blocks += 1;
        if size_of_block == 0 {
            break;
        }
        rva += size_of_block;
    }
    blocks
}

/// pefile's `parse_relocations` and `parse_relocations_with_format`: one
/// block's entries, which warn when an entry repeats.
fn parse_relocations(
    pe: &mut Pe,
    data_rva: u64,
    page_rva: u64,
    size: i128,
    entries: RelocationEntries,
) {
    let data = match pe.get_data(data_rva, Some(size)) {
        Ok(data) if pe.offset_from_rva(data_rva).is_ok() => data,
        _ => {
            pe.warn(format!("Bad RVA in relocation data: 0x{data_rva:x}"));
            return;
        }
    };
    let width = match entries {
        RelocationEntries::Words => 2,
        RelocationEntries::PageOffsets(width) => width,
    };
    // A word is its (offset, type) pair; a bitfield entry is keyed by its
    // low 12 bits. Either way at most 2^16 distinct keys.
    let mut seen = HashSet::new();
    for entry in data.chunks_exact(width) {
        let value = le(entry, 0, width);
        let key = match entries {
            RelocationEntries::Words => value,
            RelocationEntries::PageOffsets(_) => value & 0xFFF,
        };
        if !seen.insert(key) {
            pe.warn(format!(
                "Overlapping offsets in relocation data at RVA: 0x{:x}",
                (key & 0xFFF) + page_rva
            ));
            break;
        }
    }
}

/// pefile's `parse_directory_tls`: the directory is read, never followed.
pub(crate) fn parse_directory_tls(pe: &mut Pe, rva: u64) {
    let size = if pe.pe_type == Some(PE32_PLUS_MAGIC) {
        40
    } else {
        24
    };
    let read = pe.data_and_offset(rva, Some(size as i128));
    match read {
        Ok((bytes, offset)) => {
            pe.unpack("IMAGE_TLS_DIRECTORY", bytes, size, offset);
        }
        Err(_) => pe.warn(format!(
            "Invalid TLS information. Can't read data at RVA: 0x{rva:x}"
        )),
    }
}

/// pefile's `get_section_by_offset` (no cache).
fn section_by_offset(pe: &Pe, offset: i128) -> Option<usize> {
    pe.sections.iter().position(|s| {
        let start = s.pointer_adj as i128;
        start <= offset && offset < start + i128::from(s.size_of_raw_data)
    })
}

/// A bound-import name pefile rejects: longer than 256 bytes or with a
/// byte outside Python's `string.printable`.
fn bad_bound_name(name: &[u8]) -> bool {
    name.len() > 256
        || name
            .iter()
            .any(|&c| !(c == b' ' || c.is_ascii_graphic() || b"\t\n\r\x0b\x0c".contains(&c)))
}

/// pefile's `parse_directory_bound_imports`. Its "RVA" is used as a file
/// offset, as pefile does.
pub(crate) fn parse_directory_bound_imports(pe: &mut Pe, rva: u64) -> Result<(), DirectoryError> {
    const ENTRY_SIZE: usize = 8;
    let start = i128::from(rva);
    let mut at = start;
    let name_at = |pe: &Pe, offset: u64| {
        let offset = start + i128::from(offset);
        until_nul(py_slice(pe.data, offset, Some(offset + MAX_STRING_LENGTH))).to_vec()
    };
    // Every pass moves `at` forward by at least one 8-byte entry that had
    // to be in the file.
    loop {
        let bytes = py_slice(pe.data, at, Some(at + ENTRY_SIZE as i128));
        let Some(descriptor) = pe.unpack("IMAGE_BOUND_IMPORT_DESCRIPTOR", bytes, ENTRY_SIZE, at)
        else {
            pe.warn("The Bound Imports directory exists but can't be parsed.".into());
            return Ok(());
        };
        if descriptor.iter().all(|&b| b == 0) {
            break;
        }
        let (module_name, forwarder_refs) = (le(descriptor, 4, 2), le(descriptor, 6, 2));
        at += ENTRY_SIZE as i128;
        let section = section_by_offset(pe, at);
        let file_offset = pe.offset_from_rva(at as u64)?;
        let (section, safety_boundary) = match section {
            Some(k) => {
                let s = &pe.sections[k];
                let length = pe.section_bytes(s).len() as i128;
                (
                    Some(k),
                    i128::from(s.pointer_to_raw_data) + length - file_offset,
                )
            }
            None => {
                let mut boundary = pe.data.len() as i128 - file_offset;
                let first_after = pe
                    .sections
                    .iter()
                    .map(|s| i128::from(s.pointer_to_raw_data))
                    .filter(|&p| p > file_offset)
                    .min();
                let section = first_after.and_then(|first| section_by_offset(pe, first));
                if let Some(k) = section {
                    boundary = i128::from(pe.sections[k].pointer_to_raw_data) - file_offset;
                }
                (section, boundary)
            }
        };
        if section.is_none() {
            pe.warn(format!(
                "RVA of IMAGE_BOUND_IMPORT_DESCRIPTOR points to an invalid address: {at:x}"
            ));
            return Ok(());
        }
        // (Python's int() of the division truncates toward zero, as `/` does.)
        let refs = i128::from(forwarder_refs).min(safety_boundary / 8);
        for _ in 0..refs.max(0) {
            let bytes = py_slice(pe.data, at, Some(at + ENTRY_SIZE as i128));
            let Some(forwarder) = pe.unpack("IMAGE_BOUND_FORWARDER_REF", bytes, ENTRY_SIZE, at)
            else {
                return Err(BadRva("IMAGE_BOUND_FORWARDER_REF cannot be read".into()).into());
            };
            at += ENTRY_SIZE as i128;
            let name = name_at(pe, le(forwarder, 4, 2));
            if !name.is_empty() && bad_bound_name(&name) {
                break;
            }
        }
        let name = name_at(pe, module_name);
        if name.is_empty() || bad_bound_name(&name) {
            break;
        }
    }
    Ok(())
}
