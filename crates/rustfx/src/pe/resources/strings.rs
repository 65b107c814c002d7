//! The UTF-16 strings of the resource walk: pefile's
//! `get_string_u_at_rva`, its encoding of the result, and the pascal
//! strings that name directory entries.

use super::{caught, Halt, ResourceWalk};

/// The position of the first `\0\0` at or after `from` (Python's
/// `bytes.find`).
fn find_double_nul(data: &[u8], from: usize) -> Option<usize> {
    data.get(from..)?
        .windows(2)
        .position(|pair| pair == [0, 0])
        .map(|at| at + from)
}

/// How pefile encodes a UTF-16 string it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    Utf8,
    /// Only for the VS_VERSION_INFO key, so that garbage keeps its byte
    /// values in the warning.
    Ascii,
}

/// UTF-16 units as pefile encodes them after `"".join(map(chr, units))`:
/// UTF-8 or ASCII with Python's `backslashreplace` for what does not fit
/// (lone surrogates in UTF-8; everything past 0x7F in ASCII).
pub(super) fn encode_units(bytes: &[u8], encoding: Encoding) -> Vec<u8> {
    let ascii = encoding == Encoding::Ascii;
    let mut out = Vec::with_capacity(bytes.len());
    for pair in bytes.chunks_exact(2) {
        let unit = u16::from_le_bytes([pair[0], pair[1]]);
        let as_char = char::from_u32(u32::from(unit)).filter(|_| !ascii || unit < 0x80);
        match as_char {
            Some(c) => {
                let mut buffer = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
            }
            None if unit < 0x100 => out.extend_from_slice(format!("\\x{unit:02x}").as_bytes()),
            None => out.extend_from_slice(format!("\\u{unit:04x}").as_bytes()),
        }
    }
    out
}

impl ResourceWalk<'_, '_> {
    /// `UnicodeStringWrapperPostProcessor.get_pascal_16_length`: the word
    /// at `rva`, 0 (pefile's `False`) when it cannot be read.
    pub(super) fn pascal_16_length(&mut self, rva: u64) -> u64 {
        match self.pe.get_data(rva, Some(2)) {
            Ok(&[low, high]) => u64::from(u16::from_le_bytes([low, high])),
            _ => 0,
        }
    }

    /// `UnicodeStringWrapperPostProcessor.render_pascal_16`.
    pub(super) fn render_pascal_16(&mut self, rva: u64) -> Result<(), Halt> {
        let length = self.pascal_16_length(rva);
        let rendered = self.string_u_units(rva.saturating_add(2), i128::from(length), false);
        if caught(rendered)?.is_none() {
            self.pe.warn(format!(
                "Failed rendering pascal string, attempting to read from RVA 0x{:x}",
                rva + 2
            ));
        }
        Ok(())
    }

    /// pefile's `get_string_u_at_rva(rva, max_length)` up to the decoding:
    /// the same reads (each may raise and moves the section cache) and the
    /// string's UTF-16 bytes. With `whole` false, the bytes are not
    /// gathered past the point where no further read can happen (callers
    /// that only need to know whether pefile raises).
    pub(super) fn string_u_units(
        &mut self,
        rva: u64,
        max_length: i128,
        whole: bool,
    ) -> Result<Vec<u8>, Halt> {
        // pefile returns b"" for 0 before reading anything; a negative
        // maximum never reaches here (and would loop forever in pefile).
        if max_length <= 0 {
            return Ok(Vec::new());
        }
        self.pe.get_data(rva, Some(2))?;
        let max_bytes = max_length * 2;
        let mut requested = max_bytes.min(256);
        let first = self.pe.get_data(rva, Some(requested))?;
        self.spend(first.len())?;
        let mut data = first.to_vec();
        let mut from = 0;
        let mut extended = false;
        // Each turn either ends, or moves `from` forward, or extends once.
        let units = loop {
            match find_double_nul(&data, from) {
                Some(at) if at % 2 == 0 => break at / 2,
                Some(at) => from = at + 1,
                None => {
                    let length = data.len() as i128;
                    // (After one extension the data is never longer than
                    // `max_bytes`, so pefile stops here too.)
                    if length < requested || length == max_bytes || extended {
                        break data.len() / 2;
                    }
                    let more = self.pe.get_data(
                        rva.saturating_add(data.len() as u64),
                        Some(max_bytes - length),
                    )?;
                    if !whole {
                        return Ok(Vec::new());
                    }
                    self.spend(more.len())?;
                    data.extend_from_slice(more);
                    // pefile searches on from the old request size, so a
                    // "\0\0" across the seam is missed, as here.
                    from = requested as usize;
                    requested = max_bytes;
                    extended = true;
                }
            }
        };
        data.truncate(units * 2);
        Ok(data)
    }

    /// `get_string_u_at_rva` with pefile's encoding of the result (UTF-8,
    /// or ASCII for the VS_VERSION_INFO key).
    pub(super) fn string_u(
        &mut self,
        rva: u64,
        max_length: i128,
        encoding: Encoding,
    ) -> Result<Vec<u8>, Halt> {
        let units = self.string_u_units(rva, max_length, true)?;
        self.spend(units.len())?;
        Ok(encode_units(&units, encoding))
    }
}
