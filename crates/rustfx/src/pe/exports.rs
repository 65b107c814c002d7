//! The export directory as pefile's `parse_export_directory` reads it:
//! named symbols first (in name-table order), then the ordinal-only ones,
//! with pefile's limits, give-up rules and warnings.

use std::collections::{HashMap, HashSet};

use super::{BadRva, FileSpan, Pe};

const MAX_SYMBOL_NAME_LENGTH: u64 = 0x200;
/// pefile's `MAX_SYMBOL_EXPORT_COUNT`.
const MAX_SYMBOL_EXPORTS: usize = 0x2000;
/// pefile's `max_repeated_symbol`.
const MAX_REPEATED_SYMBOL: usize = 120;

/// One exported symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// The name (named exports only; may be empty).
    pub name: Option<Vec<u8>>,
    /// `Base` plus the symbol's index in the address table.
    pub ordinal: u64,
    /// Where it is in the file: its name, or for an export by ordinal
    /// only its entry in the address table.
    pub span: FileSpan,
}

/// pefile's `is_valid_function_name(.., relax_allowed_characters=True)`.
fn is_valid_export_name(name: &[u8]) -> bool {
    name.iter()
        .all(|&c| c.is_ascii_alphanumeric() || b"!\"#$%&'()*+,-./:<>?[\\]^_`{|}~@".contains(&c))
}

fn word(data: &[u8], index: u64) -> Option<u64> {
    let at = usize::try_from(index.checked_mul(2)?).ok()?;
    let bytes = data.get(at..at.checked_add(2)?)?;
    Some(u64::from(u16::from_le_bytes([bytes[0], bytes[1]])))
}

fn dword(data: &[u8], index: u64) -> Option<u64> {
    let at = usize::try_from(index.checked_mul(4)?).ok()?;
    let bytes = data.get(at..at.checked_add(4)?)?;
    Some(u64::from(super::u32_at(bytes, 0)))
}

