//! The load config directory as pefile 2024.8.26 reads it
//! (`parse_directory_load_config`, `parse_dynamic_relocations`,
//! `parse_function_override_data`): what decides `has_dynamic_relocs()`,
//! and the warnings on the way.
//!
//! pefile trusts the directory's own `Size` field to pick how many of the
//! structure's fields to read, and then reads the dynamic relocation fields
//! whenever more than 35 fields were read, whether or not they were among
//! them; where they were not, or where the dynamic relocation table cannot
//! be unpacked, pefile raises a non-`PEFormatError` exception and `PE()`
//! fails (thrember then sees no PE). Those cases give
//! [`DirectoryError::Crash`].

use super::directories::{parse_image_base_relocation_list, RelocationEntries};
use super::{le, DirectoryError, NotPe, Pe, PE32_MAGIC, PE32_PLUS_MAGIC};

/// Field sizes of pefile's `IMAGE_LOAD_CONFIG_DIRECTORY` (PE32) format.
const FIELDS_32: [u8; 52] = [
    4, 4, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2, 2, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
];
/// Field sizes of pefile's `IMAGE_LOAD_CONFIG_DIRECTORY64` format.
const FIELDS_64: [u8; 52] = [
    4, 4, 2, 2, 4, 4, 4, 8, 8, 8, 8, 8, 8, 4, 2, 2, 8, 8, 8, 8, 8, 8, 8, 8, 4, 2, 2, 4, 4, 8, 8, 8,
    8, 8, 8, 8, 8, 4, 2, 2, 8, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 8,
];
/// Index of `DynamicValueRelocTableOffset` (a dword); the section number
/// (a word) follows it.
const DYNAMIC_RELOC_OFFSET_FIELD: usize = 37;

/// pefile's `parse_directory_load_config`: whether the directory's
/// `dynamic_relocations` is a non-empty list.
pub(crate) fn parse_directory_load_config(pe: &mut Pe, rva: u64) -> Result<bool, DirectoryError> {
    let fields: &[u8] = match pe.pe_type {
        Some(PE32_MAGIC) => &FIELDS_32,
        Some(PE32_PLUS_MAGIC) => &FIELDS_64,
        _ => {
            pe.warn(
                "Don't know how to parse LOAD_CONFIG information for non-PE32/PE32+ file".into(),
            );
            return Ok(false);
        }
    };
    // pefile's `get_dword_at_rva`: `None` when unreadable.
    let declared_size = pe
        .get_data(rva, Some(4))
        .ok()
        .filter(|b| b.len() >= 4)
        .map(|b| le(b, 0, 4));
    // The format is cut after the field where the sizes add up to the
    // declared size (or kept whole if they never do).
    let mut field_count = 0;
    let mut format_size = 0u64;
    for &size in fields {
        field_count += 1;
        format_size += u64::from(size);
        if Some(format_size) == declared_size {
            break;
        }
    }
    let read = pe.data_and_offset(rva, Some(format_size.into()));
    let Ok((bytes, file_offset)) = read else {
        pe.warn(format!(
            "Invalid LOAD_CONFIG information. Can't read data at RVA: 0x{rva:x}"
        ));
        return Ok(false);
    };
    let Some(directory) = pe.unpack(
        "IMAGE_LOAD_CONFIG_DIRECTORY",
        bytes,
        format_size as usize,
        file_offset,
    ) else {
        return Ok(false);
    };
    if field_count <= 35 {
        return Ok(false);
    }
    if field_count <= DYNAMIC_RELOC_OFFSET_FIELD + 1 {
        return Err(DirectoryError::Crash(NotPe(
            "'Structure' object has no attribute 'DynamicValueRelocTable...'",
        )));
    }
    let offset_at: usize = fields[..DYNAMIC_RELOC_OFFSET_FIELD]
        .iter()
        .map(|&s| usize::from(s))
        .sum();
    parse_dynamic_relocations(
        pe,
        le(directory, offset_at, 4),
        le(directory, offset_at + 4, 2),
    )
}

