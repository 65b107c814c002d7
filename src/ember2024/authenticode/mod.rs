//! thrember's `authenticode` feature group (EMBER2024 feature version 3): 8 values
//! describing a PE's Authenticode signatures, bit-exact with thrember, which reads them
//! with signify 0.7.1 (`SignedPEFile(..).iter_signed_datas()`) on top of asn1crypto.
//!
//! What is mirrored, and why it matters for the values:
//! - signify's own PE header walk to the certificate table (not pefile's): any problem
//!   there, or in a WIN_CERTIFICATE record, or a record revision other than 0x200, ends
//!   the walk *silently* (signify swallows `SignedPEParseError`), keeping what was counted.
//! - Every type-2 record is a PKCS#7 ContentInfo holding an Authenticode SignedData. signify
//!   builds the whole tree (nested signatures 1.3.6.1.4.1.311.2.4.1, countersigners) before
//!   yielding anything, so a malformation anywhere in a record means nothing of that record
//!   is counted and `parse_error` is set; earlier records stay counted.
//! - The signature checks signify makes while parsing (one digest algorithm from a fixed
//!   list, the content types, one SignerInfo, no CRLs, issuer-and-serial signer ids, the
//!   required attributes and their counts, never both a PKCS#9 countersignature and an
//!   RFC 3161 token) and the time formats asn1crypto accepts, down to its rounding of
//!   fractional seconds (round half down to a microsecond).
//! - Issuer/subject names are decoded lazily by signify, so a bad name sets `parse_error`
//!   only after that signature's other values were counted; so here too.
//!
//! Where thrember would crash (an exception it does not catch: NotImplementedError,
//! AssertionError, TypeError, OverflowError, RecursionError), there is no value to match;
//! this module then reports `parse_error` like the exceptions thrember does catch;
//! nested signatures deeper than thrember can follow are cut the same way. Times
//! without a zone (which Python reads as local time) are read as UTC, the zone of the
//! machines the goldens come from. Not mirrored (deviations on malformed input only):
//! BER indefinite lengths are rejected; of asn1crypto's typed parsing, a certificate's
//! known extension values are only checked to be well-formed DER (not their types), and
//! attribute values signify never reads are not parsed. On 720 randomly mutated
//! signatures, 716 give thrember's values (see `matches_thrember_bit_for_bit`).

/// thrember's `authenticode` group, in its order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Authenticode {
    /// Number of SignedData structures, nested signatures included.
    pub num_certs: u32,
    /// Some certificate other than the last of a SignedData's list has issuer == subject.
    pub self_signed: bool,
    /// Some signature has no SpcSpOpusInfo programName.
    pub empty_program_name: bool,
    /// Some signature has no countersigner (neither PKCS#9 nor RFC 3161).
    pub no_countersigner: bool,
    /// signify raised a parse error (the values counted before it stay).
    pub parse_error: bool,
    /// Largest number of certificates in one SignedData.
    pub chain_max_depth: u32,
    /// Latest countersigning time, POSIX seconds (stays 0 for times before 1970).
    pub latest_signing_time: f64,
    /// Countersigning time of the last countersigned SignedData minus the COFF timestamp.
    pub signing_time_diff: f64,
}

/// Number of values [`Authenticode::write`] fills.
pub const AUTHENTICODE_WIDTH: usize = 8;

impl Authenticode {
    /// Writes the 8 values into `out[..8]` as thrember's `astype(np.float32)` does.
    pub fn write(&self, out: &mut [f32]) {
        let values = [
            f64::from(self.num_certs),
            f64::from(u8::from(self.self_signed)),
            f64::from(u8::from(self.empty_program_name)),
            f64::from(u8::from(self.no_countersigner)),
            f64::from(u8::from(self.parse_error)),
            f64::from(self.chain_max_depth),
            self.latest_signing_time,
            self.signing_time_diff,
        ];
        for (slot, value) in out.iter_mut().zip(values) {
            *slot = value as f32;
        }
    }
}

/// `data` is the whole file; `pe_timestamp` is the COFF TimeDateStamp pefile read.
pub fn authenticode(data: &[u8], pe_timestamp: u32) -> Authenticode {
    let mut features = Authenticode::default();
    let Some(table) = certificate_table(data) else {
        return features;
    };
    for record in WinCertificates::new(data, table) {
        if record.revision != 0x200 {
            break;
        }
        if record.certificate_type != WIN_CERT_TYPE_PKCS_SIGNED_DATA {
            continue;
        }
        let mut signatures = Vec::new();
        let outcome = parse_authenticode_content_info(record.certificate, 0, &mut signatures)
            .and_then(|()| count_signatures(&signatures, pe_timestamp, &mut features));
        if outcome.is_err() {
            features.parse_error = true;
            break;
        }
    }
    features
}

/// What thrember reads from one SignedData.
struct Signature<'a> {
    has_program_name: bool,
    /// Countersigning time in microseconds since the epoch.
    countersigned_at: Option<i128>,
    /// (issuer, subject) Name contents of each certificate, in the encoded order.
    certificate_names: Vec<(&'a [u8], &'a [u8])>,
}

/// The body of thrember's loop over `iter_signed_datas()`, in its order.
fn count_signatures(
    signatures: &[Signature],
    pe_timestamp: u32,
    features: &mut Authenticode,
) -> Result<(), Malformed> {
    for signature in signatures {
        features.num_certs = features.num_certs.saturating_add(1);
        if !signature.has_program_name {
            features.empty_program_name = true;
        }
        match signature.countersigned_at {
            Some(micros) => {
                let seconds = micros_to_seconds(micros);
                if seconds >= features.latest_signing_time {
                    features.latest_signing_time = seconds;
                }
                features.signing_time_diff = seconds - f64::from(pe_timestamp);
            }
            None => features.no_countersigner = true,
        }
        let depth = u32::try_from(signature.certificate_names.len()).unwrap_or(u32::MAX);
        features.chain_max_depth = features.chain_max_depth.max(depth);
        let all_but_last = signature.certificate_names.len().saturating_sub(1);
        for (issuer, subject) in signature.certificate_names.iter().take(all_but_last) {
            if names_equal(issuer, subject)? {
                features.self_signed = true;
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// signify's PE walk (signify/authenticode/signed_pe.py)
// ---------------------------------------------------------------------------

const WIN_CERT_TYPE_PKCS_SIGNED_DATA: u16 = 2;

fn read_u16(data: &[u8], offset: u64) -> Option<u16> {
    let start = usize::try_from(offset).ok()?;
    let bytes = data.get(start..start.checked_add(2)?)?;
    Some(u16::from_le_bytes([bytes[0], bytes[1]]))
}

fn read_u32(data: &[u8], offset: u64) -> Option<u32> {
    let start = usize::try_from(offset).ok()?;
    let bytes = data.get(start..start.checked_add(4)?)?;
    Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

/// (start, end) of the certificate table, or None wherever signify finds none. Offsets
/// are u64 because signify computes them with Python integers (no wrap-around).
fn certificate_table(data: &[u8]) -> Option<(u64, u64)> {
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

struct WinCertificate<'a> {
    revision: u16,
    certificate_type: u16,
    certificate: &'a [u8],
}

/// signify's `_parse_cert_table`: the records, until the first one that does not fit.
struct WinCertificates<'a> {
    data: &'a [u8],
    position: u64,
    end: u64,
}

impl<'a> WinCertificates<'a> {
    fn new(data: &'a [u8], (start, end): (u64, u64)) -> Self {
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
            revision,
            certificate_type,
            certificate,
        })
    }
}

// ---------------------------------------------------------------------------
// A bounded DER reader
// ---------------------------------------------------------------------------

/// The one error: signify (or asn1crypto under it) would raise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Malformed;

type Parsed<T> = Result<T, Malformed>;

/// Deepest chain of nested signatures followed; deeper is a parse error. thrember
/// itself stops with an uncaught RecursionError at about 108 levels (measured with
/// signify 0.7.1 on Python 3.11), so every depth it can answer for is followed.
const MAX_NESTED_SIGNATURES: usize = 128;

const TAG_BOOLEAN: u8 = 0x01;
const TAG_INTEGER: u8 = 0x02;
const TAG_BIT_STRING: u8 = 0x03;
const TAG_OCTET_STRING: u8 = 0x04;
const TAG_NULL: u8 = 0x05;
const TAG_OID: u8 = 0x06;
const TAG_UTC_TIME: u8 = 0x17;
const TAG_GENERALIZED_TIME: u8 = 0x18;
const TAG_SEQUENCE: u8 = 0x30;
const TAG_SET: u8 = 0x31;
/// Context-specific tags: `| 0x20` when constructed.
const CONTEXT: u8 = 0x80;
const CONSTRUCTED: u8 = 0x20;

/// One element. Tags are single bytes: a high-tag-number form (never used by these
/// structures) is read as malformed, as any unexpected tag would be.
#[derive(Clone, Copy)]
struct Tlv<'a> {
    tag: u8,
    content: &'a [u8],
}

/// Reads the elements of one content, in order; every length is checked.
#[derive(Clone, Copy)]
struct Der<'a> {
    rest: &'a [u8],
}

