//! A batch of rows out as Arrow C Data, over the core's own buffers.
//!
//! | layout  | Arrow type                                        |
//! |---------|---------------------------------------------------|
//! | dense   | `FixedSizeList<T>[width]`                         |
//! | ragged  | `LargeList<T>`; strings `LargeList<LargeBinary>`  |
//! | sparse  | `LargeList<Struct<index: int64, value: T>>`       |
//!
//! One element per document; a document that failed (its file could not be
//! read) is null. The buffers are the batch's own vectors: every exported
//! struct (and each child a consumer moves out) holds an `Arc` of the
//! batch, and the last release frees it. The offsets are the batch's
//! [`Offsets`](rustfx::output::Offsets), N+1 `i64` from 0: Arrow's large
//! lists and binaries take them as they are. Sparse indices are the
//! core's `u64`, below the width (at most `i64::MAX`), so the same bits as
//! `int64`.

use super::{ArrowArray, ArrowSchema, FLAG_NULLABLE};
use rustfx::output::{Batch, DType, Values};
use rustfx::{Error, ErrorKind, Result};
use std::ffi::{c_void, CString};
use std::ptr;
use std::sync::Arc;

/// What is exported: a batch, which of its rows are null (a validity
/// bitmap, Arrow's: bit `i` of byte `i / 8` set for a valid row) and the
/// schema's metadata.
pub struct Exportable {
    /// The rows.
    pub batch: Batch,
    /// The validity bitmap and the null count, when a row is null.
    pub validity: Option<(Vec<u8>, usize)>,
    /// Key-value pairs for the top-level schema.
    pub metadata: Vec<(String, String)>,
}

impl Exportable {
    /// `batch` with the rows `failed` (indices) null.
    pub fn new(batch: Batch, failed: &[usize], metadata: Vec<(String, String)>) -> Exportable {
        let rows = batch.rows();
        let validity = (!failed.is_empty()).then(|| {
            let mut bits = vec![0xffu8; rows.div_ceil(8)];
            for &i in failed {
                bits[i / 8] &= !(1 << (i % 8));
            }
            let nulls = (0..rows)
                .filter(|&i| bits[i / 8] & (1 << (i % 8)) == 0)
                .count();
            (bits, nulls)
        });
        Exportable {
            batch,
            validity,
            metadata,
        }
    }
}

/// A field of the schema.
struct Field {
    format: String,
    name: &'static str,
    nullable: bool,
    metadata: Option<Vec<u8>>,
    children: Vec<Field>,
}

/// An array of the export: its length, nulls, buffers (pointers into the
/// shared batch) and children.
struct Node {
    length: usize,
    null_count: usize,
    buffers: Vec<*const c_void>,
    children: Vec<Node>,
}

/// The schema and the array of `rows`, over its buffers. An `Internal`
/// error if the batch does not hold together (a bug in rustfx: nothing
/// is exported that a consumer would read out of bounds).
pub fn export(rows: &Arc<Exportable>) -> Result<(ArrowSchema, ArrowArray)> {
    let (mut field, node) = describe(rows)?;
    field.metadata = Some(encode_metadata(&rows.metadata));
    Ok((schema_of(field), array_of(node, rows)))
}

fn describe(rows: &Exportable) -> Result<(Field, Node)> {
    let batch = &rows.batch;
    let (validity, null_count) = match &rows.validity {
        Some((bits, nulls)) => (bits.as_ptr().cast::<c_void>(), *nulls),
        None => (ptr::null(), 0),
    };
    let count = batch.values().len();
    let (format, buffers, child) = match batch {
        Batch::Dense { rows: n, width, .. } => {
            if n.checked_mul(*width) != Some(count) {
                return Err(bug("dense values do not fill the rows"));
            }
            (format!("+w:{width}"), vec![validity], item(batch.values())?)
        }
        Batch::Ragged { offsets, .. } => {
            if offsets.last() != count {
                return Err(bug("row offsets do not end at the values"));
            }
            let buffers = vec![validity, offsets.as_slice().as_ptr().cast()];
            ("+L".to_string(), buffers, item(batch.values())?)
        }
        Batch::Sparse {
            indices, offsets, ..
        } => {
            if offsets.last() != count || indices.len() != count {
                return Err(bug("sparse indices, values and offsets disagree"));
            }
            let index = (
                leaf("l", "index"),
                Node {
                    length: count,
                    null_count: 0,
                    buffers: vec![ptr::null(), indices.as_ptr().cast()],
                    children: Vec::new(),
                },
            );
            let (mut value_field, value) = item(batch.values())?;
            value_field.name = "value";
            let entry = (
                Field {
                    format: "+s".into(),
                    name: "item",
                    nullable: true,
                    metadata: None,
                    children: vec![index.0, value_field],
                },
                Node {
                    length: count,
                    null_count: 0,
                    buffers: vec![ptr::null()],
                    children: vec![index.1, value],
                },
            );
            let buffers = vec![validity, offsets.as_slice().as_ptr().cast()];
            ("+L".to_string(), buffers, entry)
        }
    };
    let field = Field {
        format,
        name: "",
        nullable: true,
        metadata: None,
        children: vec![child.0],
    };
    let node = Node {
        length: batch.rows(),
        null_count,
        buffers,
        children: vec![child.1],
    };
    Ok((field, node))
}

