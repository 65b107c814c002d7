//! A bounded DER reader (every length is checked; a malformation is the one error,
//! [`Malformed`], where signify or asn1crypto under it would raise), and the checks
//! of element contents the structures share.

/// The one error: signify (or asn1crypto under it) would raise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Malformed;

pub(super) type Parsed<T> = Result<T, Malformed>;

pub(super) const TAG_BOOLEAN: u8 = 0x01;
pub(super) const TAG_INTEGER: u8 = 0x02;
pub(super) const TAG_BIT_STRING: u8 = 0x03;
pub(super) const TAG_OCTET_STRING: u8 = 0x04;
pub(super) const TAG_NULL: u8 = 0x05;
pub(super) const TAG_OID: u8 = 0x06;
pub(super) const TAG_UTC_TIME: u8 = 0x17;
pub(super) const TAG_GENERALIZED_TIME: u8 = 0x18;
pub(super) const TAG_SEQUENCE: u8 = 0x30;
pub(super) const TAG_SET: u8 = 0x31;
/// Context-specific tags: `| 0x20` when constructed.
pub(super) const CONTEXT: u8 = 0x80;
pub(super) const CONSTRUCTED: u8 = 0x20;

/// One element. Tags are single bytes: a high-tag-number form (never used by these
/// structures) is read as malformed, as any unexpected tag would be.
#[derive(Clone, Copy)]
pub(super) struct Tlv<'a> {
    pub(super) tag: u8,
    pub(super) content: &'a [u8],
}

/// Reads the elements of one content, in order; every length is checked.
#[derive(Clone, Copy)]
pub(super) struct Der<'a> {
    pub(super) rest: &'a [u8],
}

impl<'a> Der<'a> {
    pub(super) fn new(content: &'a [u8]) -> Self {
        Der { rest: content }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    fn peek_tag(&self) -> Option<u8> {
        self.rest.first().copied()
    }

    pub(super) fn next(&mut self) -> Parsed<Tlv<'a>> {
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

    pub(super) fn expect(&mut self, tag: u8) -> Parsed<&'a [u8]> {
        let element = self.next()?;
        if element.tag == tag {
            Ok(element.content)
        } else {
            Err(Malformed)
        }
    }

    pub(super) fn optional(&mut self, tag: u8) -> Parsed<Option<&'a [u8]>> {
        if self.peek_tag() == Some(tag) {
            self.expect(tag).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Elements after the ones a definition has: asn1crypto keeps them as extra
    /// children, so they only need to be well-formed elements.
    pub(super) fn finish(&self) -> Parsed<()> {
        let mut rest = *self;
        while !rest.is_empty() {
            rest.next()?;
        }
        Ok(())
    }

    /// The elements of a SET OF / SEQUENCE OF.
    pub(super) fn elements(content: &'a [u8]) -> Parsed<Vec<Tlv<'a>>> {
        let mut reader = Der::new(content);
        let mut elements = Vec::new();
        while !reader.is_empty() {
            elements.push(reader.next()?);
        }
        Ok(elements)
    }
}

/// The only element of `content`, which must have `tag`.
pub(super) fn single_element(content: &[u8], tag: u8) -> Parsed<&[u8]> {
    let mut reader = Der::new(content);
    let element = reader.expect(tag)?;
    reader.finish()?;
    Ok(element)
}

pub(super) fn single_element_any(content: &[u8]) -> Parsed<Tlv<'_>> {
    let mut reader = Der::new(content);
    let element = reader.next()?;
    reader.finish()?;
    Ok(element)
}

pub(super) fn ascii(bytes: &[u8]) -> Parsed<&[u8]> {
    if bytes.is_ascii() {
        Ok(bytes)
    } else {
        Err(Malformed)
    }
}

/// Checks a UTF-16BE string decodes (Python's utf-16-be rejects lone surrogates).
pub(super) fn utf16_be(bytes: &[u8]) -> Parsed<()> {
    if !bytes.len().is_multiple_of(2) {
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

pub(super) fn check_der_tree_element(element: Tlv<'_>, depth: usize) -> Parsed<()> {
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
pub(super) fn check_bit_string(content: &[u8]) -> Parsed<()> {
    match content {
        [unused, rest @ ..] if *unused <= 7 && (*unused == 0 || !rest.is_empty()) => Ok(()),
        _ => Err(Malformed),
    }
}

pub(super) fn expect_tag(value: Tlv<'_>, tag: u8) -> Parsed<&[u8]> {
    if value.tag == tag {
        Ok(value.content)
    } else {
        Err(Malformed)
    }
}
