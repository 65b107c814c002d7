//! Protocol buffers' wire format, read by hand: the few TensorFlow messages
//! rustfx-predict looks into (a SavedModel's MetaGraphDef) are walked field by field, so no host needs a protobuf
//! library. Malformed bytes are `None`, never a panic.

/// A field's value, by wire type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// Wire type 0 (int32, int64, bool, enums).
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: strings, bytes, embedded messages, packed fields.
    Bytes(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

/// The fields of the message `bytes`, in order, as (field number, value);
/// `None` if the bytes are not a message.
pub fn fields(bytes: &[u8]) -> Option<Vec<(u64, Value<'_>)>> {
    let mut rest = bytes;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let key = varint(&mut rest)?;
        let value = match key & 7 {
            0 => Value::Varint(varint(&mut rest)?),
            1 => Value::Fixed64(u64::from_le_bytes(take(&mut rest, 8)?.try_into().ok()?)),
            2 => {
                let len = usize::try_from(varint(&mut rest)?).ok()?;
                Value::Bytes(take(&mut rest, len)?)
            }
            5 => Value::Fixed32(u32::from_le_bytes(take(&mut rest, 4)?.try_into().ok()?)),
            _ => return None,
        };
        out.push((key >> 3, value));
    }
    Some(out)
}

/// The embedded messages or strings of field `number` of `bytes`.
pub fn bytes_fields(bytes: &[u8], number: u64) -> Option<Vec<&[u8]>> {
    Some(
        fields(bytes)?
            .into_iter()
            .filter_map(|(n, value)| match value {
                Value::Bytes(b) if n == number => Some(b),
                _ => None,
            })
            .collect(),
    )
}

fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Some(value);
        }
    }
    None
}

fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, tail) = (bytes.get(..n)?, bytes.get(n..)?);
    *bytes = tail;
    Some(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_wire_type_and_refuses_garbage() {
        // 1: varint 150; 2: "hi"; 3: fixed64 1; 4: fixed32 2.
        let msg = [
            0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x19, 1, 0, 0, 0, 0, 0, 0, 0, 0x25, 2, 0, 0,
            0,
        ];
        assert_eq!(
            fields(&msg).unwrap(),
            vec![
                (1, Value::Varint(150)),
                (2, Value::Bytes(b"hi")),
                (3, Value::Fixed64(1)),
                (4, Value::Fixed32(2)),
            ]
        );
        assert_eq!(bytes_fields(&msg, 2).unwrap(), vec![b"hi".as_slice()]);
        assert_eq!(fields(&[]).unwrap(), vec![]);
        for bad in [
            &[0x08][..],
            &[0x12, 0x05, b'a'],
            &[0x0b],
            &[0xff; 11],
            &[0x19, 1, 2],
        ] {
            assert_eq!(fields(bad), None, "{bad:?}");
        }
    }
}
