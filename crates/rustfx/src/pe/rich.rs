//! The Rich header as pefile's `parse_rich_header` reads it: the first
//! "Rich" between offset 0x80 and the optional header, the XOR key after it,
//! and the (comp id, count) values between the "DanS" block and "Rich".

use super::{py_slice, u32_at};

const DANS: u32 = 0x536E_6144;
const RICH: u32 = 0x6863_6952;

/// What pefile finds: the decoded values (`RICH_HEADER.values`, pairs of
/// comp id and count) and its warnings.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RichHeader {
    /// `None` when pefile sets `RICH_HEADER = None`.
    pub values: Option<Vec<u32>>,
    /// pefile's warnings about the header.
    pub warnings: Vec<&'static str>,
}

/// Parses the Rich header of `data`, whose optional header starts at
/// `optional_header_offset`.
///
/// Two layouts make pefile itself fail with an `IndexError` (which thrember
/// does not catch, so it crashes on the file): a "Rich" marker in the last
/// 4 bytes of the file, and a valid "DanS" start with fewer than four
/// dwords before "Rich". rustfx reads both as "no Rich header".
pub fn parse(data: &[u8], optional_header_offset: usize) -> RichHeader {
    let none = RichHeader::default();
    if optional_header_offset <= 0x80 {
        return none;
    }
    let window = py_slice(data, 0x80, Some(optional_header_offset as i128));
    let Some(found) = memchr::memmem::find(window, b"Rich") else {
        return none;
    };
    let rich_index = 0x80 + found;
    let block = py_slice(data, 0x80, Some(rich_index as i128 + 8));
    let block = &block[..block.len() / 4 * 4];
    let dwords: Vec<u32> = block.chunks_exact(4).map(|c| u32_at(c, 0)).collect();
    // Only a "Rich" on a dword boundary counts.
    let Some(at) = dwords.iter().position(|&d| d == RICH) else {
        return none;
    };
    let Some(&checksum) = dwords.get(at + 1) else {
        return none;
    };
    let mut warnings = Vec::new();
    // pefile's `or` chain stops at the first mismatch; an index it reaches
    // past the end is its IndexError.
    let mut malformed_start = dwords[0] ^ checksum != DANS;
    for k in 1..4 {
        if malformed_start {
            break;
        }
        match dwords.get(k) {
            Some(&d) => malformed_start = d != checksum,
            None => return none,
        }
    }
    if malformed_start {
        warnings.push("Rich Header is not in Microsoft format, possibly malformed");
    }
    let body = dwords.get(4..).unwrap_or(&[]);
    let mut values = Vec::new();
    for pair in body.chunks_exact(2) {
        if pair[0] == RICH {
            if pair[1] != checksum {
                warnings.push("Rich Header is malformed");
            }
            break;
        }
        values.push(pair[0] ^ checksum);
        values.push(pair[1] ^ checksum);
    }
    RichHeader {
        values: Some(values),
        warnings,
    }
}
