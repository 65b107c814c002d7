//! The exception directory as pefile 2024.8.26 reads it
//! (`parse_exceptions_directory` with `UnwindInfo.unpack_in_stages`), for
//! x64 and Itanium files: the RUNTIME_FUNCTION entries, the UNWIND_INFO
//! each points to, and the chaining check afterwards.
//!
//! pefile unpacks an UNWIND_INFO in two calls: the first reads its 4-byte
//! header to learn its full size, the second reads that much and decodes
//! the unwind codes; an UNWIND_INFO shared by several functions is decoded
//! once. A code whose operands run past the structure raises, which aborts
//! the whole directory ("Failed to process directory").

use std::collections::{HashMap, HashSet};

use super::{le, BadRva, DirectoryError, Pe};

const IMAGE_FILE_MACHINE_AMD64: u16 = 0x8664;
const IMAGE_FILE_MACHINE_IA64: u16 = 0x200;
const RUNTIME_FUNCTION_SIZE: u64 = 12;
const UNWIND_INFO_HEADER_SIZE: usize = 4;
const UNW_FLAG_CHAININFO: u8 = 0x4;
const UWOP_EPILOG: u8 = 6;

/// What pefile's `UnwindInfo` object remembers between calls.
struct UnwindInfo {
    file_offset: i128,
    /// `sizeof()`: the header size until the header has been read.
    full_size: usize,
    finished: bool,
    /// `FunctionEntry`, present for chained unwind info.
    function_entry: Option<u64>,
    /// Whether `set_chained_function_entry` was called already.
    chained: bool,
}

fn too_short() -> DirectoryError {
    BadRva("Data length less than expected header length.".into()).into()
}

impl UnwindInfo {
    fn new(file_offset: i128) -> Self {
        UnwindInfo {
            file_offset,
            full_size: UNWIND_INFO_HEADER_SIZE,
            finished: false,
            function_entry: None,
            chained: false,
        }
    }

    /// pefile's `unpack_in_stages`: `Some(warning)` where pefile returns one.
    fn unpack_in_stages(&mut self, data: &[u8]) -> Result<Option<String>, DirectoryError> {
        if self.finished {
            return Ok(None);
        }
        let header = data.get(..UNWIND_INFO_HEADER_SIZE).ok_or_else(too_short)?;
        let version = header[0] & 0x7;
        let flags = header[0] >> 3;
        let count_of_codes = usize::from(header[2]);
        let handler_offset = UNWIND_INFO_HEADER_SIZE + ((count_of_codes + 1) & !1) * 2;
        self.full_size = handler_offset + if flags == 0 { 0 } else { 4 };
        if data.len() < self.full_size {
            return Ok(None);
        }
        if version != 1 && version != 2 {
            return Ok(Some(format!(
                "Unsupported version of UNWIND_INFO at {:#x}",
                self.file_offset
            )));
        }
        let mut at = UNWIND_INFO_HEADER_SIZE;
        let mut codes_left = count_of_codes;
        // Only the first epilog code carries the epilog's size (and may take
        // two slots).
        let mut epilog_seen = false;
        // At most CountOfCodes (< 256) passes: each takes at least one slot.
        while codes_left > 0 {
            let code = data.get(at..at + 2).ok_or_else(too_short)?;
            let (operation, info) = (code[1] & 0xF, code[1] >> 4);
            let slots = match operation {
                0 | 2 | 3 | 10 => 1,
                1 if info == 0 => 2,
                1 => 3,
                4 | 8 => 2,
                5 | 9 => 3,
                UWOP_EPILOG if !epilog_seen && info & 1 == 0 => 2,
                UWOP_EPILOG => 1,
                _ => {
                    return Ok(Some(format!(
                        "Unknown UNWIND_CODE at {:#x}",
                        self.file_offset + at as i128
                    )))
                }
            };
            // Every code's structure is exactly its slots long.
            if data.len() < at + 2 * slots {
                return Err(too_short());
            }
            if operation == UWOP_EPILOG {
                epilog_seen = true;
            }
            at += 2 * slots;
            codes_left = codes_left.saturating_sub(slots);
        }
        if flags & UNW_FLAG_CHAININFO != 0 {
            self.function_entry = Some(le(data, handler_offset, 4));
        }
        self.finished = true;
        Ok(None)
    }
}

/// pefile's `parse_exceptions_directory`.
pub(crate) fn parse_exceptions_directory(
    pe: &mut Pe,
    mut rva: u64,
    size: u64,
) -> Result<(), DirectoryError> {
    let machine = pe.file_header.machine;
    if machine != IMAGE_FILE_MACHINE_AMD64 && machine != IMAGE_FILE_MACHINE_IA64 {
        return Ok(());
    }
    // Keyed by UnwindData, as pefile shares them.
    let mut infos: HashMap<u64, UnwindInfo> = HashMap::new();
    // (file offset of the RUNTIME_FUNCTION, its UnwindData if not chained
    // by the low bit), in order.
    let mut functions: Vec<(i128, Option<u64>)> = Vec::new();
    let mut begin_addresses: HashSet<u64> = HashSet::new();
    // Each pass unpacks 12 bytes that had to be there (or stops).
    'functions: for _ in 0..size / RUNTIME_FUNCTION_SIZE {
        let (bytes, file_offset) = pe.data_and_offset(rva, Some(RUNTIME_FUNCTION_SIZE.into()))?;
        let Some(function) = pe.unpack(
            "RUNTIME_FUNCTION",
            bytes,
            RUNTIME_FUNCTION_SIZE as usize,
            file_offset,
        ) else {
            break;
        };
        let (begin, unwind_data) = (le(function, 0, 4), le(function, 8, 4));
        let mut unwind = None;
        // A set low bit means UnwindData points at a chained
        // RUNTIME_FUNCTION, which pefile does not follow.
        if unwind_data & 1 == 0 {
            if let std::collections::hash_map::Entry::Vacant(slot) = infos.entry(unwind_data) {
                slot.insert(UnwindInfo::new(pe.offset_from_rva(unwind_data)?));
            }
            for _stage in 0..2 {
                let wanted = infos.get(&unwind_data).map_or(0, |u| u.full_size);
                let data = pe.get_data(unwind_data, Some(wanted as i128))?;
                let warning = match infos.get_mut(&unwind_data) {
                    Some(info) => info.unpack_in_stages(data)?,
                    None => None,
                };
                if let Some(warning) = warning {
                    pe.warn(warning);
                    break 'functions;
                }
            }
            unwind = Some(unwind_data);
        }
        functions.push((file_offset, unwind));
        begin_addresses.insert(begin);
        rva += RUNTIME_FUNCTION_SIZE;
    }
    for (file_offset, unwind) in functions {
        let Some(info) = unwind.and_then(|key| infos.get_mut(&key)) else {
            continue;
        };
        let Some(entry) = info.function_entry else {
            continue;
        };
        if !begin_addresses.contains(&entry) {
            pe.warn(format!(
                "FunctionEntry of UNWIND_INFO at {file_offset:x} points to an entry that does not exist"
            ));
            continue;
        }
        if info.chained {
            pe.warn(format!(
                "Failed parsing FunctionEntry of UNWIND_INFO at {file_offset:x}: 'Chained function entry cannot be changed'"
            ));
            continue;
        }
        info.chained = true;
    }
    Ok(())
}