impl<'a> Der<'a> {
    fn new(content: &'a [u8]) -> Self {
        Der { rest: content }
    }

    fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    fn peek_tag(&self) -> Option<u8> {
        self.rest.first().copied()
    }

    fn next(&mut self) -> Parsed<Tlv<'a>> {
        let (&tag, after_tag) = self.rest.split_first().ok_or(Malformed)?;
        if tag & 0x1F == 0x1F {
            return Err(Malformed);
        }
        let (&first, mut after_length) = after_tag.split_first().ok_or(Malformed)?;
        let length = if first < 0x80 {
            usize::from(first)
        } else {
            // 0x80 is BER's indefinite length; more than 8 length bytes cannot fit.
            let count = usize::from(first & 0x7F);
            if count == 0 || count > 8 {
                return Err(Malformed);
            }
            let (length_bytes, rest) = after_length.split_at_checked(count).ok_or(Malformed)?;
            after_length = rest;
            let mut length: u64 = 0;
            for &byte in length_bytes {
                length = length.checked_mul(256).ok_or(Malformed)? | u64::from(byte);
            }
            usize::try_from(length).map_err(|_| Malformed)?
        };
        let (content, rest) = after_length.split_at_checked(length).ok_or(Malformed)?;
        self.rest = rest;
        Ok(Tlv { tag, content })
    }

    fn expect(&mut self, tag: u8) -> Parsed<&'a [u8]> {
        let element = self.next()?;
        if element.tag == tag {
            Ok(element.content)
        } else {
            Err(Malformed)
        }
    }

    fn optional(&mut self, tag: u8) -> Parsed<Option<&'a [u8]>> {
        if self.peek_tag() == Some(tag) {
            self.expect(tag).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Elements after the ones a definition has: asn1crypto keeps them as extra
    /// children, so they only need to be well-formed elements.
    fn finish(&self) -> Parsed<()> {
        let mut rest = *self;
        while !rest.is_empty() {
            rest.next()?;
        }
        Ok(())
    }

    /// The elements of a SET OF / SEQUENCE OF.
    fn elements(content: &'a [u8]) -> Parsed<Vec<Tlv<'a>>> {
        let mut reader = Der::new(content);
        let mut elements = Vec::new();
        while !reader.is_empty() {
            elements.push(reader.next()?);
        }
        Ok(elements)
    }
}

// ---------------------------------------------------------------------------
// The structures signify reads
// ---------------------------------------------------------------------------

const SIGNED_DATA: &[u8] = &[42, 134, 72, 134, 247, 13, 1, 7, 2]; // 1.2.840.113549.1.7.2
const SPC_INDIRECT_DATA: &[u8] = &[43, 6, 1, 4, 1, 130, 55, 2, 1, 4]; // 1.3.6.1.4.1.311.2.1.4
const SPC_PE_IMAGE_DATA: &[u8] = &[43, 6, 1, 4, 1, 130, 55, 2, 1, 15]; // 1.3.6.1.4.1.311.2.1.15
const TST_INFO: &[u8] = &[42, 134, 72, 134, 247, 13, 1, 9, 16, 1, 4]; // 1.2.840.113549.1.9.16.1.4
const CONTENT_TYPE: &[u8] = &[42, 134, 72, 134, 247, 13, 1, 9, 3]; // 1.2.840.113549.1.9.3
const MESSAGE_DIGEST: &[u8] = &[42, 134, 72, 134, 247, 13, 1, 9, 4]; // 1.2.840.113549.1.9.4
const SIGNING_TIME: &[u8] = &[42, 134, 72, 134, 247, 13, 1, 9, 5]; // 1.2.840.113549.1.9.5
const COUNTER_SIGNATURE: &[u8] = &[42, 134, 72, 134, 247, 13, 1, 9, 6]; // 1.2.840.113549.1.9.6
const SPC_STATEMENT_TYPE: &[u8] = &[43, 6, 1, 4, 1, 130, 55, 2, 1, 11]; // 1.3.6.1.4.1.311.2.1.11
const SPC_SP_OPUS_INFO: &[u8] = &[43, 6, 1, 4, 1, 130, 55, 2, 1, 12]; // 1.3.6.1.4.1.311.2.1.12
const NESTED_SIGNATURE: &[u8] = &[43, 6, 1, 4, 1, 130, 55, 2, 4, 1]; // 1.3.6.1.4.1.311.2.4.1
const RFC3161_TIMESTAMP: &[u8] = &[43, 6, 1, 4, 1, 130, 55, 3, 3, 1]; // 1.3.6.1.4.1.311.3.3.1

/// md5, sha1, sha256, sha384, sha512: signify's ACCEPTED_DIGEST_ALGORITHMS.
const ACCEPTED_DIGESTS: [&[u8]; 5] = [
    &[42, 134, 72, 134, 247, 13, 2, 5],
    &[43, 14, 3, 2, 26],
    &[96, 134, 72, 1, 101, 3, 4, 2, 1],
    &[96, 134, 72, 1, 101, 3, 4, 2, 2],
    &[96, 134, 72, 1, 101, 3, 4, 2, 3],
];

/// Which SignedData signify builds: they differ in content type and signer class.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SignedDataKind {
    Authenticode,
    Rfc3161,
}

/// Which SignerInfo subclass: they differ in required attributes and extras.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SignerKind {
    Authenticode,
    /// PKCS#9 countersignature: signingTime is required.
    CounterSigner,
    /// The signer of an RFC 3161 token: no countersigner allowed.
    Rfc3161,
}

/// ContentInfo holding an Authenticode SignedData; pushes it and its nested signatures
/// in `iter_signed_datas` order. Bytes after the ContentInfo are ignored, as
/// asn1crypto's non-strict `load` does (the record's padding lives there).
fn parse_authenticode_content_info<'a>(
    der: &'a [u8],
    nesting: usize,
    out: &mut Vec<Signature<'a>>,
) -> Parsed<()> {
    let content_info = Der::new(der).expect(TAG_SEQUENCE)?;
    let signed_data = signed_data_of_content_info(content_info)?;
    parse_signed_data(signed_data, SignedDataKind::Authenticode, nesting, out).map(|_| ())
}

/// The SignedData content of a ContentInfo whose type must be signedData.
fn signed_data_of_content_info(content_info: &[u8]) -> Parsed<&[u8]> {
    let mut fields = Der::new(content_info);
    if fields.expect(TAG_OID)? != SIGNED_DATA {
        return Err(Malformed);
    }
    // An absent content makes signify fail too (a TypeError on a Void value).
    let explicit = fields.expect(CONTEXT | CONSTRUCTED)?;
    fields.finish()?;
    let mut inner = Der::new(explicit);
    let signed_data = inner.expect(TAG_SEQUENCE)?;
    inner.finish()?;
    Ok(signed_data)
}

