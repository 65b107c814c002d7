//! The structures signify reads: the ContentInfo of each record, its Authenticode
//! SignedData (with nested signatures) or RFC 3161 token, SpcIndirectDataContent,
//! TSTInfo, SignerInfo and its attributes.

use super::certificate::parse_certificates;
use super::der::{
    ascii, check_bit_string, expect_tag, single_element, single_element_any, utf16_be, Der,
    Malformed, Parsed, Tlv, CONSTRUCTED, CONTEXT, TAG_BIT_STRING, TAG_BOOLEAN,
    TAG_GENERALIZED_TIME, TAG_INTEGER, TAG_NULL, TAG_OCTET_STRING, TAG_OID, TAG_SEQUENCE, TAG_SET,
};
use super::time::parse_time;

/// What thrember reads from one SignedData.
pub(super) struct Signature<'a> {
    pub(super) has_program_name: bool,
    /// Countersigning time in microseconds since the epoch.
    pub(super) countersigned_at: Option<i128>,
    /// (issuer, subject) Name contents of each certificate, in the encoded order.
    pub(super) certificate_names: Vec<(&'a [u8], &'a [u8])>,
}

/// Deepest chain of nested signatures followed; deeper is a parse error. thrember
/// itself stops with an uncaught RecursionError at about 108 levels (measured with
/// signify 0.7.1 on Python 3.11), so every depth it can answer for is followed.
pub(super) const MAX_NESTED_SIGNATURES: usize = 128;

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
pub(super) const NESTED_SIGNATURE: &[u8] = &[43, 6, 1, 4, 1, 130, 55, 2, 4, 1]; // 1.3.6.1.4.1.311.2.4.1
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
pub(super) fn parse_authenticode_content_info<'a>(
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

/// An attribute list, as signify's dict: a later attribute of a type replaces an
/// earlier one.
struct Attributes<'a> {
    list: Vec<(&'a [u8], Vec<Tlv<'a>>)>,
}

impl<'a> Attributes<'a> {
    pub(super) fn parse(content: Option<&'a [u8]>) -> Parsed<Self> {
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

    pub(super) fn get(&self, oid: &[u8]) -> Option<&[Tlv<'a>]> {
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
    pub(super) has_program_name: bool,
    /// Microseconds since the epoch, from a PKCS#9 countersigner or an RFC 3161 token.
    pub(super) countersigned_at: Option<i128>,
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
