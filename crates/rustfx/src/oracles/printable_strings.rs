//! GNU `strings` (binutils 2.40 `print_strings`) transliterated, for
//! [`crate::printable_strings`].

use crate::printable_strings::{PrintableStrings, StringEncoding};

/// binutils 2.40 `print_strings` as written: `get_char` reads one character
/// of `width` bytes (EOF if fewer remain), `tryline` needs `min_len`
/// graphic characters in a row, the string then runs to the next
/// non-graphic character, and every non-graphic character is "ungot" to
/// its second byte (`unget_part_char`: `address -= width - 1`).
pub fn gnu_strings(doc: &[u8], min_len: usize, encoding: StringEncoding) -> Vec<Vec<u8>> {
    let width = match encoding {
        StringEncoding::Ascii => 1,
        StringEncoding::Utf16le => 2,
    };
    let graphic = |c: u32| c == 0x09 || (0x20..=0x7e).contains(&c);
    let get_char = |address: &mut usize| -> Option<u32> {
        let c = doc.get(*address..*address + width)?;
        *address += width;
        Some(c.iter().rev().fold(0, |r, &b| r << 8 | u32::from(b)))
    };
    let mut out = Vec::new();
    let mut address = 0;
    'tryline: loop {
        let mut buf = Vec::new();
        while buf.len() < min_len {
            let Some(c) = get_char(&mut address) else {
                return out;
            };
            if !graphic(c) {
                address -= width - 1;
                continue 'tryline;
            }
            buf.push(c as u8);
        }
        while let Some(c) = get_char(&mut address) {
            if !graphic(c) {
                address -= width - 1;
                break;
            }
            buf.push(c as u8);
        }
        out.push(buf);
    }
}

/// The documented output of `s` on `doc`: [`gnu_strings`] per encoding,
/// concatenated in the given order, cut at `max_strings`, then truncated
/// at `max_bytes` (the string crossing the cap is cut to fit, and nothing
/// follows it).
pub fn printable_strings(doc: &[u8], s: &PrintableStrings) -> Vec<Vec<u8>> {
    let all = s
        .encodings()
        .iter()
        .flat_map(|&e| gnu_strings(doc, s.min_len(), e));
    let mut out = Vec::new();
    let mut bytes_left = s.max_bytes().unwrap_or(usize::MAX);
    for mut string in all.take(s.max_strings().unwrap_or(usize::MAX)) {
        string.truncate(bytes_left);
        bytes_left -= string.len();
        out.push(string);
        if bytes_left == 0 {
            break;
        }
    }
    out
}
