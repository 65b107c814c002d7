//! RT_VERSION: pefile's `parse_version_information`, the
//! VS_VERSION_INFO tree (VS_FIXEDFILEINFO, then
//! StringFileInfo/StringTable/String and VarFileInfo/Var) read for its
//! warnings and reads only.

use super::strings::Encoding;
use super::{
    caught, DataEntry, Halt, ResourceWalk, BLOCK_HEADER_SIZE, FIXED_FILE_INFO_SIZE,
    MAX_STRING_UNITS,
};
use crate::pe::{py_slice, u16_at};

/// pefile's `dword_align(offset, base)`, including its 32-bit mask (an
/// `OffsetToData` near 4 GiB makes it negative, and pefile then indexes
/// from the end of the block, as `py_slice` does).
pub(super) fn dword_align(offset: i128, base: u64) -> i128 {
    let base = i128::from(base);
    ((offset + base + 3) & 0xFFFF_FFFC) - (base & 0xFFFF_FFFC)
}

/// An RVA pefile computes as `base + offset`. It is never negative (see
/// `dword_align`); an impossible one maps to an RVA no read can fetch.
fn rva_at(base: u64, offset: i128) -> u64 {
    u64::try_from(i128::from(base) + offset).unwrap_or(u64::MAX)
}

/// The text pefile puts after "Invalid VS_VERSION_INFO block: ".
fn shown_version_key(key: &[u8]) -> String {
    let shown = if key.len() > 128 {
        let mut excerpt = key[..128].to_vec();
        // pefile cuts at the last "\u" so no escape is left half shown; with
        // none, its `excerpt[:-1]` drops the last character.
        match excerpt.windows(2).rposition(|pair| pair == b"\\u") {
            Some(at) => excerpt.truncate(at),
            None => {
                excerpt.pop();
            }
        }
        format!(
            "{} ... ({} bytes, too long to display)",
            String::from_utf8_lossy(&excerpt),
            key.len()
        )
    } else {
        String::from_utf8_lossy(key).into_owned()
    };
    shown.replace('\0', "\\00")
}

impl ResourceWalk<'_, '_> {
    /// A block header (`Length`, `ValueLength`, `Type`) at `offset` in the
    /// version resource `raw`, or `None` with pefile's "Corrupt header".
    fn block_header(
        &mut self,
        name: &str,
        raw: &[u8],
        offset: i128,
        start: i128,
    ) -> Option<(i128, u16, u16)> {
        let bytes = py_slice(raw, offset, None);
        if bytes.len() < BLOCK_HEADER_SIZE {
            self.corrupt_header(name, start + offset);
            return None;
        }
        Some((
            i128::from(u16_at(bytes, 0)),
            u16_at(bytes, 2),
            u16_at(bytes, 4),
        ))
    }

    /// pefile's `parse_version_information` for one RT_VERSION leaf.
    pub(super) fn version_information(&mut self, version: DataEntry) -> Result<(), Halt> {
        let base = u64::from(version.offset_to_data);
        let start = match self.pe.offset_from_rva(base) {
            Ok(offset) => offset,
            Err(_) => {
                self.pe.warn(format!(
                    "Error parsing the version information, attempting to read OffsetToData with RVA: 0x{base:x}"
                ));
                return Ok(());
            }
        };
        let raw = py_slice(self.pe.data, start, Some(start + i128::from(version.size)));
        let Some((info_length, _, _)) = self.block_header("VS_VERSIONINFO", raw, 0, start) else {
            return Ok(());
        };

        // The key is read up to the end of its section when it is in one.
        let key_rva = base + BLOCK_HEADER_SIZE as u64;
        let max_length = match self.pe.section_by_rva(key_rva) {
            Some(k) => {
                let section = &self.pe.sections[k];
                let end = i128::from(section.virtual_address)
                    + i128::from(section.size_of_raw_data.max(section.virtual_size));
                (end - i128::from(key_rva)) >> 1
            }
            None => MAX_STRING_UNITS,
        };
        let Some(key) = caught(self.string_u(key_rva, max_length, Encoding::Ascii))? else {
            self.pe.warn(format!(
                "Error parsing the version information, attempting to read VS_VERSION_INFO string. Can't read unicode string at offset 0x{key_rva:x}"
            ));
            self.pe.warn("Invalid VS_VERSION_INFO block: None".into());
            return Ok(());
        };
        if key != b"VS_VERSION_INFO" {
            self.pe.warn(format!(
                "Invalid VS_VERSION_INFO block: {}",
                shown_version_key(&key)
            ));
            return Ok(());
        }

        let fixed_offset = dword_align((BLOCK_HEADER_SIZE + 2 * (key.len() + 1)) as i128, base);
        if py_slice(raw, fixed_offset, None).len() < FIXED_FILE_INFO_SIZE {
            self.corrupt_header("VS_FIXEDFILEINFO", start + fixed_offset);
            return Ok(());
        }

        let mut info_offset = dword_align(fixed_offset + FIXED_FILE_INFO_SIZE as i128, base);
        loop {
            self.spend(1)?;
            let Some((length, value_length, kind)) =
                self.block_header("StringFileInfo", raw, info_offset, start)
            else {
                self.pe
                    .warn("Error parsing StringFileInfo/VarFileInfo struct".into());
                return Ok(());
            };
            let key_rva = rva_at(base, info_offset + BLOCK_HEADER_SIZE as i128);
            let Some(key) = caught(self.string_u(key_rva, MAX_STRING_UNITS, Encoding::Utf8))?
            else {
                self.pe.warn(format!(
                    "Error parsing the version information, attempting to read StringFileInfo string. Can't read unicode string at offset 0x{key_rva:x}"
                ));
                break;
            };
            let children_offset = dword_align(
                info_offset + (BLOCK_HEADER_SIZE + 2 * (key.len() + 1)) as i128,
                base,
            );
            let has_children = kind <= 1 && value_length == 0;
            if key.starts_with(b"StringFileInfo") {
                if has_children {
                    self.string_tables(raw, start, base, children_offset, length)?;
                }
            } else if key.starts_with(b"VarFileInfo") && has_children {
                self.var(raw, start, base, children_offset)?;
            }
            info_offset = dword_align(length + info_offset, base);
            if length == 0 || info_offset >= info_length {
                break;
            }
        }
        Ok(())
    }

