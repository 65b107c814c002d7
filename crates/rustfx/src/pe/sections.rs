//! The section table and what is read through it, as pefile reads them:
//! `parse_sections` with its adjusted pointers and alignments, the
//! section-by-RVA lookup with its last-used cache, and RVA-to-data and
//! RVA-to-offset translation, which every directory reader uses.

use super::{
    py_slice, u32_at, until_nul, BadRva, NotPe, Pe, Section, MAX_SECTIONS, SECTION_HEADER_SIZE,
};

impl<'a> Pe<'a> {
    /// pefile's `parse_sections`: reads the section table, stops where
    /// pefile stops, and returns the offset just past the table.
    pub(super) fn parse_sections(&mut self, offset: usize) -> Result<usize, NotPe> {
        let count = usize::from(self.file_header.number_of_sections);
        for i in 0..count {
            if i >= MAX_SECTIONS {
                self.warnings
                    .push(format!("Too many sections {count} (>={MAX_SECTIONS})"));
                break;
            }
            let at = offset + SECTION_HEADER_SIZE * i;
            let raw = py_slice(
                self.data,
                at as i128,
                Some((at + SECTION_HEADER_SIZE) as i128),
            );
            if raw.len() == SECTION_HEADER_SIZE && raw.iter().all(|&b| b == 0) {
                self.warnings
                    .push(format!("Invalid section {i}. Contents are null-bytes."));
                break;
            }
            if raw.is_empty() {
                self.warnings.push(format!(
                    "Invalid section {i}. No data in the file (is this corkami's virtsectblXP?)."
                ));
                break;
            }
            if raw.len() < SECTION_HEADER_SIZE {
                // pefile unpacks the short header without catching the error.
                return Err(NotPe("Data length less than expected header length."));
            }
            let mut name = [0u8; 8];
            name.copy_from_slice(&raw[..8]);
            let mut section = Section {
                name,
                virtual_size: u32_at(raw, 8),
                virtual_address: u32_at(raw, 12),
                size_of_raw_data: u32_at(raw, 16),
                pointer_to_raw_data: u32_at(raw, 20),
                characteristics: u32_at(raw, 36),
                pointer_adj: 0,
                address_adj: 0,
                next_address: None,
                header_offset: at as u64,
            };
            let len = self.data.len() as u64;
            let mut errors = 0;
            if u64::from(section.size_of_raw_data) + u64::from(section.pointer_to_raw_data) > len {
                errors += 1;
                self.warnings.push(format!(
                    "Error parsing section {i}. SizeOfRawData is larger than file."
                ));
            }
            if self.adjust_pointer_to_raw_data(section.pointer_to_raw_data) > len {
                errors += 1;
                self.warnings.push(format!(
                    "Error parsing section {i}. PointerToRawData points beyond the end of the file."
                ));
            }
            if section.virtual_size > 0x1000_0000 {
                errors += 1;
                self.warnings.push(format!(
                    "Suspicious value found parsing section {i}. VirtualSize is extremely large > 256MiB."
                ));
            }
            if self.adjust_section_alignment(section.virtual_address) > 0x1000_0000 {
                errors += 1;
                self.warnings.push(format!(
                    "Suspicious value found parsing section {i}. VirtualAddress is beyond 0x10000000."
                ));
            }
            let file_alignment = self.optional_header.file_alignment;
            if file_alignment != 0 && !section.pointer_to_raw_data.is_multiple_of(file_alignment) {
                errors += 1;
                self.warnings.push(format!(
                    "Error parsing section {i}. PointerToRawData should normally be a multiple of FileAlignment, this might imply the file is trying to confuse tools which parse this incorrectly."
                ));
            }
            if errors >= 3 {
                self.warnings
                    .push("Too many warnings parsing section. Aborting.".into());
                break;
            }
            const WRITE_EXECUTE: u32 = 0x8000_0000 | 0x2000_0000;
            // (pefile spares a driver's PAGE section; telling a driver apart
            // needs the imports, which pefile has not read yet at this point
            // either, so it reads them early. Not ported: such a file gets
            // this warning here.)
            if section.characteristics & WRITE_EXECUTE == WRITE_EXECUTE {
                self.warnings.push(format!(
                    "Suspicious flags set for section {i}. Both IMAGE_SCN_MEM_WRITE and IMAGE_SCN_MEM_EXECUTE are set. This might indicate a packed executable."
                ));
            }
            section.pointer_adj = self.pointer_adj(&section);
            section.address_adj = self.adjust_section_alignment(section.virtual_address);
            self.sections.push(section);
        }
        // A stable sort, as Python's.
        self.sections.sort_by_key(|s| s.virtual_address);
        for k in 0..self.sections.len() {
            self.sections[k].next_address = self.sections.get(k + 1).map(|s| s.virtual_address);
        }
        Ok(if count > 0 && !self.sections.is_empty() {
            offset + SECTION_HEADER_SIZE * count
        } else {
            offset
        })
    }

    /// pefile's `adjust_PointerToRawData` (with its once-only warning).
    fn adjust_pointer_to_raw_data(&mut self, value: u32) -> u64 {
        let alignment = self.optional_header.file_alignment;
        if alignment >= 0x200 && !self.file_alignment_warned && !alignment.is_power_of_two() {
            self.warnings.push(format!(
                "If FileAlignment > 0x200 it should be a power of 2. Value: {alignment:x}"
            ));
            self.file_alignment_warned = true;
        }
        u64::from(value & !0x1FF)
    }

