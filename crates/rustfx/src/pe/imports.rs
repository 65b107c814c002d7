//! The import directory as pefile's `parse_import_directory`,
//! `parse_imports` and `get_import_table` read it: the same descriptors and
//! symbols, the same limits and the same warnings.

use super::{le, ordinals, BadRva, DirectoryError, FileSpan, Pe, PE32_PLUS_MAGIC};

/// pefile's `MAX_IMPORT_SYMBOLS`.
const MAX_IMPORT_SYMBOLS: usize = 0x2000;
const MAX_DLL_LENGTH: u64 = 0x200;
const MAX_IMPORT_NAME_LENGTH: u64 = 0x200;
/// A table whose addresses spread over more than this is bogus (pefile).
const MAX_ADDRESS_SPREAD: u64 = 128 << 20;
const MAX_REPEATED_ADDRESSES: usize = 15;
const IMAGE_FILE_MACHINE_I386: u16 = 0x14C;

/// One imported DLL and its symbols.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedDll {
    /// The DLL's name as stored (`*invalid*` when pefile rejects it).
    pub dll: Vec<u8>,
    /// Its symbols, in table order.
    pub imports: Vec<Import>,
    /// Where pefile read its name (an invalid name's bytes included).
    pub name_span: FileSpan,
}

/// One imported symbol: a name (possibly from pefile's ordinal tables) or
/// an ordinal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    /// The name, when there is one.
    pub name: Option<Vec<u8>>,
    /// The ordinal, for imports by ordinal.
    pub ordinal: Option<u16>,
    /// Where it is in the file: the name of its hint/name entry, or for an
    /// import by ordinal its thunk.
    pub span: FileSpan,
}

/// pefile's `allowed_filename` plus path separators.
fn is_valid_dos_filename(name: &[u8]) -> bool {
    name.iter()
        .all(|&c| c.is_ascii_alphanumeric() || b"!#$%&'()-@^_`{}~+,.;=[]:\\/".contains(&c))
}

/// pefile's `is_valid_function_name` (strict, for imports).
pub(crate) fn is_valid_function_name(name: &[u8]) -> bool {
    name.iter()
        .all(|&c| c.is_ascii_alphanumeric() || b"._?@$()<>".contains(&c))
}

/// pefile's `parse_import_directory(rva, size)`.
pub(crate) fn parse_import_directory(
    pe: &mut Pe,
    mut rva: u64,
) -> Result<Vec<ImportedDll>, BadRva> {
    let mut dlls = Vec::new();
    let mut error_count = 0;
    loop {
        let descriptor = match pe.get_data(rva, Some(20)) {
            Ok(bytes) => bytes,
            Err(_) => {
                pe.warn(format!(
                    "Error parsing the import directory at RVA: 0x{rva:x}"
                ));
                break;
            }
        };
        let file_offset = pe.offset_from_rva(rva)?;
        if descriptor.len() < 20 {
            pe.warn(format!(
                "Corrupt header \"IMAGE_IMPORT_DESCRIPTOR\" at file offset {file_offset}. Exception: 'Data length less than expected header length.'"
            ));
            break;
        }
        if descriptor.iter().all(|&b| b == 0) {
            break;
        }
        let field = |k: usize| u64::from(super::u32_at(descriptor, 4 * k));
        let (original_first_thunk, name_rva, first_thunk) = (field(0), field(3), field(4));
        rva += 20;
        let mut max_len = pe.data.len() as i128 - file_offset;
        if rva > original_first_thunk || rva > first_thunk {
            max_len = (i128::from(rva) - i128::from(original_first_thunk))
                .max(i128::from(rva) - i128::from(first_thunk));
        }
        let symbols = match parse_imports(pe, original_first_thunk, first_thunk, max_len, false) {
            Ok(symbols) => symbols,
            Err(BadRva(message)) => {
                pe.warn(format!(
                    "Error parsing the import directory. Invalid Import data at RVA: 0x{rva:x} ({message})"
                ));
                Vec::new()
            }
        };
        if error_count > 5 {
            pe.warn(format!(
                "Too many errors parsing the import directory. Invalid import data at RVA: 0x{rva:x}"
            ));
            break;
        }
        if symbols.is_empty() {
            error_count += 1;
            continue;
        }
        let found = pe.string_at_rva(name_rva, MAX_DLL_LENGTH);
        let name_span = pe.span_of(found);
        let mut dll = found.to_vec();
        if !is_valid_dos_filename(&dll) {
            dll = b"*invalid*".to_vec();
        }
        if dll.is_empty() {
            continue;
        }
        let lower = dll.to_ascii_lowercase();
        let imports = symbols
            .into_iter()
            .map(|mut symbol| {
                if symbol.name.is_none() {
                    if let Some(ordinal) = symbol.ordinal {
                        symbol.name =
                            ordinals::ordinal_name(&lower, ordinal).map(String::into_bytes);
                    }
                }
                symbol
            })
            .collect();
        dlls.push(ImportedDll {
            dll,
            imports,
            name_span,
        });
    }
    // pefile's packer heuristic: both LoadLibrary* and GetProcAddress* among
    // fewer than 20 symbols.
    let mut total = 0;
    let mut suspicious = 0;
    for symbol in dlls.iter().flat_map(|d| &d.imports) {
        if let Some(name) = &symbol.name {
            if name.starts_with(b"LoadLibrary") || name.starts_with(b"GetProcAddress") {
                suspicious += 1;
            }
        }
        total += 1;
    }
    if suspicious == 2 && total < 20 {
        pe.warn("Imported symbols contain entries typical of packed executables.".into());
    }
    Ok(dlls)
}