    /// The StringTable blocks of a StringFileInfo block of `info_length`
    /// bytes, and their String entries.
    fn string_tables(
        &mut self,
        raw: &[u8],
        start: i128,
        base: u64,
        mut table_offset: i128,
        info_length: i128,
    ) -> Result<(), Halt> {
        loop {
            self.spend(1)?;
            let Some((table_length, _, _)) =
                self.block_header("StringTable", raw, table_offset, start)
            else {
                break;
            };
            let language_rva = rva_at(base, table_offset + BLOCK_HEADER_SIZE as i128);
            let Some(language) =
                caught(self.string_u(language_rva, MAX_STRING_UNITS, Encoding::Utf8))?
            else {
                self.pe.warn(format!(
                    "Error parsing the version information, attempting to read StringTable string. Can't read unicode string at offset 0x{language_rva:x}"
                ));
                break;
            };
            let mut entry_offset = dword_align(
                table_offset + (BLOCK_HEADER_SIZE + 2 * (language.len() + 1)) as i128,
                base,
            );
            while entry_offset < table_offset + table_length {
                self.spend(1)?;
                let Some((length, value_length, _)) =
                    self.block_header("String", raw, entry_offset, start)
                else {
                    break;
                };
                let key_rva = rva_at(base, entry_offset + BLOCK_HEADER_SIZE as i128);
                let key = self.string_u(key_rva, MAX_STRING_UNITS, Encoding::Utf8);
                let key = match caught(key)? {
                    Some(key) if self.pe.offset_from_rva(key_rva).is_ok() => Some(key),
                    _ => None,
                };
                let Some(key) = key else {
                    self.pe.warn(format!(
                        "Error parsing the version information, attempting to read StringTable Key string. Can't read unicode string at offset 0x{key_rva:x}"
                    ));
                    break;
                };
                let value_offset = dword_align(
                    (2 * (key.len() + 1) + BLOCK_HEADER_SIZE) as i128 + entry_offset,
                    base,
                );
                let value_rva = rva_at(base, value_offset);
                // The value itself is not needed, only whether it reads.
                let value = self.string_u_units(value_rva, i128::from(value_length), false);
                let value_read =
                    caught(value)?.is_some() && self.pe.offset_from_rva(value_rva).is_ok();
                if !value_read {
                    self.pe.warn(format!(
                        "Error parsing the version information, attempting to read StringTable Value string. Can't read unicode string at offset 0x{value_rva:x}"
                    ));
                    break;
                }
                entry_offset = if length == 0 {
                    table_offset + table_length
                } else {
                    dword_align(length + entry_offset, base)
                };
            }
            let next = dword_align(table_length + table_offset, base);
            // A table that does not move the offset would loop forever.
            if next == table_offset {
                break;
            }
            table_offset = next;
            if table_offset >= info_length {
                break;
            }
        }
        Ok(())
    }

    /// The first Var block of a VarFileInfo block: pefile's loop always
    /// stops after one (`var_offset <= var_offset + Length`), and its
    /// values are read without any check that could warn.
    fn var(&mut self, raw: &[u8], start: i128, base: u64, offset: i128) -> Result<(), Halt> {
        if self.block_header("Var", raw, offset, start).is_none() {
            return Ok(());
        }
        let key_rva = rva_at(base, offset + BLOCK_HEADER_SIZE as i128);
        let key = self.string_u_units(key_rva, MAX_STRING_UNITS, false);
        if caught(key)?.is_none() {
            self.pe.warn(format!(
                "Error parsing the version information, attempting to read VarFileInfo Var string. Can't read unicode string at offset 0x{key_rva:x}"
            ));
        }
        Ok(())
    }
}
