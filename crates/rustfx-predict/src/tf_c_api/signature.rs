//! The signatures of a loaded SavedModel, read from its serialized
//! `MetaGraphDef` (the C API hands it over as bytes and has no accessor).
//!
//! A protobuf message is a sequence of fields, each a varint key
//! (`field_number << 3 | wire_type`) then a varint, 8 or 4 fixed bytes, or a
//! length-prefixed byte string holding a string or a nested message; a map
//! is a repeated nested message with the key in field 1 and the value in
//! field 2. Only these fields are read (field numbers from TF's
//! `meta_graph.proto` and `tensor_shape.proto`); everything else, the graph
//! included, is skipped:
//!
//! ```text
//! MetaGraphDef     5: map<string, SignatureDef> signature_def
//! SignatureDef     1: map<string, TensorInfo> inputs, 2: outputs, 3: string method_name
//! TensorInfo       1: string name, 2: DataType dtype, 3: TensorShapeProto tensor_shape
//!                  (4: coo_sparse, 5: composite_tensor: not a plain tensor)
//! TensorShapeProto 2: repeated Dim dim (1: int64 size, -1 unknown), 3: bool unknown_rank
//! ```
//!
//! Malformed input is an error, never a panic or an out-of-bounds read.

use std::collections::BTreeMap;

/// One signature: its inputs and outputs by key, sorted by key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Signature {
    /// The inputs, by key.
    pub inputs: BTreeMap<String, TensorInfo>,
    /// The outputs, by key.
    pub outputs: BTreeMap<String, TensorInfo>,
    /// E.g. `"tensorflow/serving/predict"`.
    pub method_name: String,
}

/// What a signature says of one of its tensors.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TensorInfo {
    /// The graph tensor, `"operation:index"`; `None` for a sparse or
    /// composite tensor, which has no single graph tensor.
    pub name: Option<String>,
    /// The `DataType` number (see [`super::dtype_name`]).
    pub dtype: u32,
    /// The dimensions (-1 for unknown), or `None` if the rank is unknown.
    pub shape: Option<Vec<i64>>,
}

/// The signatures of a serialized `MetaGraphDef`, by name.
pub fn signatures(meta_graph_def: &[u8]) -> Result<BTreeMap<String, Signature>, String> {
    let mut found = BTreeMap::new();
    for field in Fields(meta_graph_def) {
        if let (5, Value::Bytes(entry)) = field? {
            let (name, bytes) = map_entry(entry)?;
            found.insert(name, signature(bytes)?);
        }
    }
    Ok(found)
}

fn signature(bytes: &[u8]) -> Result<Signature, String> {
    let mut signature = Signature::default();
    for field in Fields(bytes) {
        match field? {
            (1, Value::Bytes(entry)) => {
                let (key, info) = map_entry(entry)?;
                signature.inputs.insert(key, tensor_info(info)?);
            }
            (2, Value::Bytes(entry)) => {
                let (key, info) = map_entry(entry)?;
                signature.outputs.insert(key, tensor_info(info)?);
            }
            (3, Value::Bytes(name)) => signature.method_name = text(name),
            _ => {}
        }
    }
    Ok(signature)
}

fn tensor_info(bytes: &[u8]) -> Result<TensorInfo, String> {
    let mut info = TensorInfo::default();
    for field in Fields(bytes) {
        match field? {
            (1, Value::Bytes(name)) => info.name = Some(text(name)),
            (2, Value::Varint(dtype)) => info.dtype = dtype as u32,
            (3, Value::Bytes(shape)) => info.shape = tensor_shape(shape)?,
            // A sparse or composite encoding replaces the name (a oneof).
            (4 | 5, Value::Bytes(_)) => info.name = None,
            _ => {}
        }
    }
    Ok(info)
}

fn tensor_shape(bytes: &[u8]) -> Result<Option<Vec<i64>>, String> {
    let mut dims = Vec::new();
    for field in Fields(bytes) {
        match field? {
            (2, Value::Bytes(dim)) => {
                let mut size = 0;
                for field in Fields(dim) {
                    if let (1, Value::Varint(value)) = field? {
                        // int64 is sent as its two's complement: -1 is 10 bytes.
                        size = value as i64;
                    }
                }
                dims.push(size);
            }
            (3, Value::Varint(unknown_rank)) if unknown_rank != 0 => return Ok(None),
            _ => {}
        }
    }
    Ok(Some(dims))
}

/// A map entry: its string key (field 1) and its value's bytes (field 2).
fn map_entry(bytes: &[u8]) -> Result<(String, &[u8]), String> {
    let (mut key, mut value) = (String::new(), &[][..]);
    for field in Fields(bytes) {
        match field? {
            (1, Value::Bytes(k)) => key = text(k),
            (2, Value::Bytes(v)) => value = v,
            _ => {}
        }
    }
    Ok((key, value))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The value of one field, by wire type.
#[derive(Debug, PartialEq, Eq)]
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// Iterates over the fields of a message; stops after the first error.
struct Fields<'a>(&'a [u8]);

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u64, Value<'a>), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let field = self.field();
        if field.is_err() {
            self.0 = &[];
        }
        Some(field)
    }
}