/// pefile's `parse_imports`: the symbols of one descriptor (of the import
/// or the delay-import directory; `contains_addresses` for old delay-import
/// tables that hold addresses rather than RVAs).
pub(crate) fn parse_imports(
    pe: &mut Pe,
    original_first_thunk: u64,
    first_thunk: u64,
    max_length: i128,
    contains_addresses: bool,
) -> Result<Vec<Import>, BadRva> {
    let ilt = import_table(pe, original_first_thunk, max_length, contains_addresses);
    let iat = import_table(pe, first_thunk, max_length, contains_addresses);
    let table = match (ilt, iat) {
        (Some(ilt), _) if !ilt.is_empty() => ilt,
        (_, Some(iat)) if !iat.is_empty() => iat,
        _ => {
            pe.warn(format!(
                "Damaged Import Table information. ILT and/or IAT appear to be broken. OriginalFirstThunk: 0x{original_first_thunk:x} FirstThunk: 0x{first_thunk:x}"
            ));
            return Ok(Vec::new());
        }
    };
    let (ordinal_flag, address_mask) = thunk_flags(pe);
    let mut symbols = Vec::new();
    let mut invalid = 0usize;
    for (index, &(entry, thunk_span)) in table.iter().enumerate() {
        // The table ends at the first zero thunk, but a normalized address
        // can be 0: pefile then finds neither an ordinal nor a name.
        let (mut ordinal, mut name) = (None, None);
        let mut span = thunk_span;
        if entry != 0 && entry & ordinal_flag != 0 {
            ordinal = Some((entry & 0xFFFF) as u16);
        } else if entry != 0 && pe.get_data(entry & address_mask, Some(2)).is_ok() {
            let found = pe.string_at_rva(entry.wrapping_add(2), MAX_IMPORT_NAME_LENGTH);
            span = pe.span_of(found);
            name = Some(if is_valid_function_name(found) {
                found.to_vec()
            } else {
                b"*invalid*".to_vec()
            });
        }
        match (&ordinal, &name) {
            (None, None) => return Err(BadRva("Invalid entries, aborting parsing.".into())),
            (_, Some(n)) if n == b"*invalid*" => {
                if invalid > 1000 && invalid == index {
                    return Err(BadRva("Too many invalid names, aborting parsing.".into()));
                }
                invalid += 1;
                continue;
            }
            _ => {}
        }
        // pefile keeps a symbol only if its ordinal is non-zero or its name
        // non-empty.
        let keep = ordinal.is_some_and(|o| o != 0) || name.as_ref().is_some_and(|n| !n.is_empty());
        if keep {
            symbols.push(Import {
                name,
                ordinal,
                span,
            });
        }
    }
    Ok(symbols)
}