/// The values as a list's child: numbers of the dtype, or strings.
fn item(values: &Values) -> Result<(Field, Node)> {
    if let Values::String(strings) = values {
        if strings.offsets.last() != strings.bytes.len() {
            return Err(bug("string offsets do not end at the bytes"));
        }
        let node = Node {
            length: strings.offsets.rows(),
            null_count: 0,
            buffers: vec![
                ptr::null(),
                strings.offsets.as_slice().as_ptr().cast(),
                strings.bytes.as_ptr().cast(),
            ],
            children: Vec::new(),
        };
        return Ok((leaf("Z", "item"), node));
    }
    let node = Node {
        length: values.len(),
        null_count: 0,
        buffers: vec![ptr::null(), values.as_bytes().as_ptr().cast()],
        children: Vec::new(),
    };
    Ok((leaf(format_of(values.dtype()), "item"), node))
}

/// Arrow's format string of a numeric dtype.
pub fn format_of(dtype: DType) -> &'static str {
    match dtype {
        DType::Float32 => "f",
        DType::Int64 => "l",
        DType::Int32 => "i",
        DType::Int16 => "s",
        DType::UInt16 => "S",
        DType::UInt8 => "C",
        DType::String => "Z",
    }
}

/// Children are nullable, as pyarrow's default fields (`pa.large_list(T)`)
/// are, so the exported types equal the ones pyarrow spells; they hold no
/// null.
fn leaf(format: &str, name: &'static str) -> Field {
    Field {
        format: format.into(),
        name,
        nullable: true,
        metadata: None,
        children: Vec::new(),
    }
}

fn bug(what: &str) -> Error {
    Error::new(ErrorKind::Internal, format!("{what} (a bug in rustfx)"))
}

/// The spec's metadata encoding: an `i32` count, then each key and value
/// as an `i32` length and its bytes, native-endian.
fn encode_metadata(pairs: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::new();
    let length = |out: &mut Vec<u8>, n: usize| {
        out.extend_from_slice(&i32::try_from(n).unwrap_or(i32::MAX).to_ne_bytes())
    };
    length(&mut out, pairs.len());
    for (key, value) in pairs {
        for text in [key, value] {
            length(&mut out, text.len());
            out.extend_from_slice(text.as_bytes());
        }
    }
    out
}

/// What a schema's `private_data` owns.
struct SchemaPrivate {
    format: CString,
    name: CString,
    metadata: Option<Vec<u8>>,
    children: Vec<*mut ArrowSchema>,
}

fn c_string(text: &str) -> CString {
    // Formats and names are ASCII literals: never a NUL inside.
    CString::new(text).unwrap_or_default()
}

fn schema_of(field: Field) -> ArrowSchema {
    let children = field
        .children
        .into_iter()
        .map(|child| Box::into_raw(Box::new(schema_of(child))))
        .collect();
    let mut private = Box::new(SchemaPrivate {
        format: c_string(&field.format),
        name: c_string(field.name),
        metadata: field.metadata,
        children,
    });
    ArrowSchema {
        format: private.format.as_ptr(),
        name: private.name.as_ptr(),
        metadata: private
            .metadata
            .as_ref()
            .map_or(ptr::null(), |m| m.as_ptr().cast()),
        flags: if field.nullable { FLAG_NULLABLE } else { 0 },
        n_children: private.children.len() as i64,
        children: private.children.as_mut_ptr(),
        dictionary: ptr::null_mut(),
        release: Some(release_schema),
        private_data: Box::into_raw(private).cast(),
    }
}

/// The schema's release callback: frees its strings and its children
/// (each released first unless a consumer moved it out).
///
/// # Safety
/// `schema` is null or a schema [`schema_of`] made, not yet freed.
unsafe extern "C" fn release_schema(schema: *mut ArrowSchema) {
    // SAFETY: the consumer passes a schema this module made, once.
    let Some(schema) = (unsafe { schema.as_mut() }) else {
        return;
    };
    if schema.release.is_none() {
        return;
    }
    // SAFETY: `private_data` is the box `schema_of` leaked.
    let private = unsafe { Box::from_raw(schema.private_data.cast::<SchemaPrivate>()) };
    for &child in &private.children {
        // SAFETY: each child is a box `schema_of` leaked; dropping it
        // releases it unless it was moved out.
        drop(unsafe { Box::from_raw(child) });
    }
    schema.release = None;
}

/// What an array's `private_data` owns: its buffer and child pointer
/// arrays, and a share of the batch the buffers point into.
struct ArrayPrivate {
    buffers: Vec<*const c_void>,
    children: Vec<*mut ArrowArray>,
    _rows: Arc<Exportable>,
}

fn array_of(node: Node, rows: &Arc<Exportable>) -> ArrowArray {
    let children = node
        .children
        .into_iter()
        .map(|child| Box::into_raw(Box::new(array_of(child, rows))))
        .collect();
    let mut private = Box::new(ArrayPrivate {
        buffers: node.buffers,
        children,
        _rows: Arc::clone(rows),
    });
    ArrowArray {
        length: node.length as i64,
        null_count: node.null_count as i64,
        offset: 0,
        n_buffers: private.buffers.len() as i64,
        n_children: private.children.len() as i64,
        buffers: private.buffers.as_mut_ptr(),
        children: private.children.as_mut_ptr(),
        dictionary: ptr::null_mut(),
        release: Some(release_array),
        private_data: Box::into_raw(private).cast(),
    }
}

/// The array's release callback, as [`release_schema`]'s.
///
/// # Safety
/// `array` is null or an array [`array_of`] made, not yet freed.
unsafe extern "C" fn release_array(array: *mut ArrowArray) {
    // SAFETY: the consumer passes an array this module made, once.
    let Some(array) = (unsafe { array.as_mut() }) else {
        return;
    };
    if array.release.is_none() {
        return;
    }
    // SAFETY: `private_data` is the box `array_of` leaked.
    let private = unsafe { Box::from_raw(array.private_data.cast::<ArrayPrivate>()) };
    for &child in &private.children {
        // SAFETY: each child is a box `array_of` leaked.
        drop(unsafe { Box::from_raw(child) });
    }
    array.release = None;
}