/// pefile's `parse_export_directory(rva, size)`: `Ok(None)` where pefile
/// returns nothing (no `DIRECTORY_ENTRY_EXPORT`), `Err` where it raises.
pub(crate) fn parse_export_directory(
    pe: &mut Pe,
    rva: u64,
    size: u64,
) -> Result<Option<Vec<Export>>, BadRva> {
    let directory = match (pe.get_data(rva, Some(40)), pe.offset_from_rva(rva)) {
        (Ok(bytes), Ok(offset)) => {
            if bytes.len() < 40 {
                pe.warn(format!(
                    "Corrupt header \"IMAGE_EXPORT_DIRECTORY\" at file offset {offset}. Exception: 'Data length less than expected header length.'"
                ));
                return Ok(None);
            }
            bytes
        }
        _ => {
            pe.warn(format!("Error parsing export directory at RVA: 0x{rva:x}"));
            return Ok(None);
        }
    };
    let all_zeroes = directory.iter().all(|&b| b == 0);
    let field = |at: usize| u64::from(super::u32_at(directory, at));
    let base = field(16);
    let number_of_functions = field(20);
    let number_of_names = field(24);
    let address_of_functions = field(28);
    let address_of_names = field(32);
    let address_of_name_ordinals = field(36);

    let tables = (|| {
        Ok::<_, BadRva>((
            table(pe, address_of_names, number_of_names)?,
            table(pe, address_of_name_ordinals, number_of_names)?,
            table(pe, address_of_functions, number_of_functions)?,
        ))
    })();
    let Ok((names, name_ordinals, functions)) = tables else {
        pe.warn(format!("Error parsing export directory at RVA: 0x{rva:x}"));
        return Ok(None);
    };

    let boundary = |pe: &Pe, at: u64| -> i128 {
        match pe.section_by_rva(at) {
            Some(k) => {
                let s = &pe.sections[k];
                i128::from(s.virtual_address) + pe.section_bytes(s).len() as i128 - i128::from(at)
            }
            None => pe.data.len() as i128,
        }
    };
    // Python's int(x / 4) truncates toward zero.
    let limit =
        |boundary: i128, count: u64| -> u64 { (boundary / 4).clamp(0, i128::from(count)) as u64 };

    let mut exports = Vec::new();
    let mut failures_left = 10;
    let mut completed = true;
    let mut counts: HashMap<(Vec<u8>, u64), usize> = HashMap::new();
    for i in 0..limit(boundary(pe, address_of_names), number_of_names) {
        let ordinal = match word(name_ordinals, i) {
            Some(ordinal) if ordinal * 4 < functions.len() as u64 => ordinal,
            // pefile gives up on every export here, without a warning.
            _ => return Ok(None),
        };
        let address = dword(functions, ordinal).unwrap_or(0);
        if address == 0 {
            continue;
        }
        if address >= rva && address < rva + size && pe.offset_from_rva(address).is_err() {
            continue;
        }
        let Some(name_address) = dword(names, i) else {
            // (pefile then reads a string at `None`, which fails the name
            // check below: the loop ends either way.)
            completed = false;
            break;
        };
        let name = pe.string_at_rva(name_address, MAX_SYMBOL_NAME_LENGTH);
        if !is_valid_export_name(name) {
            completed = false;
            break;
        }
        if pe.offset_from_rva(name_address).is_err() {
            // pefile tries twice, counting both failures.
            failures_left -= 2;
            if failures_left <= 0 {
                completed = false;
                break;
            }
            continue;
        }
        let count = counts.entry((name.to_vec(), address)).or_insert(0);
        *count += 1;
        if *count > 10 {
            pe.warn(format!(
                "Export directory contains more than 10 repeated entries ({}, {address:#02x}). Assuming corrupt.",
                python_bytes_repr(name)
            ));
            break;
        } else if counts.len() > MAX_SYMBOL_EXPORTS {
            pe.warn(format!(
                "Export directory contains more than {MAX_SYMBOL_EXPORTS} symbol entries. Assuming corrupt."
            ));
            break;
        }
        pe.offset_from_rva(address_of_name_ordinals + 2 * i)?;
        pe.offset_from_rva(address_of_functions + 4 * ordinal)?;
        exports.push(Export {
            name: Some(name.to_vec()),
            ordinal: base + ordinal,
            span: pe.span_of(name),
        });
    }
    if !completed {
        pe.warn(format!(
            "RVA AddressOfNames in the export directory points to an invalid address: {address_of_names:x}"
        ));
    }

    let named: HashSet<u64> = exports.iter().map(|e| e.ordinal).collect();
    let mut failures_left = 10;
    let mut completed = true;
    let mut counts: HashMap<Option<u64>, usize> = HashMap::new();
    for index in 0..limit(boundary(pe, address_of_functions), number_of_functions) {
        if named.contains(&(index + base)) {
            continue;
        }
        let address = dword(functions, index);
        if address.is_none() {
            failures_left -= 1;
            if failures_left <= 0 {
                completed = false;
                break;
            }
        }
        if address == Some(0) {
            continue;
        }
        let count = counts.entry(address).or_insert(0);
        *count += 1;
        if *count > MAX_REPEATED_SYMBOL {
            pe.warn(format!(
                "Export directory contains more than {MAX_REPEATED_SYMBOL} repeated ordinal entries (0x{:x}). Assuming corrupt.",
                address.unwrap_or(0)
            ));
            break;
        } else if counts.len() > MAX_SYMBOL_EXPORTS {
            pe.warn(format!(
                "Export directory contains more than {MAX_SYMBOL_EXPORTS} ordinal entries. Assuming corrupt."
            ));
            break;
        }
        let entry = usize::try_from(index)
            .ok()
            .and_then(|k| functions.get(k.checked_mul(4)?..k.checked_mul(4)?.checked_add(4)?));
        exports.push(Export {
            name: None,
            ordinal: base + index,
            span: entry.map_or_else(FileSpan::default, |entry| pe.span_of(entry)),
        });
    }
    if !completed {
        pe.warn(format!(
            "RVA AddressOfFunctions in the export directory points to an invalid address: {address_of_functions:x}"
        ));
        return Ok(None);
    }
    if exports.is_empty() && all_zeroes {
        return Ok(None);
    }
    Ok(Some(exports))
}

/// A table of `count` dwords at `at`, read no further than the end of the
/// file (pefile reads the name-ordinal table, of words, with this size too).
fn table<'a>(pe: &Pe<'a>, at: u64, count: u64) -> Result<&'a [u8], BadRva> {
    let until_eof = pe.data.len() as i128 - pe.offset_from_rva(at)?;
    pe.get_data(at, Some(until_eof.min(i128::from(count) * 4)))
}

/// Python's `repr(bytes)`, as pefile formats a name into one warning.
fn python_bytes_repr(bytes: &[u8]) -> String {
    let quote = if bytes.contains(&b'\'') && !bytes.contains(&b'"') {
        '"'
    } else {
        '\''
    };
    let mut out = format!("b{quote}");
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            _ if b == quote as u8 => {
                out.push('\\');
                out.push(quote);
            }
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push(quote);
    out
}