/// The ordinal flag and the RVA mask of a thunk, by PE type (PE32 for an
/// unknown magic, as pefile assumes).
fn thunk_flags(pe: &Pe) -> (u64, u64) {
    if pe.pe_type == Some(PE32_PLUS_MAGIC) {
        (1 << 63, (1 << 63) - 1)
    } else {
        (1 << 31, 0x7FFF_FFFF)
    }
}

/// Tracks the spread of the addresses a table holds (pefile's `AddressSet`).
#[derive(Default)]
struct AddressSpread {
    seen: std::collections::HashSet<u64>,
    min: Option<u64>,
    max: Option<u64>,
}

impl AddressSpread {
    /// Adds `value`; true if it was there already.
    fn add(&mut self, value: u64) -> bool {
        self.min = Some(self.min.map_or(value, |m| m.min(value)));
        self.max = Some(self.max.map_or(value, |m| m.max(value)));
        !self.seen.insert(value)
    }

    fn spread(&self) -> u64 {
        match (self.min, self.max) {
            (Some(min), Some(max)) => max - min,
            _ => 0,
        }
    }
}

/// pefile's `get_import_table`: the non-zero thunks from `rva` on
/// (normalized from addresses to RVAs if `contains_addresses`), each with
/// where it is in the file.
/// `None` is pefile's `None` (unreadable), an empty table its `[]`.
fn import_table(
    pe: &mut Pe,
    mut rva: u64,
    max_length: i128,
    contains_addresses: bool,
) -> Option<Vec<(u64, FileSpan)>> {
    let (ordinal_flag, _) = thunk_flags(pe);
    let size: u64 = if pe.pe_type == Some(PE32_PLUS_MAGIC) {
        8
    } else {
        4
    };
    let start = rva;
    let mut table = Vec::new();
    let mut repeated = 0;
    let mut below_4g = AddressSpread::default();
    let mut above_4g = AddressSpread::default();
    while rva != 0 {
        if i128::from(rva) >= i128::from(start) + max_length {
            pe.warn("Error parsing the import table. Entries go beyond bounds.".into());
            break;
        }
        if pe.total_import_symbols > MAX_IMPORT_SYMBOLS {
            pe.warn(format!(
                "Excessive number of imports {} (>{MAX_IMPORT_SYMBOLS})",
                pe.total_import_symbols
            ));
            break;
        }
        pe.total_import_symbols += 1;
        if repeated >= MAX_REPEATED_ADDRESSES
            || below_4g.spread() > MAX_ADDRESS_SPREAD
            || above_4g.spread() > MAX_ADDRESS_SPREAD
        {
            return Some(Vec::new());
        }
        let bytes = match pe.get_data(rva, Some(i128::from(size))) {
            Ok(bytes) if bytes.len() as u64 == size => bytes,
            _ => {
                pe.warn(format!(
                    "Error parsing the import table. Invalid data at RVA: 0x{rva:x}"
                ));
                return None;
            }
        };
        let raw_thunk = if size == 8 {
            super::u64_at(bytes, 0)
        } else {
            u64::from(super::u32_at(bytes, 0))
        };
        let thunk = if contains_addresses {
            normalize_import_va(pe, raw_thunk)
        } else {
            raw_thunk
        };
        if thunk >= start && thunk <= rva {
            pe.warn(format!(
                "Error parsing the import table. AddressOfData overlaps with THUNK_DATA for THUNK at RVA 0x{rva:x}"
            ));
            break;
        }
        if thunk != 0 {
            if thunk & ordinal_flag != 0 {
                if thunk & 0x7FFF_FFFF > 0xFFFF {
                    return Some(Vec::new());
                }
            } else {
                let set = if thunk >= 1 << 32 {
                    &mut above_4g
                } else {
                    &mut below_4g
                };
                if set.add(thunk) {
                    repeated += 1;
                }
            }
        }
        // (pefile tests the bytes read, not the normalized value.)
        if raw_thunk == 0 {
            break;
        }
        rva += size;
        table.push((thunk, pe.span_of(bytes)));
    }
    Some(table)
}