impl<'a> Fields<'a> {
    fn field(&mut self) -> Result<(u64, Value<'a>), String> {
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Fixed
            }
            2 => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| truncated())?;
                Value::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Value::Fixed
            }
            wire_type => {
                return Err(format!(
                    "malformed MetaGraphDef: wire type {wire_type} in field {}",
                    key >> 3
                ))
            }
        };
        Ok((key >> 3, value))
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for (i, &byte) in self.0.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                self.0 = &self.0[i + 1..];
                return Ok(value);
            }
        }
        Err(truncated())
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], String> {
        if len > self.0.len() {
            return Err(truncated());
        }
        let (taken, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(taken)
    }
}

fn truncated() -> String {
    "malformed MetaGraphDef: truncated field".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal protobuf writer, the oracle's side of the wire format.
    fn varint(mut value: u64, out: &mut Vec<u8>) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    fn bytes_field(field: u64, bytes: &[u8], out: &mut Vec<u8>) {
        varint(field << 3 | 2, out);
        varint(bytes.len() as u64, out);
        out.extend_from_slice(bytes);
    }

    fn varint_field(field: u64, value: u64, out: &mut Vec<u8>) {
        varint(field << 3, out);
        varint(value, out);
    }

    fn entry(key: &str, value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        bytes_field(1, key.as_bytes(), &mut out);
        bytes_field(2, value, &mut out);
        out
    }

    fn tensor_info_bytes(name: &str, dtype: u64, dims: Option<&[i64]>) -> Vec<u8> {
        let mut out = Vec::new();
        bytes_field(1, name.as_bytes(), &mut out);
        varint_field(2, dtype, &mut out);
        let mut shape = Vec::new();
        match dims {
            Some(dims) => {
                for &d in dims {
                    let mut dim = Vec::new();
                    varint_field(1, d as u64, &mut dim);
                    bytes_field(2, &dim, &mut shape);
                }
            }
            None => varint_field(3, 1, &mut shape),
        }
        bytes_field(3, &shape, &mut out);
        out
    }

    fn meta_graph_def() -> Vec<u8> {
        let mut signature = Vec::new();
        let input = tensor_info_bytes("serving_default_x:0", 7, Some(&[-1]));
        bytes_field(1, &entry("x", &input), &mut signature);
        let output = tensor_info_bytes("StatefulPartitionedCall:1", 1, Some(&[-1, 256]));
        bytes_field(2, &entry("hist", &output), &mut signature);
        let output = tensor_info_bytes("StatefulPartitionedCall:0", 9, None);
        bytes_field(2, &entry("ids", &output), &mut signature);
        bytes_field(3, b"tensorflow/serving/predict", &mut signature);

        let mut out = Vec::new();
        // Fields that are skipped: a graph (2), a fixed64 and a fixed32.
        bytes_field(2, b"\x0a\x03abc", &mut out);
        out.extend_from_slice(&[6 << 3 | 1, 1, 2, 3, 4, 5, 6, 7, 8]);
        out.extend_from_slice(&[6 << 3 | 5, 1, 2, 3, 4]);
        bytes_field(5, &entry("serving_default", &signature), &mut out);
        bytes_field(5, &entry("empty", &[]), &mut out);
        out
    }

    #[test]
    fn reads_signatures() {
        let found = signatures(&meta_graph_def()).unwrap();
        assert_eq!(
            found.keys().collect::<Vec<_>>(),
            ["empty", "serving_default"]
        );
        assert_eq!(found["empty"], Signature::default());
        let s = &found["serving_default"];
        assert_eq!(s.method_name, "tensorflow/serving/predict");
        assert_eq!(
            s.inputs["x"],
            TensorInfo {
                name: Some("serving_default_x:0".into()),
                dtype: 7,
                shape: Some(vec![-1]),
            }
        );
        assert_eq!(s.outputs["hist"].shape, Some(vec![-1, 256]));
        assert_eq!(s.outputs["hist"].dtype, 1);
        assert_eq!(s.outputs["ids"].shape, None);
        assert_eq!(s.outputs.keys().collect::<Vec<_>>(), ["hist", "ids"]);
    }

    #[test]
    fn sparse_tensor_has_no_name() {
        let mut info = tensor_info_bytes("a:0", 1, Some(&[]));
        bytes_field(4, b"", &mut info);
        assert_eq!(tensor_info(&info).unwrap().name, None);
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let bytes = meta_graph_def();
        for len in 0..bytes.len() {
            // Some prefixes end on a field boundary and parse; none panics.
            let _ = signatures(&bytes[..len]);
        }
        assert!(signatures(&bytes[..bytes.len() - 1]).is_err());
        assert!(signatures(&[0x80; 11]).is_err());
        assert!(signatures(&[5 << 3 | 2, 100]).is_err());
        assert!(signatures(&[3 << 3 | 3])
            .unwrap_err()
            .contains("wire type 3"));
    }

    #[test]
    fn empty_meta_graph_has_no_signatures() {
        assert!(signatures(&[]).unwrap().is_empty());
    }
}
