//! The resource directory as pefile's `parse_resources_directory` walks it:
//! the same tree walk, limits, reads and warnings, for the sake of the
//! warnings and of the reads' side effects only (nothing of the resources is
//! kept).
//!
//! pefile reads each directory (at most 4096 entries, 0x8000 in the file,
//! 32 levels deep, never a directory already on the path from the root),
//! each entry's name (a pascal UTF-16 string, checked for overlap with the
//! previous name), each data entry, the RT_STRING blocks (only whether they
//! can be fetched matters: parsing the strings never warns) and, for
//! RT_VERSION at the root, the VS_VERSION_INFO tree (VS_FIXEDFILEINFO, then
//! StringFileInfo/StringTable/String and VarFileInfo/Var). Every read goes
//! through `Pe::get_data` / `Pe::offset_from_rva` in pefile's order, because
//! each one moves pefile's section cache, which later directories see.
//!
//! Memory is bounded by pefile's own limits (the entry summaries kept for
//! RT_STRING and RT_VERSION are at most 0x8000 + 4096 entries). Time is not
//! bounded by pefile: a crafted VS_VERSION_INFO can make its loops run for
//! billions of steps (and pefile with them). A work budget therefore stops
//! the walk silently after [`WORK_BUDGET`] steps and bytes read, far above
//! what any real file needs; on such a file rustfx can miss warnings pefile
//! would eventually raise.

use super::{py_slice, BadRva, Pe};

/// pefile's `MAX_RESOURCE_ENTRIES`: entries in the whole tree.
const MAX_RESOURCE_ENTRIES: u64 = 0x8000;
/// pefile's `MAX_RESOURCE_DEPTH`.
const MAX_RESOURCE_DEPTH: u32 = 32;
/// pefile's `MAX_ALLOWED_ENTRIES`: entries in one directory.
const MAX_ALLOWED_ENTRIES: u64 = 4096;
const RT_STRING: u32 = 6;
const RT_VERSION: u32 = 16;
/// `get_string_u_at_rva`'s default `max_length`, in UTF-16 units.
const MAX_STRING_UNITS: i128 = 1 << 16;
/// Steps plus bytes read before the walk gives up (see the module doc).
const WORK_BUDGET: u64 = 1 << 26;
const DIRECTORY_SIZE: usize = 16;
const DIRECTORY_ENTRY_SIZE: usize = 8;
const DATA_ENTRY_SIZE: usize = 16;
/// `Length`, `ValueLength`, `Type`: the header of every version block.
const BLOCK_HEADER_SIZE: usize = 6;
const FIXED_FILE_INFO_SIZE: usize = 52;

/// Why the walk stopped early.
enum Halt {
    /// pefile raised `PEFormatError`: caught where pefile catches it, else
    /// it leaves the directory ("Failed to process directory").
    Raised(BadRva),
    /// The work budget ran out.
    OutOfBudget,
}

impl From<BadRva> for Halt {
    fn from(error: BadRva) -> Self {
        Halt::Raised(error)
    }
}

/// pefile's `try: ... except PEFormatError:` — `None` where pefile would
/// catch the error; running out of budget still stops everything.
fn caught<T>(result: Result<T, Halt>) -> Result<Option<T>, Halt> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(Halt::Raised(_)) => Ok(None),
        Err(Halt::OutOfBudget) => Err(Halt::OutOfBudget),
    }
}

/// An IMAGE_RESOURCE_DATA_ENTRY, as far as pefile uses it afterwards.
#[derive(Debug, Clone, Copy)]
struct DataEntry {
    offset_to_data: u32,
    size: u32,
}

/// One parsed directory entry, with what its parent directory may still
/// look at: RT_STRING and RT_VERSION handling reach two levels down.
struct Entry {
    /// pefile's `entry_id`: the `Name` of an entry not named by a string.
    id: Option<u32>,
    kind: EntryKind,
}

enum EntryKind {
    Data(DataEntry),
    /// A subdirectory: for each of its entries, the data entry when it is
    /// a leaf.
    Directory(Vec<Option<DataEntry>>),
}