/// A SignedData; for Authenticode pushes it (then its nested ones), for RFC 3161
/// returns the token's genTime in microseconds.
fn parse_signed_data<'a>(
    signed_data: &'a [u8],
    kind: SignedDataKind,
    nesting: usize,
    out: &mut Vec<Signature<'a>>,
) -> Parsed<Option<i128>> {
    if nesting > MAX_NESTED_SIGNATURES {
        return Err(Malformed);
    }
    let mut fields = Der::new(signed_data);
    fields.expect(TAG_INTEGER)?;
    let digest_algorithms = Der::elements(fields.expect(TAG_SET)?)?;
    match digest_algorithms.as_slice() {
        [only] if only.tag == TAG_SEQUENCE => check_digest_algorithm(only.content)?,
        _ => return Err(Malformed),
    }
    let mut encapsulated = Der::new(fields.expect(TAG_SEQUENCE)?);
    let content_type = encapsulated.expect(TAG_OID)?;
    let content = encapsulated.optional(CONTEXT | CONSTRUCTED)?;
    encapsulated.finish()?;
    let token_time = match kind {
        SignedDataKind::Authenticode => {
            if content_type != SPC_INDIRECT_DATA {
                return Err(Malformed);
            }
            check_spc_indirect_data(single_element(content.ok_or(Malformed)?, TAG_SEQUENCE)?)?;
            None
        }
        SignedDataKind::Rfc3161 => {
            if content_type != TST_INFO {
                return Err(Malformed);
            }
            let octets = single_element(content.ok_or(Malformed)?, TAG_OCTET_STRING)?;
            Some(parse_tst_info(single_element(octets, TAG_SEQUENCE)?)?)
        }
    };
    let certificate_names = match fields.optional(CONTEXT | CONSTRUCTED)? {
        Some(certificates) => parse_certificates(certificates)?,
        None => Vec::new(),
    };
    if let Some(crls) = fields.optional(CONTEXT | CONSTRUCTED | 1)? {
        Der::elements(crls)?;
        if kind == SignedDataKind::Authenticode && !crls.is_empty() {
            return Err(Malformed);
        }
    }
    let signer_infos = Der::elements(fields.expect(TAG_SET)?)?;
    fields.finish()?;
    let [signer_info] = signer_infos.as_slice() else {
        return Err(Malformed);
    };
    if signer_info.tag != TAG_SEQUENCE {
        return Err(Malformed);
    }
    let signer_kind = match kind {
        SignedDataKind::Authenticode => SignerKind::Authenticode,
        SignedDataKind::Rfc3161 => SignerKind::Rfc3161,
    };
    // The signer is parsed (nested signatures included) before signify yields this one,
    // yet this one comes first: reserve its place.
    let index = out.len();
    if kind == SignedDataKind::Authenticode {
        out.push(Signature {
            has_program_name: false,
            countersigned_at: None,
            certificate_names,
        });
    }
    let signer = parse_signer_info(signer_info.content, signer_kind, nesting, out)?;
    if let Some(signature) = out
        .get_mut(index)
        .filter(|_| kind == SignedDataKind::Authenticode)
    {
        signature.has_program_name = signer.has_program_name;
        signature.countersigned_at = signer.countersigned_at;
    }
    Ok(token_time)
}

/// The only element of `content`, which must have `tag`.
fn single_element(content: &[u8], tag: u8) -> Parsed<&[u8]> {
    let mut reader = Der::new(content);
    let element = reader.expect(tag)?;
    reader.finish()?;
    Ok(element)
}

/// signify's `_get_digest_algorithm`: an accepted OID and no (or NULL) parameters.
fn check_digest_algorithm(algorithm_identifier: &[u8]) -> Parsed<()> {
    let mut fields = Der::new(algorithm_identifier);
    let oid = fields.expect(TAG_OID)?;
    if !ACCEPTED_DIGESTS.contains(&oid) {
        return Err(Malformed);
    }
    if !fields.is_empty() {
        let parameters = fields.next()?;
        if parameters.tag != TAG_NULL || !parameters.content.is_empty() {
            return Err(Malformed);
        }
    }
    fields.finish()
}

/// SpcIndirectDataContent: SpcPeImageData and an accepted digest algorithm.
fn check_spc_indirect_data(content: &[u8]) -> Parsed<()> {
    let mut fields = Der::new(content);
    let mut data = Der::new(fields.expect(TAG_SEQUENCE)?);
    if data.expect(TAG_OID)? != SPC_PE_IMAGE_DATA {
        return Err(Malformed);
    }
    // SpcPeImageData ::= SEQUENCE { flags BIT STRING DEFAULT, file [0] EXPLICIT SpcLink OPTIONAL }
    // (an absent value is a TypeError in signify).
    let mut image = Der::new(data.expect(TAG_SEQUENCE)?);
    if let Some(flags) = image.optional(TAG_BIT_STRING)? {
        check_bit_string(flags)?;
    }
    if let Some(file) = image.optional(CONTEXT | CONSTRUCTED)? {
        check_spc_link(single_element_any(file)?)?;
    }
    image.finish()?;
    data.finish()?;
    let mut digest_info = Der::new(fields.expect(TAG_SEQUENCE)?);
    check_digest_algorithm(digest_info.expect(TAG_SEQUENCE)?)?;
    digest_info.expect(TAG_OCTET_STRING)?;
    digest_info.finish()?;
    fields.finish()
}

fn single_element_any(content: &[u8]) -> Parsed<Tlv<'_>> {
    let mut reader = Der::new(content);
    let element = reader.next()?;
    reader.finish()?;
    Ok(element)
}

/// SpcLink ::= CHOICE { url [0] IMPLICIT IA5String, moniker [1] IMPLICIT
/// SpcSerializedObject, file [2] EXPLICIT SpcString }; signify reads `.native`.
fn check_spc_link(link: Tlv) -> Parsed<()> {
    match link.tag {
        tag if tag == CONTEXT => ascii(link.content).map(|_| ()),
        tag if tag == CONTEXT | CONSTRUCTED | 1 => Ok(()),
        tag if tag == CONTEXT | CONSTRUCTED | 2 => {
            check_spc_string(single_element_any(link.content)?)
        }
        _ => Err(Malformed),
    }
}

/// SpcString ::= CHOICE { unicode [0] IMPLICIT BMPString, ascii [1] IMPLICIT IA5String }.
fn check_spc_string(string: Tlv) -> Parsed<()> {
    match string.tag {
        tag if tag == CONTEXT => utf16_be(string.content).map(|_| ()),
        tag if tag == CONTEXT | 1 => ascii(string.content).map(|_| ()),
        _ => Err(Malformed),
    }
}

fn ascii(bytes: &[u8]) -> Parsed<&[u8]> {
    if bytes.is_ascii() {
        Ok(bytes)
    } else {
        Err(Malformed)
    }
}

/// Checks a UTF-16BE string decodes (Python's utf-16-be rejects lone surrogates).
fn utf16_be(bytes: &[u8]) -> Parsed<()> {
    if bytes.len() % 2 != 0 {
        return Err(Malformed);
    }
    let units = bytes
        .chunks_exact(2)
        .map(|pair| u16::from_be_bytes([pair[0], pair[1]]));
    for unit in char::decode_utf16(units) {
        unit.map_err(|_| Malformed)?;
    }
    Ok(())
}

