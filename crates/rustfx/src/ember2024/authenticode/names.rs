//! Names as signify compares them (CertificateName.rdns): RDN by RDN, the first
//! attribute's type and decoded value.

use super::der::{
    ascii, expect_tag, utf16_be, Der, Malformed, Parsed, Tlv, TAG_BIT_STRING, TAG_OID,
    TAG_SEQUENCE, TAG_SET,
};

/// signify compares, RDN by RDN, the first attribute's type and decoded value.
pub(super) fn names_equal(issuer: &[u8], subject: &[u8]) -> Parsed<bool> {
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
            if !value.content.len().is_multiple_of(4) {
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
