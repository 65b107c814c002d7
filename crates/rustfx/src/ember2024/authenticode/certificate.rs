//! X.509 certificates as signify builds them on asn1crypto: the issuer and subject
//! names, and the checks asn1crypto makes when it parses the other fields in full.

use super::der::{
    check_bit_string, check_der_tree_element, expect_tag, single_element, Der, Malformed, Parsed,
    CONSTRUCTED, CONTEXT, TAG_BIT_STRING, TAG_BOOLEAN, TAG_INTEGER, TAG_NULL, TAG_OCTET_STRING,
    TAG_OID, TAG_SEQUENCE,
};
use super::time::parse_time;

/// The certificates [0] IMPLICIT SET: (issuer, subject) of each X.509 certificate;
/// the other CertificateChoices ([0]..[3]) are skipped, as signify filters them out.
pub(super) fn parse_certificates(certificates: &[u8]) -> Parsed<Vec<(&[u8], &[u8])>> {
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