/// TSTInfo: version 1, an accepted imprint algorithm, and genTime (microseconds).
fn parse_tst_info(tst_info: &[u8]) -> Parsed<i128> {
    let mut fields = Der::new(tst_info);
    if fields.expect(TAG_INTEGER)? != [1] {
        return Err(Malformed);
    }
    fields.expect(TAG_OID)?;
    let mut imprint = Der::new(fields.expect(TAG_SEQUENCE)?);
    check_digest_algorithm(imprint.expect(TAG_SEQUENCE)?)?;
    imprint.expect(TAG_OCTET_STRING)?;
    imprint.finish()?;
    fields.expect(TAG_INTEGER)?;
    let gen_time = parse_time(TAG_GENERALIZED_TIME, fields.expect(TAG_GENERALIZED_TIME)?)?;
    // accuracy SEQUENCE OPTIONAL, ordering BOOLEAN DEFAULT, nonce INTEGER OPTIONAL
    fields.optional(TAG_SEQUENCE)?;
    fields.optional(TAG_BOOLEAN)?;
    fields.optional(TAG_INTEGER)?;
    // tsa [0] EXPLICIT GeneralName: anything but a directoryName ([4]) stops signify.
    if let Some(tsa) = fields.optional(CONTEXT | CONSTRUCTED)? {
        let name = single_element_any(tsa)?;
        if name.tag != CONTEXT | CONSTRUCTED | 4 {
            return Err(Malformed);
        }
    }
    fields.optional(CONTEXT | CONSTRUCTED | 1)?;
    fields.finish()?;
    Ok(gen_time)
}

/// The certificates [0] IMPLICIT SET: (issuer, subject) of each X.509 certificate;
/// the other CertificateChoices ([0]..[3]) are skipped, as signify filters them out.
fn parse_certificates(certificates: &[u8]) -> Parsed<Vec<(&[u8], &[u8])>> {
    let mut names = Vec::new();
    for choice in Der::elements(certificates)? {
        match choice.tag {
            TAG_SEQUENCE => names.push(parse_certificate(choice.content)?),
            tag if tag & !CONSTRUCTED & !0x03 == CONTEXT => {}
            _ => return Err(Malformed),
        }
    }
    Ok(names)
}

/// The fields signify's Certificate reads when it is built; asn1crypto parses each of
/// them in full (`.native`), so each must be well-formed DER throughout. The names
/// are only read later, when compared.
fn parse_certificate(certificate: &[u8]) -> Parsed<(&[u8], &[u8])> {
    let mut outer = Der::new(certificate);
    let mut tbs = Der::new(outer.expect(TAG_SEQUENCE)?);
    // signatureAlgorithm's parameters are an ANY: only their header is read.
    let mut signature_algorithm = Der::new(outer.expect(TAG_SEQUENCE)?);
    signature_algorithm.expect(TAG_OID)?;
    signature_algorithm.finish()?;
    check_bit_string(outer.expect(TAG_BIT_STRING)?)?;
    outer.finish()?;
    if let Some(version) = tbs.optional(CONTEXT | CONSTRUCTED)? {
        single_element(version, TAG_INTEGER)?;
    }
    tbs.expect(TAG_INTEGER)?;
    // The inner signature AlgorithmIdentifier is never read.
    tbs.expect(TAG_SEQUENCE)?;
    let issuer = tbs.expect(TAG_SEQUENCE)?;
    let mut validity = Der::new(tbs.expect(TAG_SEQUENCE)?);
    for _ in 0..2 {
        let time = validity.next()?;
        parse_time(time.tag, time.content)?;
    }
    validity.finish()?;
    let subject = tbs.expect(TAG_SEQUENCE)?;
    check_public_key_info(tbs.expect(TAG_SEQUENCE)?)?;
    tbs.optional(CONTEXT | 1)?;
    tbs.optional(CONTEXT | 2)?;
    if let Some(extensions) = tbs.optional(CONTEXT | CONSTRUCTED | 3)? {
        check_extensions(single_element(extensions, TAG_SEQUENCE)?)?;
    }
    tbs.finish()?;
    Ok((issuer, subject))
}

/// Key algorithms asn1crypto knows; any other is a KeyError when it picks the
/// parameters' type (thrember catches KeyError too).
const PUBLIC_KEY_ALGORITHMS: [&[u8]; 10] = [
    &[42, 134, 72, 206, 56, 4, 1],          // dsa 1.2.840.10040.4.1
    &[42, 134, 72, 206, 61, 2, 1],          // ec 1.2.840.10045.2.1
    &[42, 134, 72, 206, 62, 2, 1],          // dh 1.2.840.10046.2.1
    &[42, 134, 72, 134, 247, 13, 1, 1, 1],  // rsa
    &[42, 134, 72, 134, 247, 13, 1, 1, 10], // rsassa_pss
    &[42, 134, 72, 134, 247, 13, 1, 1, 7],  // rsaes_oaep
    &[43, 101, 110],                        // x25519
    &[43, 101, 111],                        // x448
    &[43, 101, 112],                        // ed25519
    &[43, 101, 113],                        // ed448
];
const RSA: &[u8] = &[42, 134, 72, 134, 247, 13, 1, 1, 1];

/// SubjectPublicKeyInfo: a known algorithm, and for RSA (the parsed case that
/// matters here) NULL parameters and an RSAPublicKey header inside the BIT STRING.
fn check_public_key_info(key_info: &[u8]) -> Parsed<()> {
    let mut fields = Der::new(key_info);
    let mut algorithm = Der::new(fields.expect(TAG_SEQUENCE)?);
    let oid = algorithm.expect(TAG_OID)?;
    if !PUBLIC_KEY_ALGORITHMS.contains(&oid) {
        return Err(Malformed);
    }
    let parameters = if algorithm.is_empty() {
        None
    } else {
        Some(algorithm.next()?)
    };
    algorithm.finish()?;
    let key = fields.expect(TAG_BIT_STRING)?;
    fields.finish()?;
    check_bit_string(key)?;
    if oid == RSA {
        if parameters.is_some_and(|p| p.tag != TAG_NULL || !p.content.is_empty()) {
            return Err(Malformed);
        }
        // A parsable BIT STRING has no unused bits.
        let (&unused, key) = key.split_first().ok_or(Malformed)?;
        if unused != 0 {
            return Err(Malformed);
        }
        // Only the RSAPublicKey's header is parsed when the key is built.
        Der::new(key).expect(TAG_SEQUENCE)?;
    }
    Ok(())
}

/// Extension ids asn1crypto (with signify's additions) parses the value of:
/// every 2.5.29.* id, and these.
const PARSED_EXTENSIONS: [&[u8]; 10] = [
    &[43, 6, 1, 5, 5, 7, 1, 1],              // authority_information_access
    &[43, 6, 1, 5, 5, 7, 1, 11],             // subject_information_access
    &[43, 6, 1, 5, 5, 7, 1, 24],             // tls_feature
    &[43, 6, 1, 5, 5, 7, 48, 1, 5],          // ocsp_no_check
    &[42, 134, 72, 134, 246, 125, 7, 65, 0], // entrust_version_extension
    &[96, 134, 72, 1, 134, 248, 66, 1, 1],   // netscape_certificate_type
    &[43, 6, 1, 4, 1, 214, 121, 2, 4, 2],    // signed_certificate_timestamp_list
    &[43, 6, 1, 4, 1, 130, 55, 20, 2],       // microsoft_enroll_certtype
    &[43, 6, 1, 4, 1, 130, 55, 2, 1, 10],    // microsoft_spc_sp_agency_info
    &[43, 6, 1, 4, 1, 130, 55, 2, 1, 27],    // microsoft_spc_financial_criteria
];

/// Extensions: signify reads every value's `.native`, which parses the known ones.
fn check_extensions(extensions: &[u8]) -> Parsed<()> {
    for extension in Der::elements(extensions)? {
        let mut fields = Der::new(expect_tag(extension, TAG_SEQUENCE)?);
        let oid = fields.expect(TAG_OID)?;
        fields.optional(TAG_BOOLEAN)?;
        let value = fields.expect(TAG_OCTET_STRING)?;
        fields.finish()?;
        if oid.starts_with(&[85, 29]) || PARSED_EXTENSIONS.contains(&oid) {
            // asn1crypto's non-strict load: bytes after the value are ignored.
            check_der_tree_element(Der::new(value).next()?, 0)?;
        }
    }
    Ok(())
}

