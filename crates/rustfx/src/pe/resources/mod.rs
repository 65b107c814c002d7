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
//!
//! This file holds the tree walk and its limits; the UTF-16 string reads
//! are in strings.rs, the VS_VERSION_INFO tree in version.rs.

use super::{BadRva, Pe};

mod strings;
mod version;

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
}

#[cfg(test)]
mod tests;