/// pefile's `dword_align(offset, base)`, including its 32-bit mask (an
/// `OffsetToData` near 4 GiB makes it negative, and pefile then indexes
/// from the end of the block, as `py_slice` does).
fn dword_align(offset: i128, base: u64) -> i128 {
    let base = i128::from(base);
    ((offset + base + 3) & 0xFFFF_FFFC) - (base & 0xFFFF_FFFC)
}

/// An RVA pefile computes as `base + offset`. It is never negative (see
/// `dword_align`); an impossible one maps to an RVA no read can fetch.
fn rva_at(base: u64, offset: i128) -> u64 {
    u64::try_from(i128::from(base) + offset).unwrap_or(u64::MAX)
}

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
enum Encoding {
    Utf8,
    /// Only for the VS_VERSION_INFO key, so that garbage keeps its byte
    /// values in the warning.
    Ascii,
}

/// UTF-16 units as pefile encodes them after `"".join(map(chr, units))`:
/// UTF-8 or ASCII with Python's `backslashreplace` for what does not fit
/// (lone surrogates in UTF-8; everything past 0x7F in ASCII).
fn encode_units(bytes: &[u8], encoding: Encoding) -> Vec<u8> {
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

/// pefile's `parse_resources_directory(rva, size)` for the directory
/// itself (`size` is passed down by pefile but never used).
pub(crate) fn parse_resources_directory(pe: &mut Pe, rva: u64, _size: u64) -> Result<(), BadRva> {
    let mut walk = ResourceWalk {
        pe,
        total_entries: 0,
        total_bytes: 0,
        size_limit_reached: false,
        work_left: WORK_BUDGET,
    };
    let mut path = vec![rva];
    match walk.directory(rva, rva, 0, &mut path) {
        Ok(_) | Err(Halt::OutOfBudget) => Ok(()),
        Err(Halt::Raised(error)) => Err(error),
    }
}

/// The state pefile keeps on the PE object while it walks the resources.
struct ResourceWalk<'p, 'a> {
    pe: &'p mut Pe<'a>,
    /// `__total_resource_entries_count`.
    total_entries: u64,
    /// `__total_resource_bytes`: name lengths and data sizes, which pefile
    /// compares with the file size (`__resource_size_limit_upperbounds`).
    total_bytes: u64,
    /// `__resource_size_limit_reached`: that warning is raised once.
    size_limit_reached: bool,
    work_left: u64,
}

impl ResourceWalk<'_, '_> {
    fn spend(&mut self, work: usize) -> Result<(), Halt> {
        self.work_left = self
            .work_left
            .checked_sub(work as u64)
            .ok_or(Halt::OutOfBudget)?;
        Ok(())
    }

    fn corrupt_header(&mut self, name: &str, file_offset: i128) {
        self.pe.warn(format!(
            "Corrupt header \"{name}\" at file offset {file_offset}. Exception: 'Data length less than expected header length.'"
        ));
    }

    /// One level of pefile's `parse_resources_directory`: `None` where
    /// pefile returns `None` (the parent then stops reading its entries).
    /// `path` holds the directories from the root down to this one.
    fn directory(
        &mut self,
        rva: u64,
        base_rva: u64,
        level: u32,
        path: &mut Vec<u64>,
    ) -> Result<Option<Vec<Entry>>, Halt> {
        if level > MAX_RESOURCE_DEPTH {
            self.pe.warn(format!(
                "Error parsing the resources directory. Excessively nested table depth {level} (>{MAX_RESOURCE_DEPTH})"
            ));
            return Ok(None);
        }
        let Ok(header) = self.pe.get_data(rva, Some(DIRECTORY_SIZE as i128)) else {
            self.pe.warn(format!(
                "Invalid resources directory. Can't read directory data at RVA: 0x{rva:x}"
            ));
            return Ok(None);
        };
        let file_offset = self.pe.offset_from_rva(rva)?;
        if header.len() < DIRECTORY_SIZE {
            self.corrupt_header("IMAGE_RESOURCE_DIRECTORY", file_offset);
            self.pe.warn(format!(
                "Invalid resources directory. Can't parse directory data at RVA: 0x{rva:x}"
            ));
            return Ok(None);
        }
        let named = u64::from(super::u16_at(header, 12));
        let with_id = u64::from(super::u16_at(header, 14));
        let number_of_entries = named + with_id;
        if number_of_entries > MAX_ALLOWED_ENTRIES {
            self.pe.warn(format!(
                "Error parsing the resources directory. The directory contains {number_of_entries} entries (>{MAX_ALLOWED_ENTRIES})"
            ));
            return Ok(None);
        }
        self.total_entries += number_of_entries;
        if self.total_entries > MAX_RESOURCE_ENTRIES {
            self.pe.warn(format!(
                "Error parsing the resources directory. The file contains at least {} entries (>{MAX_RESOURCE_ENTRIES})",
                self.total_entries
            ));
            return Ok(None);
        }

        let mut entries = Vec::new();
        // The names pefile renders once the loop is done.
        let mut names = Vec::new();
        let mut last_name: Option<(u64, u64)> = None;
        let mut entry_rva = rva + DIRECTORY_SIZE as u64;
        for index in 0..number_of_entries {
            self.spend(1)?;
            let file_size = self.pe.data.len() as u64;
            if !self.size_limit_reached && self.total_bytes > file_size {
                self.size_limit_reached = true;
                self.pe.warn(format!(
                    "Resource size 0x{:x} exceeds file size 0x{file_size:x}, overlapping resources found.",
                    self.total_bytes
                ));
            }
            let Some((name, offset_to_data)) = self.directory_entry(entry_rva)? else {
                self.pe.warn(format!(
                    "Error parsing the resources directory, Entry {index} is invalid, RVA = 0x{entry_rva:x}. "
                ));
                break;
            };
            let entry_id = (name & 0x8000_0000 == 0).then_some(name);
            if entry_id.is_none() {
                let name_rva = base_rva + u64::from(name & 0x7FFF_FFFF);
                self.total_bytes = self
                    .total_bytes
                    .saturating_add(self.pascal_16_length(name_rva));
                // A name starting inside the previous one is taken as a
                // corrupt table (pefile also drops the previous name).
                if let Some((begin, end)) = last_name {
                    if begin < name_rva && end >= name_rva {
                        names.pop();
                        self.pe.warn(format!(
                            "Error parsing the resources directory, attempting to read entry name. Entry names overlap 0x{name_rva:x}"
                        ));
                        break;
                    }
                }
                last_name = Some((name_rva, name_rva + self.pascal_16_length(name_rva)));
                names.push(name_rva);
            }

            let offset = u64::from(offset_to_data & 0x7FFF_FFFF);
            let target = base_rva + offset;
            let subdirectory = if offset_to_data & 0x8000_0000 != 0 {
                // A subdirectory already on the path is a loop: pefile stops
                // reading this directory's entries.
                if path.contains(&target) {
                    break;
                }
                path.push(target);
                let parsed = self.directory(target, base_rva, level + 1, path);
                path.pop();
                let Some(subentries) = parsed? else {
                    break;
                };
                if entry_id == Some(RT_STRING) {
                    self.fetch_string_blocks(&subentries);
                }
                let leaves = subentries
                    .iter()
                    .map(|entry| match entry.kind {
                        EntryKind::Data(data) => Some(data),
                        EntryKind::Directory(_) => None,
                    })
                    .collect();
                entries.push(Entry {
                    id: entry_id,
                    kind: EntryKind::Directory(leaves),
                });
                Some(subentries)
            } else {
                let Some(data) = self.data_entry(target)? else {
                    break;
                };
                self.total_bytes = self.total_bytes.saturating_add(u64::from(data.size));
                entries.push(Entry {
                    id: entry_id,
                    kind: EntryKind::Data(data),
                });
                None
            };

            // pefile tests `Name & 0xFFFF`, so a named entry can count too;
            // it reads the leaves under the entry's first subdirectory.
            if level == 0 && name & 0xFFFF == RT_VERSION {
                if let Some(EntryKind::Directory(leaves)) = subdirectory
                    .as_ref()
                    .and_then(|subentries| subentries.first())
                    .map(|first| &first.kind)
                {
                    for data in leaves.iter().flatten() {
                        self.version_information(*data)?;
                    }
                }
            }
            entry_rva += DIRECTORY_ENTRY_SIZE as u64;
        }

        for name_rva in names {
            self.render_pascal_16(name_rva)?;
        }
        Ok(Some(entries))
    }

    /// pefile's `parse_resource_entry`: `(Name, OffsetToData)`, or `None`
    /// (the caller warns).
    fn directory_entry(&mut self, rva: u64) -> Result<Option<(u32, u32)>, Halt> {
        let Ok(raw) = self.pe.get_data(rva, Some(DIRECTORY_ENTRY_SIZE as i128)) else {
            return Ok(None);
        };
        let file_offset = self.pe.offset_from_rva(rva)?;
        if raw.len() < DIRECTORY_ENTRY_SIZE {
            self.corrupt_header("IMAGE_RESOURCE_DIRECTORY_ENTRY", file_offset);
            return Ok(None);
        }
        Ok(Some((super::u32_at(raw, 0), super::u32_at(raw, 4))))
    }

    /// pefile's `parse_resource_data_entry`.
    fn data_entry(&mut self, rva: u64) -> Result<Option<DataEntry>, Halt> {
        let Ok(raw) = self.pe.get_data(rva, Some(DATA_ENTRY_SIZE as i128)) else {
            self.pe.warn(format!(
                "Error parsing a resource directory data entry, the RVA is invalid: 0x{rva:x}"
            ));
            return Ok(None);
        };
        let file_offset = self.pe.offset_from_rva(rva)?;
        if raw.len() < DATA_ENTRY_SIZE {
            self.corrupt_header("IMAGE_RESOURCE_DATA_ENTRY", file_offset);
            return Ok(None);
        }
        Ok(Some(DataEntry {
            offset_to_data: super::u32_at(raw, 0),
            size: super::u32_at(raw, 4),
        }))
    }

    /// pefile's RT_STRING handling ("Ange Albertini's code"): every string
    /// block under an id-named subdirectory is fetched; decoding it never
    /// warns, so only the fetch is ported.
    fn fetch_string_blocks(&mut self, string_directory: &[Entry]) {
        for entry in string_directory {
            let EntryKind::Directory(leaves) = &entry.kind else {
                continue;
            };
            if entry.id.is_none() {
                continue;
            }
            for data in leaves.iter().flatten() {
                let (rva, size) = (data.offset_to_data, data.size);
                if self
                    .pe
                    .get_data(u64::from(rva), Some(i128::from(size)))
                    .is_err()
                {
                    self.pe.warn(format!(
                        "Error parsing resource of type RT_STRING at RVA 0x{rva:x} with size {size}"
                    ));
                }
            }
        }
    }

    /// `UnicodeStringWrapperPostProcessor.get_pascal_16_length`: the word
    /// at `rva`, 0 (pefile's `False`) when it cannot be read.
    fn pascal_16_length(&mut self, rva: u64) -> u64 {
        match self.pe.get_data(rva, Some(2)) {
            Ok(&[low, high]) => u64::from(u16::from_le_bytes([low, high])),
            _ => 0,
        }
    }

    /// `UnicodeStringWrapperPostProcessor.render_pascal_16`.
    fn render_pascal_16(&mut self, rva: u64) -> Result<(), Halt> {
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
    fn string_u_units(&mut self, rva: u64, max_length: i128, whole: bool) -> Result<Vec<u8>, Halt> {
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
    fn string_u(
        &mut self,
        rva: u64,
        max_length: i128,
        encoding: Encoding,
    ) -> Result<Vec<u8>, Halt> {
        let units = self.string_u_units(rva, max_length, true)?;
        self.spend(units.len())?;
        Ok(encode_units(&units, encoding))
    }

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
            i128::from(super::u16_at(bytes, 0)),
            super::u16_at(bytes, 2),
            super::u16_at(bytes, 4),
        ))
    }

    /// pefile's `parse_version_information` for one RT_VERSION leaf.
    fn version_information(&mut self, version: DataEntry) -> Result<(), Halt> {
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

#[cfg(test)]
mod tests {
    //! Each file of tests/golden/pe/resources (tests/pe/build_resource_cases.py)
    //! against the warning kinds pefile 2024.8.26 raised on it
    //! (tests/pe/expected_resource_warnings.py prints `EXPECTED`).

    use std::collections::BTreeSet;
    use std::path::Path;

    use crate::ember2024::{warning_id, PEFILE_WARNINGS};
    use crate::pe::Pe;

    const EXPECTED: &[(&str, &[&str])] = &[
        ("exe64_res_data_entry_truncated.exe", &["Byte 0x...", "Corrupt header..."]),
        ("exe64_res_data_entry_unreadable.exe", &["Byte 0x...", "Error parsing a resource directory data entry..."]),
        ("exe64_res_depth_excessive.exe", &["Byte 0x...", "Error parsing the resources directory. Excessively nested table depth..."]),
        ("exe64_res_dir_entries_huge.exe", &["Byte 0x...", "Error parsing the resources directory. The directory contains..."]),
        ("exe64_res_dir_loop_to_root.exe", &["Byte 0x..."]),
        ("exe64_res_dir_rva_unreadable.exe", &["Byte 0x...", "Invalid resources directory. Can't read..."]),
        ("exe64_res_dir_truncated.exe", &["Byte 0x...", "Corrupt header...", "Invalid resources directory. Can't parse directory data at RVA..."]),
        // (no kind) Error parsing the resources directory, Entry 0 is invalid, RVA = 0x57fc. 
        ("exe64_res_entry_truncated.exe", &["Byte 0x...", "Corrupt header..."]),
        ("exe64_res_name_unrenderable.exe", &["Byte 0x...", "Failed rendering pascal string, attempting to read from RVA 0x..."]),
        ("exe64_res_names_overlap.exe", &["Byte 0x...", "Error parsing the resources directory, attempting to read entry name. Entry names overlap..."]),
        ("exe64_res_rt_string_garbage.exe", &["Byte 0x..."]),
        ("exe64_res_rt_string_unreadable.exe", &["Byte 0x...", "Error parsing resource of type RT_STRING at..."]),
        ("exe64_res_size_exceeds_file.exe", &["Byte 0x...", "Resource size..."]),
        ("exe64_res_total_entries_huge.exe", &["Byte 0x...", "Error parsing the resources directory. The file contains at least..."]),
        ("exe64_res_tree_garbage_0.exe", &["Byte 0x...", "Error parsing a resource directory data entry...", "Invalid resources directory. Can't read...", "Resource size..."]),
        ("exe64_res_tree_garbage_1.exe", &["Byte 0x...", "Error parsing a resource directory data entry...", "Invalid resources directory. Can't read...", "Resource size..."]),
        ("exe64_res_tree_garbage_2.exe", &["Byte 0x...", "Error parsing a resource directory data entry...", "Invalid resources directory. Can't read...", "Resource size..."]),
        ("exe64_res_version_fixed_truncated.exe", &["Byte 0x...", "Corrupt header..."]),
        ("exe64_res_version_garbage_0.exe", &["Byte 0x..."]),
        ("exe64_res_version_garbage_1.exe", &["Byte 0x..."]),
        ("exe64_res_version_garbage_2.exe", &["Byte 0x..."]),
        ("exe64_res_version_key_invalid.exe", &["Byte 0x...", "Invalid VS_VERSION_INFO block..."]),
        ("exe64_res_version_key_invalid_long.exe", &["Byte 0x...", "Invalid VS_VERSION_INFO block..."]),
        ("exe64_res_version_key_unreadable.exe", &["Byte 0x...", "Error parsing the version information, attempting to read VS_VERSION_INFO string...", "Invalid VS_VERSION_INFO block..."]),
        ("exe64_res_version_near_4gib.exe", &["Byte 0x...", "Error parsing the version information, attempting to read StringFileInfo string...", "Suspicious value found parsing section..."]),
        ("exe64_res_version_offset_unreadable.exe", &["Byte 0x...", "Error parsing the version information, attempting to read OffsetToData with RVA..."]),
        ("exe64_res_version_string_info_key_unreadable.exe", &["Byte 0x...", "Error parsing the version information, attempting to read StringFileInfo string..."]),
        ("exe64_res_version_string_info_truncated.exe", &["Byte 0x...", "Corrupt header...", "Error parsing StringFileInfo/VarFileInfo struct..."]),
        ("exe64_res_version_string_key_unreadable.exe", &["Byte 0x...", "Error parsing the version information, attempting to read StringTable Key string..."]),
        // (no kind) Error parsing the version information, attempting to read StringTable Value string. Can't read unicode string at offset 0x5800
        ("exe64_res_version_string_value_unreadable.exe", &["Byte 0x..."]),
        ("exe64_res_version_table_key_unreadable.exe", &["Byte 0x...", "Error parsing the version information, attempting to read StringTable string..."]),
        ("exe64_res_version_var_key_unreadable.exe", &["Byte 0x...", "Error parsing the version information, attempting to read VarFileInfo Var string..."]),
    ];

    fn case(name: &str) -> Vec<u8> {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/golden/pe/resources")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn warnings(data: &[u8]) -> Vec<String> {
        Pe::parse(data).expect("a PE").warnings().to_vec()
    }

    #[test]
    fn warning_kinds_are_pefiles() {
        let on_disk = std::fs::read_dir(
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
                .join("tests/golden/pe/resources"),
        )
        .expect("tests/golden/pe/resources")
        .count();
        assert_eq!(on_disk, EXPECTED.len(), "a case without expectations");
        for &(name, kinds) in EXPECTED {
            let expected: BTreeSet<usize> = kinds
                .iter()
                .map(|kind| {
                    PEFILE_WARNINGS
                        .iter()
                        .position(|k| k == kind)
                        .unwrap_or_else(|| panic!("unknown kind {kind}"))
                })
                .collect();
            let seen: BTreeSet<usize> = warnings(&case(name))
                .iter()
                .filter_map(|w| warning_id(w))
                .collect();
            assert_eq!(seen, expected, "{name}");
        }
    }

    /// Warnings thrember has no kind for are still raised, in pefile's words.
    #[test]
    fn warnings_without_a_kind_keep_pefiles_wording() {
        for (name, warning) in [
            (
                "exe64_res_entry_truncated.exe",
                "Error parsing the resources directory, Entry 0 is invalid, RVA = 0x57fc. ",
            ),
            (
                "exe64_res_version_string_value_unreadable.exe",
                "Error parsing the version information, attempting to read StringTable Value string. Can't read unicode string at offset 0x5800",
            ),
        ] {
            let raised = warnings(&case(name));
            assert!(raised.iter().any(|w| w == warning), "{name}: {raised:?}");
        }
    }

    #[test]
    fn dword_align_is_pefiles_including_its_32_bit_mask() {
        assert_eq!(super::dword_align(38, 0x5328), 40);
        assert_eq!(super::dword_align(92, 0x159A), 96);
        assert_eq!(super::dword_align(92, 0xFFFF_FFC0), 0x1C - 0xFFFF_FFC0);
    }

    #[test]
    fn strings_encode_as_python_with_backslashreplace() {
        let units: Vec<u8> = [0x41u16, 0xE9, 0x4E2D, 0xD800]
            .iter()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        assert_eq!(
            super::encode_units(&units, super::Encoding::Utf8),
            "Aé中\\ud800".as_bytes()
        );
        assert_eq!(
            super::encode_units(&units, super::Encoding::Ascii),
            b"A\\xe9\\u4e2d\\ud800"
        );
    }
}
