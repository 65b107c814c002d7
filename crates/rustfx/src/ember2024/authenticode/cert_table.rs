//! signify's PE walk (signify/authenticode/signed_pe.py): where the certificate
//! table is, and its WIN_CERTIFICATE records.

pub(super) const WIN_CERT_TYPE_PKCS_SIGNED_DATA: u16 = 2;

pub(super) fn read_u16(data: &[u8], offset: u64) -> Option<u16> {
    let start = usize::try_from(offset).ok()?;
    let bytes = data.get(start..start.checked_add(2)?)?;
    Some(u16::from_le_bytes([bytes[0], bytes[1]]))
}

pub(super) fn read_u32(data: &[u8], offset: u64) -> Option<u32> {
    let start = usize::try_from(offset).ok()?;
    let bytes = data.get(start..start.checked_add(4)?)?;
    Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

/// (start, end) of the certificate table, or None wherever signify finds none. Offsets
/// are u64 because signify computes them with Python integers (no wrap-around).
pub(super) fn certificate_table(data: &[u8]) -> Option<(u64, u64)> {
    let file_length = data.len() as u64;
    if data.get(..2)? != b"MZ" {
        return None;
    }
    let pe_offset = u64::from(read_u32(data, 0x3C)?);
    if pe_offset >= file_length {
        return None;
    }
    let pe_start = usize::try_from(pe_offset).ok()?;
    if data.get(pe_start..pe_start.checked_add(4)?)? != b"PE\0\0" {
        return None;
    }
    let optional_header_size = u64::from(read_u16(data, pe_offset + 20)?);
    let optional_header_offset = pe_offset + 24;
    let optional_header_end = optional_header_offset + optional_header_size;
    // Under 68 bytes there is not even a checksum: signify gives up.
    if optional_header_end > file_length || optional_header_size < 68 {
        return None;
    }
    let (rva_count_offset, directory_offset) = match read_u16(data, optional_header_offset)? {
        0x10B => (optional_header_offset + 92, optional_header_offset + 128),
        0x20B => (optional_header_offset + 108, optional_header_offset + 144),
        _ => return None,
    };
    if optional_header_end < rva_count_offset + 4
        || read_u32(data, rva_count_offset)? < 5
        || optional_header_end < directory_offset + 8
    {
        return None;
    }
    let address = u64::from(read_u32(data, directory_offset)?);
    let size = u64::from(read_u32(data, directory_offset + 4)?);
    if size == 0 || address < optional_header_end || address + size > file_length {
        return None;
    }
    Some((address, address + size))
}

pub(super) struct WinCertificate<'a> {
    /// Where the whole record is in the file: (start, end).
    pub(super) span: (u64, u64),
    pub(super) revision: u16,
    pub(super) certificate_type: u16,
    pub(super) certificate: &'a [u8],
}

/// signify's `_parse_cert_table`: the records, until the first one that does not fit.
pub(super) struct WinCertificates<'a> {
    pub(super) data: &'a [u8],
    pub(super) position: u64,
    end: u64,
}

impl<'a> WinCertificates<'a> {
    pub(super) fn new(data: &'a [u8], (start, end): (u64, u64)) -> Self {
        WinCertificates {
            data,
            position: start,
            end,
        }
    }
}

impl<'a> Iterator for WinCertificates<'a> {
    type Item = WinCertificate<'a>;

    fn next(&mut self) -> Option<WinCertificate<'a>> {
        if self.position >= self.end {
            return None;
        }
        let position = self.position;
        // Ending here on a bad record is what the silenced SignedPEParseError does.
        self.position = self.end;
        let length = u64::from(read_u32(self.data, position)?);
        let revision = read_u16(self.data, position + 4)?;
        let certificate_type = read_u16(self.data, position + 6)?;
        if length <= 8 || position + length > self.end {
            return None;
        }
        let start = usize::try_from(position + 8).ok()?;
        let end = usize::try_from(position + length).ok()?;
        let certificate = self.data.get(start..end)?;
        // Records are 8-aligned by their length, not by their position.
        self.position = position + length + (8 - length % 8) % 8;
        Some(WinCertificate {
            span: (position, position + length),
            revision,
            certificate_type,
            certificate,
        })
    }
}