    /// pefile's `adjust_SectionAlignment` (with its once-only warning).
    fn adjust_section_alignment(&mut self, value: u32) -> u64 {
        let (section_alignment, file_alignment) = (
            self.optional_header.section_alignment,
            self.optional_header.file_alignment,
        );
        if section_alignment < 0x1000
            && file_alignment != section_alignment
            && !self.section_alignment_warned
        {
            self.warnings.push(format!(
                "If SectionAlignment(0x{section_alignment:x}) < 0x1000 it should equal FileAlignment(0x{file_alignment:x})"
            ));
            self.section_alignment_warned = true;
        }
        let alignment = if section_alignment < 0x1000 {
            file_alignment
        } else {
            section_alignment
        };
        if alignment != 0 && !value.is_multiple_of(alignment) {
            u64::from(value - value % alignment)
        } else {
            u64::from(value)
        }
    }

    /// pefile's `SectionStructure.get_PointerToRawData_adj`.
    fn pointer_adj(&mut self, section: &Section) -> u64 {
        let adjusted = self.adjust_pointer_to_raw_data(section.pointer_to_raw_data);
        if self.optional_header.section_alignment < 0x1000
            && section.pointer_to_raw_data == section.virtual_address
        {
            u64::from(section.virtual_address)
        } else {
            adjusted
        }
    }

    /// pefile's `SectionStructure.contains_rva`.
    pub(crate) fn section_contains(&self, section: &Section, rva: u64) -> bool {
        let len = self.data.len() as i128;
        let raw = i128::from(section.size_of_raw_data);
        let mut size = if len - (section.pointer_adj as i128) < raw {
            i128::from(section.virtual_size)
        } else {
            raw.max(i128::from(section.virtual_size))
        };
        let start = section.address_adj as i128;
        if let Some(next) = section.next_address {
            let next = i128::from(next);
            if next > i128::from(section.virtual_address) && start + size > next {
                size = next - start;
            }
        }
        let rva = i128::from(rva);
        start <= rva && rva < start + size
    }

    /// pefile's `get_section_by_rva`, with its last-used cache.
    pub(crate) fn section_by_rva(&self, rva: u64) -> Option<usize> {
        if let Some(last) = self.last_section.get() {
            if self.section_contains(&self.sections[last], rva) {
                return Some(last);
            }
        }
        let found =
            (0..self.sections.len()).find(|&k| self.section_contains(&self.sections[k], rva));
        if found.is_some() {
            self.last_section.set(found);
        }
        found
    }

    /// pefile's `SectionStructure.get_data(start, length)`.
    fn section_data(
        &self,
        section: &Section,
        start: Option<u64>,
        length: Option<i128>,
    ) -> &'a [u8] {
        let offset = match start {
            None => section.pointer_adj as i128,
            Some(rva) => {
                i128::from(rva) - section.address_adj as i128 + section.pointer_adj as i128
            }
        };
        let mut end = match length {
            Some(length) => offset + length,
            None => offset + i128::from(section.size_of_raw_data),
        };
        let limit = i128::from(section.pointer_to_raw_data) + i128::from(section.size_of_raw_data);
        if end > limit {
            end = limit;
        }
        py_slice(self.data, offset, Some(end))
    }

    /// A section's bytes as pefile's `section.get_data()` gives them.
    pub fn section_bytes(&self, section: &Section) -> &'a [u8] {
        self.section_data(section, None, None)
    }

    /// pefile's `PE.get_data(rva, length)`.
    pub(crate) fn get_data(&self, rva: u64, length: Option<i128>) -> Result<&'a [u8], BadRva> {
        match self.section_by_rva(rva) {
            Some(k) => Ok(self.section_data(&self.sections[k], Some(rva), length)),
            None => {
                let end = length.map(|l| i128::from(rva) + l);
                if (rva as u128) < self.header_len as u128 {
                    Ok(py_slice(
                        &self.data[..self.header_len],
                        i128::from(rva),
                        end,
                    ))
                } else if (rva as u128) < self.data.len() as u128 {
                    Ok(py_slice(self.data, i128::from(rva), end))
                } else {
                    Err(BadRva(
                        "data at RVA can't be fetched. Corrupt header?".into(),
                    ))
                }
            }
        }
    }

    /// `get_data(rva, length)` and `get_offset_from_rva(rva)`, which pefile
    /// calls in turn before unpacking a structure at `rva`.
    pub(crate) fn data_and_offset(
        &self,
        rva: u64,
        length: Option<i128>,
    ) -> Result<(&'a [u8], i128), BadRva> {
        let bytes = self.get_data(rva, length)?;
        Ok((bytes, self.offset_from_rva(rva)?))
    }

    /// pefile's `get_offset_from_rva`.
    pub(crate) fn offset_from_rva(&self, rva: u64) -> Result<i128, BadRva> {
        match self.section_by_rva(rva) {
            Some(k) => {
                let s = &self.sections[k];
                Ok(i128::from(rva) - s.address_adj as i128 + s.pointer_adj as i128)
            }
            None if (rva as u128) < self.data.len() as u128 => Ok(i128::from(rva)),
            None => Err(BadRva(format!("data at RVA 0x{rva:x} can't be fetched"))),
        }
    }

    /// pefile's `get_string_at_rva(rva, max_length)`.
    pub(crate) fn string_at_rva(&self, rva: u64, max_length: u64) -> &'a [u8] {
        let bytes = match self.section_by_rva(rva) {
            Some(k) => {
                self.section_data(&self.sections[k], Some(rva), Some(i128::from(max_length)))
            }
            None => py_slice(
                self.data,
                i128::from(rva),
                Some(i128::from(rva) + i128::from(max_length)),
            ),
        };
        until_nul(bytes)
    }
}