/// Deepest DER nesting [`check_der_tree`] follows; certificates need about 10.
const MAX_DER_DEPTH: usize = 64;

/// Every element of `content` is well-formed DER, recursively, with the per-type
/// rules asn1crypto enforces when it parses a value in full.
fn check_der_tree(content: &[u8], depth: usize) -> Parsed<()> {
    let mut reader = Der::new(content);
    while !reader.is_empty() {
        check_der_tree_element(reader.next()?, depth)?;
    }
    Ok(())
}

fn check_der_tree_element(element: Tlv<'_>, depth: usize) -> Parsed<()> {
    if depth > MAX_DER_DEPTH {
        return Err(Malformed);
    }
    match element.tag {
        tag if tag & CONSTRUCTED != 0 => check_der_tree(element.content, depth + 1),
        TAG_BIT_STRING => check_bit_string(element.content),
        TAG_BOOLEAN if element.content.len() != 1 => Err(Malformed),
        TAG_NULL if !element.content.is_empty() => Err(Malformed),
        TAG_INTEGER | TAG_OID if element.content.is_empty() => Err(Malformed),
        _ => Ok(()),
    }
}

/// A BIT STRING's leading count of unused bits is 0..=7 (and 0 when empty).
fn check_bit_string(content: &[u8]) -> Parsed<()> {
    match content {
        [unused, rest @ ..] if *unused <= 7 && (*unused == 0 || !rest.is_empty()) => Ok(()),
        _ => Err(Malformed),
    }
}

/// An attribute list, as signify's dict: a later attribute of a type replaces an
/// earlier one.
struct Attributes<'a> {
    list: Vec<(&'a [u8], Vec<Tlv<'a>>)>,
}

impl<'a> Attributes<'a> {
    fn parse(content: Option<&'a [u8]>) -> Parsed<Self> {
        let mut list = Vec::new();
        for attribute in Der::elements(content.unwrap_or_default())? {
            if attribute.tag != TAG_SEQUENCE {
                return Err(Malformed);
            }
            let mut fields = Der::new(attribute.content);
            let oid = fields.expect(TAG_OID)?;
            let values = Der::elements(fields.expect(TAG_SET)?)?;
            fields.finish()?;
            list.push((oid, values));
        }
        Ok(Attributes { list })
    }

    fn get(&self, oid: &[u8]) -> Option<&[Tlv<'a>]> {
        self.list
            .iter()
            .rev()
            .find(|(type_oid, _)| *type_oid == oid)
            .map(|(_, values)| values.as_slice())
    }

    /// The one value of `oid`, if present; several values make signify raise.
    fn single(&self, oid: &[u8]) -> Parsed<Option<Tlv<'a>>> {
        match self.get(oid) {
            None => Ok(None),
            Some([value]) => Ok(Some(*value)),
            Some(_) => Err(Malformed),
        }
    }
}

struct Signer {
    has_program_name: bool,
    /// Microseconds since the epoch, from a PKCS#9 countersigner or an RFC 3161 token.
    countersigned_at: Option<i128>,
    /// This signer's own signingTime attribute.
    signing_time: Option<i128>,
}

/// A SignerInfo of the given kind; nested signatures are pushed to `out`.
fn parse_signer_info<'a>(
    signer_info: &'a [u8],
    kind: SignerKind,
    nesting: usize,
    out: &mut Vec<Signature<'a>>,
) -> Parsed<Signer> {
    let mut fields = Der::new(signer_info);
    fields.expect(TAG_INTEGER)?;
    // sid: issuerAndSerialNumber; subjectKeyIdentifier ([0]) is refused by signify.
    let mut sid = Der::new(fields.expect(TAG_SEQUENCE)?);
    sid.expect(TAG_SEQUENCE)?;
    sid.expect(TAG_INTEGER)?;
    sid.finish()?;
    check_digest_algorithm(fields.expect(TAG_SEQUENCE)?)?;
    let signed = Attributes::parse(fields.optional(CONTEXT | CONSTRUCTED)?)?;
    fields.expect(TAG_SEQUENCE)?;
    fields.expect(TAG_OCTET_STRING)?;
    let unsigned = Attributes::parse(fields.optional(CONTEXT | CONSTRUCTED | 1)?)?;
    fields.finish()?;

    let signing_time_required = kind == SignerKind::CounterSigner;
    if signed.get(CONTENT_TYPE).is_none()
        || signed.get(MESSAGE_DIGEST).is_none()
        || (signing_time_required && signed.get(SIGNING_TIME).is_none())
    {
        return Err(Malformed);
    }
    if let Some(digest) = signed.single(MESSAGE_DIGEST)? {
        expect_tag(digest, TAG_OCTET_STRING)?;
    }
    if let Some(content_type) = signed.single(CONTENT_TYPE)? {
        let oid = expect_tag(content_type, TAG_OID)?;
        let expected = match kind {
            SignerKind::Authenticode => Some(SPC_INDIRECT_DATA),
            SignerKind::Rfc3161 => Some(TST_INFO),
            SignerKind::CounterSigner => None,
        };
        if expected.is_some_and(|expected| oid != expected) {
            return Err(Malformed);
        }
    }
    let signing_time = match signed.single(SIGNING_TIME)? {
        Some(time) => Some(parse_time(time.tag, time.content)?),
        None => None,
    };
    let mut countersigned_at = None;
    if let Some(counter_signer) = unsigned.single(COUNTER_SIGNATURE)? {
        // An RFC 3161 signer has no countersigner class: an AssertionError in signify.
        if kind == SignerKind::Rfc3161 {
            return Err(Malformed);
        }
        let counter_signer = expect_tag(counter_signer, TAG_SEQUENCE)?;
        let parsed = parse_signer_info(counter_signer, SignerKind::CounterSigner, nesting, out)?;
        // A PKCS#9 countersigner's signingTime is the countersigning time.
        countersigned_at = parsed.signing_time;
    }
    let mut has_program_name = false;
    if kind == SignerKind::Authenticode {
        if let Some(statement_type) = signed.single(SPC_STATEMENT_TYPE)? {
            for purpose in Der::elements(expect_tag(statement_type, TAG_SEQUENCE)?)? {
                expect_tag(purpose, TAG_OID)?;
            }
        }
        if let Some(opus_info) = signed.single(SPC_SP_OPUS_INFO)? {
            has_program_name = check_opus_info(expect_tag(opus_info, TAG_SEQUENCE)?)?;
        }
        for nested in unsigned.get(NESTED_SIGNATURE).unwrap_or_default() {
            let content_info = expect_tag(*nested, TAG_SEQUENCE)?;
            let signed_data = signed_data_of_content_info(content_info)?;
            parse_signed_data(signed_data, SignedDataKind::Authenticode, nesting + 1, out)?;
        }
        if unsigned.get(COUNTER_SIGNATURE).is_some() && unsigned.get(RFC3161_TIMESTAMP).is_some() {
            return Err(Malformed);
        }
        if let Some(token) = unsigned.single(RFC3161_TIMESTAMP)? {
            let signed_data = signed_data_of_content_info(expect_tag(token, TAG_SEQUENCE)?)?;
            countersigned_at =
                parse_signed_data(signed_data, SignedDataKind::Rfc3161, nesting + 1, out)?;
        }
    }
    Ok(Signer {
        has_program_name,
        countersigned_at,
        signing_time,
    })
}

fn expect_tag(value: Tlv<'_>, tag: u8) -> Parsed<&[u8]> {
    if value.tag == tag {
        Ok(value.content)
    } else {
        Err(Malformed)
    }
}