/// pefile's `normalize_import_va`: an address inside the image becomes an
/// RVA; anything else is left as it is.
pub(crate) fn normalize_import_va(pe: &Pe, va: u64) -> u64 {
    let begin = u128::from(pe.optional_header.image_base);
    let end = begin + u128::from(pe.optional_header.size_of_image);
    if (begin..end).contains(&u128::from(va)) {
        va - pe.optional_header.image_base
    } else {
        va
    }
}

/// pefile's `parse_delay_import_directory`. It shares pefile's import
/// readers (and their symbol count) with the import directory.
pub(crate) fn parse_delay_import_directory(
    pe: &mut Pe,
    mut rva: u64,
) -> Result<(), DirectoryError> {
    const DESCRIPTOR_SIZE: usize = 32;
    let mut error_count = 0;
    // Each pass either reads a table (raising the shared symbol count, which
    // ends the loop past MAX_IMPORT_SYMBOLS) or counts an error (at most 7).
    loop {
        let Ok(bytes) = pe.get_data(rva, Some(DESCRIPTOR_SIZE as i128)) else {
            pe.warn(format!(
                "Error parsing the Delay import directory at RVA: 0x{rva:x}"
            ));
            break;
        };
        let file_offset = pe.offset_from_rva(rva)?;
        let Some(descriptor) = pe.unpack(
            "IMAGE_DELAY_IMPORT_DESCRIPTOR",
            bytes,
            DESCRIPTOR_SIZE,
            file_offset,
        ) else {
            break;
        };
        if descriptor.iter().all(|&b| b == 0) {
            break;
        }
        let field = |k: usize| le(descriptor, 4 * k, 4);
        let (attributes, mut name_rva, mut iat, mut int) = (field(0), field(1), field(3), field(4));
        // Old (pre-VC6) 32-bit descriptors hold addresses, not RVAs.
        let contains_addresses =
            attributes == 0 && pe.file_header.machine == IMAGE_FILE_MACHINE_I386;
        if contains_addresses {
            iat = normalize_import_va(pe, iat);
            int = normalize_import_va(pe, int);
            name_rva = normalize_import_va(pe, name_rva);
        }
        rva += DESCRIPTOR_SIZE as u64;
        let mut max_len = pe.data.len() as i128 - file_offset;
        if rva > int || rva > iat {
            max_len = (i128::from(rva) - i128::from(int)).max(i128::from(rva) - i128::from(iat));
        }
        let symbols = match parse_imports(pe, int, iat, max_len, contains_addresses) {
            Ok(symbols) => symbols,
            Err(BadRva(message)) => {
                pe.warn(format!(
                    "Error parsing the Delay import directory. Invalid import data at RVA: 0x{rva:x} ({message})"
                ));
                Vec::new()
            }
        };
        if error_count > 5 {
            pe.warn(format!(
                "Too many errors parsing the Delay import directory. Invalid import data at RVA: 0x{rva:x}"
            ));
            break;
        }
        if symbols.is_empty() {
            error_count += 1;
            continue;
        }
        if pe.total_import_symbols > MAX_IMPORT_SYMBOLS {
            pe.warn(format!(
                "Error, too many imported symbols {} (>{MAX_IMPORT_SYMBOLS})",
                pe.total_import_symbols
            ));
            break;
        }
        // The DLL's name is read only for its side effect on pefile's
        // section cache.
        pe.string_at_rva(name_rva, MAX_DLL_LENGTH);
    }
    Ok(())
}