/// pefile's `parse_dynamic_relocations`: whether it finds any.
fn parse_dynamic_relocations(
    pe: &mut Pe,
    table_offset: u64,
    table_section: u64,
) -> Result<bool, DirectoryError> {
    if table_offset == 0 || table_section == 0 {
        return Ok(false);
    }
    let Some(section) = usize::try_from(table_section - 1)
        .ok()
        .and_then(|k| pe.sections.get(k))
    else {
        return Ok(false);
    };
    let mut rva = u64::from(section.virtual_address) + table_offset;
    let read = pe.data_and_offset(rva, Some(8));
    let Ok((bytes, file_offset)) = read else {
        pe.warn(format!(
            "Invalid IMAGE_DYNAMIC_RELOCATION_TABLE information. Can't read data at RVA: 0x{rva:x}"
        ));
        return Ok(false);
    };
    let Some(table) = pe.unpack("IMAGE_DYNAMIC_RELOCATION_TABLE", bytes, 8, file_offset) else {
        return Err(DirectoryError::Crash(NotPe(
            "'NoneType' object has no attribute 'Version'",
        )));
    };
    let (version, size) = (le(table, 0, 4), le(table, 4, 4));
    if version != 1 {
        pe.warn(format!(
            "No parsing available for IMAGE_DYNAMIC_RELOCATION_TABLE.Version = {version}"
        ));
        return Ok(false);
    }
    rva += 8;
    let end = rva + size;
    let (name, symbol_size) = if pe.pe_type == Some(PE32_PLUS_MAGIC) {
        ("IMAGE_DYNAMIC_RELOCATION64", 8)
    } else {
        ("IMAGE_DYNAMIC_RELOCATION", 4)
    };
    let header_size = symbol_size + 4;
    let mut found = false;
    // Each pass reads a header that had to be in the file and moves past it.
    while rva < end {
        let read = pe.data_and_offset(rva, Some(header_size as i128));
        let Ok((bytes, file_offset)) = read else {
            pe.warn(format!(
                "Invalid relocation information. Can't read data at RVA: 0x{rva:x}"
            ));
            break;
        };
        let Some(header) = pe.unpack(name, bytes, header_size, file_offset) else {
            break;
        };
        let (symbol, size) = (le(header, 0, symbol_size), le(header, symbol_size, 4));
        rva += header_size as u64;
        // pefile's `dynamic_relocation_format_by_symbol`: the entry width of
        // each bitfield format.
        let entries = match symbol {
            3 => Some(Some(RelocationEntries::PageOffsets(4))),
            4 | 5 => Some(Some(RelocationEntries::PageOffsets(2))),
            7 => None,
            s if s > 5 => Some(None),
            _ => {
                rva += size;
                continue;
            }
        };
        match entries {
            Some(entries) => {
                parse_image_base_relocation_list(pe, rva, size, entries);
            }
            None => parse_function_override_data(pe, rva)?,
        }
        found = true;
        rva += size;
    }
    Ok(found)
}

/// Reads one of the function-override structures at `rva`: pefile's
/// `get_data` and `get_offset_from_rva` (whose errors escape) and then
/// `__unpack_data__`.
fn read_at<'a>(
    pe: &mut Pe<'a>,
    name: &str,
    rva: u64,
    size: usize,
) -> Result<Option<&'a [u8]>, DirectoryError> {
    let (bytes, file_offset) = pe.data_and_offset(rva, Some(size as i128))?;
    Ok(pe.unpack(name, bytes, size, file_offset))
}

/// pefile's `parse_function_override_data` (with the BDD info after it).
fn parse_function_override_data(pe: &mut Pe, mut rva: u64) -> Result<(), DirectoryError> {
    let Some(header) = read_at(pe, "IMAGE_FUNCTION_OVERRIDE_HEADER", rva, 4)? else {
        pe.warn(format!(
            "Invalid function override header. Can't read data at RVA: 0x{rva:x}"
        ));
        return Ok(());
    };
    rva += 4;
    let end = rva + le(header, 0, 4);
    // Each pass reads 16 bytes that had to be there and moves past them.
    while rva < end {
        let Some(info) = read_at(pe, "IMAGE_FUNCTION_OVERRIDE_DYNAMIC_RELOCATION", rva, 16)? else {
            pe.warn(format!(
                "Invalid function override info. Can't read data at RVA: 0x{rva:x}"
            ));
            return Ok(());
        };
        let (rva_size, base_reloc_size) = (le(info, 8, 4), le(info, 12, 4));
        rva += 16;
        for _ in 0..rva_size / 4 {
            if pe.get_data(rva, Some(4))?.len() < 4 {
                // pefile's struct.unpack of the short read raises
                // struct.error, which neither pefile nor thrember catches.
                return Err(DirectoryError::Crash(NotPe(
                    "struct.error: unpack requires a buffer of 4 bytes",
                )));
            }
            rva += 4;
        }
        parse_image_base_relocation_list(pe, rva, base_reloc_size, None);
        rva += base_reloc_size;
    }
    let Some(bdd_info) = read_at(pe, "IMAGE_BDD_INFO", rva, 8)? else {
        pe.warn(format!(
            "Invalid bdd info. Can't read data at RVA: 0x{rva:x}"
        ));
        return Ok(());
    };
    rva += 8;
    for _ in 0..le(bdd_info, 4, 4) / 8 {
        if read_at(pe, "IMAGE_BDD_DYNAMIC_RELOCATION", rva, 8)?.is_none() {
            pe.warn(format!(
                "Invalid bdd dynamic relocation. Can't read data at RVA: 0x{rva:x}"
            ));
            return Ok(());
        }
        rva += 8;
    }
    Ok(())
}