/// SpcSpOpusInfo ::= SEQUENCE { programName [0] EXPLICIT SpcString OPTIONAL,
/// moreInfo [1] EXPLICIT SpcLink OPTIONAL, publisherInfo [2] EXPLICIT SpcLink OPTIONAL }.
/// Returns whether programName is present.
fn check_opus_info(opus_info: &[u8]) -> Parsed<bool> {
    let mut fields = Der::new(opus_info);
    let program_name = fields.optional(CONTEXT | CONSTRUCTED)?;
    if let Some(name) = program_name {
        check_spc_string(single_element_any(name)?)?;
    }
    for tag in [CONTEXT | CONSTRUCTED | 1, CONTEXT | CONSTRUCTED | 2] {
        if let Some(link) = fields.optional(tag)? {
            check_spc_link(single_element_any(link)?)?;
        }
    }
    fields.finish()?;
    Ok(program_name.is_some())
}

// ---------------------------------------------------------------------------
// Names (signify's CertificateName.rdns) and times (asn1crypto's UTCTime,
// GeneralizedTime and Python's datetime.timestamp())
// ---------------------------------------------------------------------------

/// signify compares, RDN by RDN, the first attribute's type and decoded value.
fn names_equal(issuer: &[u8], subject: &[u8]) -> Parsed<bool> {
    let issuer = Der::elements(issuer)?;
    let subject = Der::elements(subject)?;
    let mut equal = issuer.len() == subject.len();
    // Both sides are decoded in full first, as `rdns` builds both tuples.
    let mut issuer_values = Vec::with_capacity(issuer.len());
    for rdn in &issuer {
        issuer_values.push(first_attribute(*rdn)?);
    }
    let mut subject_values = Vec::with_capacity(subject.len());
    for rdn in &subject {
        subject_values.push(first_attribute(*rdn)?);
    }
    if equal {
        equal = issuer_values
            .iter()
            .zip(&subject_values)
            .all(|(a, b)| a == b);
    }
    Ok(equal)
}

/// (type OID, value as signify compares it) of an RDN's first AttributeTypeAndValue.
fn first_attribute(rdn: Tlv<'_>) -> Parsed<(&[u8], DecodedValue)> {
    let set = expect_tag(rdn, TAG_SET)?;
    let first = Der::new(set).next()?;
    let mut fields = Der::new(expect_tag(first, TAG_SEQUENCE)?);
    let oid = fields.expect(TAG_OID)?;
    let value = fields.next()?;
    fields.finish()?;
    if !value_type_fits(oid, value.tag) {
        return Err(Malformed);
    }
    Ok((oid, decode_value(value)?))
}

/// asn1crypto types the values of the X.520 attributes (2.5.4.*: a DirectoryString,
/// a PrintableString for telephoneNumber, a BIT STRING for uniqueIdentifier), of
/// emailAddress and of domainComponent (IA5String); other types take any value.
fn value_type_fits(oid: &[u8], tag: u8) -> bool {
    const DIRECTORY_STRING: [u8; 6] = [0x14, 0x13, 0x1C, 0x0C, 0x1E, 0x16];
    const EMAIL_ADDRESS: &[u8] = &[42, 134, 72, 134, 247, 13, 1, 9, 1];
    const DOMAIN_COMPONENT: &[u8] = &[9, 146, 38, 137, 147, 242, 44, 100, 1, 25];
    match oid {
        [85, 4, 20] => tag == 0x13,
        [85, 4, 45] => tag == TAG_BIT_STRING,
        [85, 4, _] => DIRECTORY_STRING.contains(&tag),
        _ if oid == EMAIL_ADDRESS || oid == DOMAIN_COMPONENT => tag == 0x16,
        _ => true,
    }
}

/// A name value as Python sees it: text for the string types, else the raw element.
#[derive(PartialEq)]
enum DecodedValue {
    Text(String),
    Other(u8, Vec<u8>),
}

fn decode_value(value: Tlv<'_>) -> Parsed<DecodedValue> {
    let text = match value.tag {
        0x0C => String::from_utf8(value.content.to_vec()).map_err(|_| Malformed)?,
        // IA5String is ASCII in asn1crypto.
        0x16 => ascii(value.content)?
            .iter()
            .map(|&b| char::from(b))
            .collect(),
        // PrintableString, VisibleString, NumericString, GeneralString and
        // GraphicString are Latin-1; TeletexString's codec is close to it.
        0x13 | 0x1A | 0x12 | 0x1B | 0x19 | 0x14 => {
            value.content.iter().map(|&b| char::from(b)).collect()
        }
        0x1E => {
            utf16_be(value.content)?;
            char::decode_utf16(
                value
                    .content
                    .chunks_exact(2)
                    .map(|pair| u16::from_be_bytes([pair[0], pair[1]])),
            )
            .map(|unit| unit.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect()
        }
        0x1C => {
            if value.content.len() % 4 != 0 {
                return Err(Malformed);
            }
            let mut text = String::new();
            for quad in value.content.chunks_exact(4) {
                let code = u32::from_be_bytes([quad[0], quad[1], quad[2], quad[3]]);
                text.push(char::from_u32(code).ok_or(Malformed)?);
            }
            text
        }
        tag => return Ok(DecodedValue::Other(tag, value.content.to_vec())),
    };
    Ok(DecodedValue::Text(text))
}

const MICROS_PER_SECOND: i128 = 1_000_000;

/// A UTCTime or GeneralizedTime as asn1crypto reads it, in microseconds since the
/// epoch (zone-less times as UTC).
fn parse_time(tag: u8, content: &[u8]) -> Parsed<i128> {
    let text = match content {
        // Python's `$` also matches before one final newline.
        [head @ .., b'\n'] => head,
        _ => content,
    };
    let mut cursor = TimeText { rest: text };
    let generalized = match tag {
        TAG_UTC_TIME => false,
        TAG_GENERALIZED_TIME => true,
        _ => return Err(Malformed),
    };
    let year = if generalized {
        cursor.digits(4).ok_or(Malformed)?
    } else {
        // asn1crypto puts two-digit years in 1950..2049.
        let short = cursor.digits(2).ok_or(Malformed)?;
        if short < 50 {
            short + 2000
        } else {
            short + 1900
        }
    };
    let month = cursor.digits(2).ok_or(Malformed)?;
    let day = cursor.digits(2).ok_or(Malformed)?;
    let hour = cursor.digits(2).ok_or(Malformed)?;
    let (minute, second) = if generalized {
        match cursor.digits(2) {
            Some(minute) => (Some(minute), cursor.digits(2)),
            None => (None, None),
        }
    } else {
        (Some(cursor.digits(2).ok_or(Malformed)?), cursor.digits(2))
    };
    let mut fraction_micros = 0;
    if generalized && matches!(cursor.rest.first(), Some(b'.' | b',')) {
        cursor.rest = cursor.rest.get(1..).unwrap_or_default();
        let digits_len = cursor
            .rest
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits_len == 0 {
            return Err(Malformed);
        }
        let (digits, rest) = cursor.rest.split_at(digits_len);
        cursor.rest = rest;
        let unit_seconds = match (minute, second) {
            (None, _) => 3600,
            (Some(_), None) => 60,
            _ => 1,
        };
        fraction_micros = fraction_to_micros(digits, unit_seconds);
    }
    let offset_seconds: Option<i128> = match cursor.rest {
        b"Z" => Some(0),
        [sign @ (b'+' | b'-'), rest @ ..] => {
            cursor.rest = rest;
            let hours = cursor.digits(2).ok_or(Malformed)?;
            let minutes = if generalized {
                cursor.digits(2).unwrap_or(0)
            } else {
                cursor.digits(2).ok_or(Malformed)?
            };
            if !cursor.rest.is_empty() {
                return Err(Malformed);
            }
            let magnitude = i128::from(hours) * 3600 + i128::from(minutes) * 60;
            // Python's timezone() wants |offset| < 24 h.
            if magnitude >= 86_400 {
                return Err(Malformed);
            }
            Some(if *sign == b'-' { -magnitude } else { magnitude })
        }
        [] if generalized => None,
        _ => return Err(Malformed),
    };
    // datetime(): year 0 is asn1crypto's extended_datetime, which has no timestamp().
    if !(1..=9999).contains(&year)
        || !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute.unwrap_or(0) > 59
        || second.unwrap_or(0) > 59
    {
        return Err(Malformed);
    }
    let local_micros = (i128::from(days_from_civil(year, month, day)) * 86_400
        + i128::from(hour) * 3600
        + i128::from(minute.unwrap_or(0)) * 60
        + i128::from(second.unwrap_or(0)))
        * MICROS_PER_SECOND
        + fraction_micros;
    // Adding the fraction past 9999-12-31 is an OverflowError in Python.
    let max_local = (i128::from(days_from_civil(10_000, 1, 1)) * 86_400) * MICROS_PER_SECOND;
    if local_micros >= max_local {
        return Err(Malformed);
    }
    Ok(local_micros - offset_seconds.unwrap_or(0) * MICROS_PER_SECOND)
}

struct TimeText<'a> {
    rest: &'a [u8],
}

impl TimeText<'_> {
    /// The next `count` ASCII digits as a number, consumed only if all are digits.
    fn digits(&mut self, count: usize) -> Option<u32> {
        let digits = self.rest.get(..count)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.rest = self.rest.get(count..)?;
        Some(
            digits
                .iter()
                .fold(0, |value, digit| value * 10 + u32::from(digit - b'0')),
        )
    }
}

/// asn1crypto's `int(Fraction(0.digits) * 10**6 * unit_seconds).limit_denominator(1))`:
/// the microseconds, rounded to the nearest with halves rounded down. Works digit by
/// digit, so any number of digits is exact.
fn fraction_to_micros(digits: &[u8], unit_seconds: i128) -> i128 {
    // 10**6 * 0.d1d2... = d1..d6 . d7...: whole micros, then a tail fraction.
    let mut whole: i128 = 0;
    for index in 0..6 {
        let digit = digits.get(index).map_or(0, |d| i128::from(d - b'0'));
        whole = whole * 10 + digit;
    }
    // unit_seconds * 0.d7d8...: multiply right to left, tracking the result's digits.
    let mut carry: i128 = 0;
    let mut first_digit: i128 = 0;
    let mut later_nonzero = false;
    let tail = digits.get(6..).unwrap_or_default();
    for (position, &digit) in tail.iter().enumerate().rev() {
        let product = i128::from(digit - b'0') * unit_seconds + carry;
        let result_digit = product % 10;
        carry = product / 10;
        if position == 0 {
            first_digit = result_digit;
        } else if result_digit != 0 {
            later_nonzero = true;
        }
    }
    let above_half = first_digit > 5 || (first_digit == 5 && later_nonzero);
    whole * unit_seconds + carry + i128::from(above_half)
}

fn is_leap(year: u32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: u32, month: u32, day: u32) -> i64 {
    let year = i64::from(year) - i64::from(month <= 2);
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Python's `timedelta.total_seconds()`: `micros / 10**6`, correctly rounded.
fn micros_to_seconds(micros: i128) -> f64 {
    const EXACT: i128 = 1 << 53;
    let approximate = micros as f64 / 1e6;
    if micros.abs() <= EXACT {
        // Both operands exact: IEEE division rounds correctly.
        return approximate;
    }
    // Pick, among the neighbours, the double nearest to micros / 10**6 (ties to even).
    let candidates = [
        f64::from_bits(approximate.to_bits().wrapping_sub(1)),
        approximate,
        f64::from_bits(approximate.to_bits().wrapping_add(1)),
    ];
    let mut best = approximate;
    let mut best_error: Option<(i128, i32)> = None;
    for candidate in candidates {
        let Some(error) = scaled_error(candidate, micros) else {
            continue;
        };
        let better = match best_error {
            None => true,
            Some(current) => {
                compare_scaled(error, current).is_lt()
                    || (compare_scaled(error, current).is_eq() && candidate.to_bits() % 2 == 0)
            }
        };
        if better {
            best = candidate;
            best_error = Some(error);
        }
    }
    best
}

/// |candidate * 10**6 - micros| as (numerator, shift): the error is numerator / 2**shift.
fn scaled_error(candidate: f64, micros: i128) -> Option<(i128, i32)> {
    if !candidate.is_finite() {
        return None;
    }
    let bits = candidate.to_bits();
    let exponent = ((bits >> 52) & 0x7FF) as i32;
    let fraction = (bits & ((1 << 52) - 1)) as i128;
    let mantissa = if exponent == 0 {
        fraction
    } else {
        fraction | (1 << 52)
    };
    let signed = if candidate < 0.0 { -mantissa } else { mantissa };
    let power = exponent.max(1) - 1075; // candidate = signed * 2**power
    if power >= 0 {
        let product = signed
            .checked_mul(MICROS_PER_SECOND)?
            .checked_shl(power as u32)?;
        Some(((product - micros).abs(), 0))
    } else {
        let shift = -power;
        if shift > 60 {
            return None;
        }
        let scaled_micros = micros.checked_mul(1 << shift)?;
        Some(((signed * MICROS_PER_SECOND - scaled_micros).abs(), shift))
    }
}

fn compare_scaled(a: (i128, i32), b: (i128, i32)) -> std::cmp::Ordering {
    // Neighbouring doubles share an exponent, except across a power of two.
    let shift = a.1.max(b.1);
    let left = a.0.checked_shl((shift - a.1) as u32).unwrap_or(i128::MAX);
    let right = b.0.checked_shl((shift - b.1) as u32).unwrap_or(i128::MAX);
    left.cmp(&right)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const GOLDEN: &str = "tests/golden/thrember_authenticode.tsv";

    fn repo_file(relative: &str) -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn features_bits(data: &[u8], pe_timestamp: u32) -> [u32; AUTHENTICODE_WIDTH] {
        let mut values = [0f32; AUTHENTICODE_WIDTH];
        authenticode(data, pe_timestamp).write(&mut values);
        values.map(f32::to_bits)
    }

    /// Also a differential check: AUTHENTICODE_GOLDEN=table.tsv (from the generator's
    /// DIR OUT form) compares other files, with no minimum count.
    #[test]
    fn matches_thrember_bit_for_bit() {
        let other = std::env::var("AUTHENTICODE_GOLDEN").ok();
        let golden = String::from_utf8(repo_file(other.as_deref().unwrap_or(GOLDEN))).unwrap();
        let mut checked = 0;
        let mut mismatches = Vec::new();
        for row in golden.lines().skip(1) {
            let columns: Vec<&str> = row.split('\t').collect();
            let (path, pe_timestamp) = (columns[0], columns[2].parse::<u32>().unwrap());
            let expected: Vec<u32> = columns[3..3 + AUTHENTICODE_WIDTH]
                .iter()
                .map(|hex| u32::from_str_radix(hex, 16).unwrap())
                .collect();
            let actual = features_bits(&repo_file(path), pe_timestamp);
            if actual[..] != expected[..] {
                let got: Vec<f32> = actual.iter().map(|&b| f32::from_bits(b)).collect();
                let want: Vec<f32> = expected.iter().map(|&b| f32::from_bits(b)).collect();
                mismatches.push(format!("{path}: got {got:?}, thrember {want:?}"));
            }
            checked += 1;
        }
        assert!(
            checked >= 40 || other.is_some(),
            "only {checked} golden rows"
        );
        assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    }

    /// (offset of the security directory entry, table address) of a test PE.
    fn table_of(data: &[u8]) -> (usize, usize) {
        let e_lfanew = read_u32(data, 0x3C).unwrap() as usize;
        let optional = e_lfanew + 24;
        let entry = optional
            + if read_u16(data, optional as u64) == Some(0x10B) {
                128
            } else {
                144
            };
        (entry, read_u32(data, entry as u64).unwrap() as usize)
    }

    /// `data` with its certificate table replaced by one type-2 record holding `blob`.
    fn with_blob(data: &[u8], blob: &[u8]) -> Vec<u8> {
        let (entry, address) = table_of(data);
        let mut out = data[..address].to_vec();
        let length = 8 + blob.len() as u32;
        out.extend_from_slice(&length.to_le_bytes());
        out.extend_from_slice(&0x200u16.to_le_bytes());
        out.extend_from_slice(&2u16.to_le_bytes());
        out.extend_from_slice(blob);
        out[entry + 4..entry + 8].copy_from_slice(&length.to_le_bytes());
        out
    }

    fn signed_blob(data: &[u8]) -> Vec<u8> {
        let (_, address) = table_of(data);
        let length = read_u32(data, address as u64).unwrap() as usize;
        data[address + 8..address + length].to_vec()
    }

    #[test]
    fn every_truncation_of_a_signature_is_handled() {
        let data = repo_file("tests/golden/pe/signed/cli64_nested.exe");
        let blob = signed_blob(&data);
        for cut in 0..blob.len() {
            let features = authenticode(&with_blob(&data, &blob[..cut]), 0);
            // No prefix of a DER element is itself complete.
            assert!(features.parse_error || cut == 0, "cut {cut}: {features:?}");
        }
        // Cutting the file itself anywhere in or before the table.
        for cut in (0..data.len()).step_by(61) {
            authenticode(&data[..cut], 0);
        }
    }

    #[test]
    fn every_flipped_byte_of_a_signature_is_handled() {
        let data = repo_file("tests/golden/pe/signed/cli64_chain_ts.exe");
        let (_, address) = table_of(&data);
        let mut mutated = data.clone();
        for index in address..data.len() {
            for mask in [0x01, 0x80, 0xFF] {
                mutated[index] ^= mask;
                authenticode(&mutated, 0);
                mutated[index] ^= mask;
            }
        }
    }

    #[test]
    fn deep_nesting_and_huge_lengths_are_parse_errors() {
        let data = repo_file("tests/golden/pe/signed/cli64_chain.exe");
        let mut deep = Vec::new();
        for _ in 0..100_000 {
            deep.extend_from_slice(&[0x30, 0x80]);
        }
        let huge: [&[u8]; 4] = [
            &[0x30, 0x88, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
            &[0x30, 0x89, 1, 0, 0, 0, 0, 0, 0, 0, 0],
            &[0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xF0, 0x06],
            &[0x30, 0x82, 0x00, 0x05, 0x06, 0x01],
        ];
        for blob in [deep.as_slice()].into_iter().chain(huge) {
            let features = authenticode(&with_blob(&data, blob), 0);
            assert_eq!(
                features,
                Authenticode {
                    parse_error: true,
                    ..Authenticode::default()
                }
            );
        }
    }

    #[test]
    fn nested_signatures_past_the_limit_are_parse_errors() {
        // A chain of nested signatures, each the previous one's only nested attribute.
        let data = repo_file("tests/golden/pe/signed/cli64_chain.exe");
        let base = signed_blob(&data);
        let mut blob = trim_to_first_element(&base).to_vec();
        for _ in 0..MAX_NESTED_SIGNATURES + 2 {
            blob = nest_inside(&base, &blob);
        }
        let features = authenticode(&with_blob(&data, &blob), 0);
        assert!(
            features.parse_error && features.num_certs == 0,
            "{features:?}"
        );
        // thrember answers 101 signatures for 100 levels (measured; 109 levels crash it).
        let mut blob = trim_to_first_element(&base).to_vec();
        for _ in 0..100 {
            blob = nest_inside(&base, &blob);
        }
        let features = authenticode(&with_blob(&data, &blob), 0);
        assert_eq!((features.num_certs, features.parse_error), (101, false));
    }

    fn trim_to_first_element(blob: &[u8]) -> &[u8] {
        let mut reader = Der::new(blob);
        reader.next().unwrap();
        &blob[..blob.len() - reader.rest.len()]
    }

    fn der(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        let length = content.len();
        if length < 0x80 {
            out.push(length as u8);
        } else {
            let bytes = (length as u32).to_be_bytes();
            let skip = bytes.iter().take_while(|&&b| b == 0).count();
            out.push(0x80 | (4 - skip) as u8);
            out.extend_from_slice(&bytes[skip..]);
        }
        out.extend_from_slice(content);
        out
    }

    /// `outer` (a ContentInfo without unsigned attributes) with `inner` as its nested
    /// signature; re-encodes every enclosing length.
    fn nest_inside(outer: &[u8], inner: &[u8]) -> Vec<u8> {
        let attribute = der(
            TAG_SEQUENCE,
            &[der(TAG_OID, NESTED_SIGNATURE), der(TAG_SET, inner)].concat(),
        );
        let unsigned = der(CONTEXT | CONSTRUCTED | 1, &attribute);
        // ContentInfo > [0] > SignedData > signerInfos SET > SignerInfo: append `unsigned`.
        let content_info = Der::new(outer).expect(TAG_SEQUENCE).unwrap();
        let mut info_fields = Der::new(content_info);
        let oid = info_fields.expect(TAG_OID).unwrap();
        let explicit = info_fields.expect(CONTEXT | CONSTRUCTED).unwrap();
        let signed_data = Der::new(explicit).expect(TAG_SEQUENCE).unwrap();
        let mut fields = Der::new(signed_data);
        let mut kept = Vec::new();
        let mut signer_infos = None;
        while !fields.is_empty() {
            let before = fields.rest;
            let element = fields.next().unwrap();
            let raw = &before[..before.len() - fields.rest.len()];
            if element.tag == TAG_SET && fields.is_empty() {
                signer_infos = Some(element.content);
            } else {
                kept.extend_from_slice(raw);
            }
        }
        let signer = Der::new(signer_infos.unwrap())
            .expect(TAG_SEQUENCE)
            .unwrap();
        let signer = der(TAG_SEQUENCE, &[signer, &unsigned].concat());
        kept.extend_from_slice(&der(TAG_SET, &signer));
        let signed_data = der(TAG_SEQUENCE, &kept);
        der(
            TAG_SEQUENCE,
            &[der(TAG_OID, oid), der(CONTEXT | CONSTRUCTED, &signed_data)].concat(),
        )
    }

    #[test]
    fn fractions_round_half_down_like_asn1crypto() {
        let cases: [(&[u8], i128, i128); 6] = [
            (b"5", 1, 500_000),
            (b"0000005", 1, 0),
            (b"0000015", 1, 1),
            (b"00000051", 1, 1),
            (b"123456789", 3600, 444_444_440),
            (b"75", 60, 45_000_000),
        ];
        for (digits, unit, micros) in cases {
            assert_eq!(fraction_to_micros(digits, unit), micros, "{digits:?}");
        }
    }

    #[test]
    fn seconds_are_correctly_rounded_like_python_true_division() {
        // (micros, bits of Python's micros / 10**6), beyond 2**53 where f64 is inexact.
        let cases: [(i128, u64); 6] = [
            (9_007_199_254_740_993, 0x4200c6f7a0b5ed8e),
            (288_230_376_151_711_747, 0x4250c6f7a0b5ed8d),
            (-144_115_188_075_855_879, 0xc240c6f7a0b5ed8d),
            (253_402_300_799_123_457, 0x424d7ffa20bf8fcd),
            (253_402_300_799_999_999, 0x424d7ffa20c00000),
            (27_021_597_764_722_976, 0x42192a737112e454),
        ];
        for (micros, bits) in cases {
            assert_eq!(micros_to_seconds(micros).to_bits(), bits, "{micros}");
        }
    }
}
