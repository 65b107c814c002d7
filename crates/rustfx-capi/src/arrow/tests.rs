//! The export read back by the import, for every registry example, and
//! documents read in place from hand-built Arrow arrays of each binary
//! layout (offsets, nulls, a sliced array, views inline and in buffers).

use super::export::{export, Exportable};
use super::import;
use super::{ArrowArray, ArrowSchema};
use rustfx::registry::EXTRACTORS;
use rustfx::spec::FeatureSpec;
use std::ffi::{c_void, CString};
use std::ptr;
use std::sync::Arc;

const DOCS: [&[u8]; 4] = [
    b"MZ\x90\x00 hello world C:\\x http://a.b HKEY_X",
    b"",
    b"aaaa bbbb aaaa \xff\xfe w\0i\0d\0e\0",
    b"Gr\xc3\xb6\xc3\x9fe caf\xc3\xa9",
];

#[test]
fn every_registry_example_exports_and_reads_back_bit_for_bit() {
    for entry in EXTRACTORS {
        for params in entry.examples {
            let text = format!(r#"{{"extractor": "{}", "params": {params}}}"#, entry.name);
            let spec = FeatureSpec::from_json(&text).unwrap();
            let batch = spec.build().unwrap().extract_batch(&DOCS).unwrap();
            let rows = Arc::new(Exportable::new(batch.clone(), &[], vec![]));
            let (schema, array) = export(&rows).unwrap();
            // The rows outlive the handle: the structs hold their share.
            drop(rows);
            // SAFETY: just exported; they describe each other.
            let back = unsafe { import::rows(&schema, &array, &spec.output()) }.expect(&text);
            assert!(back.same_bits(&batch), "{text}");
            assert_eq!(array.length, DOCS.len() as i64);
        }
    }
}

#[test]
fn a_null_row_is_exported_and_refused_as_a_row_to_store() {
    let spec = FeatureSpec::from_json(r#"{"extractor": "byte_histogram"}"#).unwrap();
    let batch = spec.build().unwrap().extract_batch(&DOCS).unwrap();
    let rows = Arc::new(Exportable::new(batch, &[1, 3], vec![]));
    let (schema, array) = export(&rows).unwrap();
    assert_eq!(array.null_count, 2);
    // SAFETY: just exported.
    let refused = unsafe { import::rows(&schema, &array, &spec.output()) }.unwrap_err();
    assert!(refused.to_string().contains("row 1 is null"), "{refused}");
}

/// An array over `buffers` (kept alive by the caller), with no release of
/// its own beyond a flag (the import only reads it).
fn binary_array(length: i64, offset: i64, buffers: &mut [*const c_void]) -> ArrowArray {
    /// Marks the struct released.
    ///
    /// # Safety
    /// `array` points to a live, writable struct.
    unsafe extern "C" fn release(array: *mut ArrowArray) {
        // SAFETY: called once by the owner.
        unsafe { (*array).release = None };
    }
    ArrowArray {
        length,
        null_count: -1,
        offset,
        n_buffers: buffers.len() as i64,
        n_children: 0,
        buffers: buffers.as_mut_ptr(),
        children: ptr::null_mut(),
        dictionary: ptr::null_mut(),
        release: Some(release),
        private_data: ptr::null_mut(),
    }
}

fn schema(format: &CString) -> ArrowSchema {
    /// Marks the struct released.
    ///
    /// # Safety
    /// `schema` points to a live, writable struct.
    unsafe extern "C" fn release(schema: *mut ArrowSchema) {
        // SAFETY: called once by the owner.
        unsafe { (*schema).release = None };
    }
    ArrowSchema {
        format: format.as_ptr(),
        release: Some(release),
        ..ArrowSchema::empty()
    }
}

fn read(format: &str, array: &ArrowArray) -> Result<Vec<Option<Vec<u8>>>, String> {
    let format = CString::new(format).unwrap();
    let mut spans = Vec::new();
    // SAFETY: the arrays the tests build describe their buffers.
    unsafe { import::documents(&schema(&format), array, &mut spans) }.map_err(|e| e.to_string())?;
    Ok(spans
        .into_iter()
        .map(|span| {
            // SAFETY: each span points into the test's buffers.
            span.map(|(data, len)| unsafe { std::slice::from_raw_parts(data, len) }.to_vec())
        })
        .collect())
}

#[test]
fn documents_are_read_in_place_from_each_binary_layout() {
    let data = b"onetwothree";
    let validity = [0b1011u8];
    let offsets32: [i32; 5] = [0, 3, 6, 6, 11];
    let offsets64: [i64; 5] = [0, 3, 6, 6, 11];
    let want = vec![
        Some(b"one".to_vec()),
        Some(b"two".to_vec()),
        None,
        Some(b"three".to_vec()),
    ];
    for (format, offsets) in [
        ("z", offsets32.as_ptr().cast::<c_void>()),
        ("u", offsets32.as_ptr().cast()),
        ("Z", offsets64.as_ptr().cast()),
        ("U", offsets64.as_ptr().cast()),
    ] {
        let mut buffers = [validity.as_ptr().cast(), offsets, data.as_ptr().cast()];
        let array = binary_array(4, 0, &mut buffers);
        assert_eq!(read(format, &array).unwrap(), want, "{format}");
        // A slice: elements 1 and 2 of the same buffers.
        let sliced = binary_array(2, 1, &mut buffers);
        assert_eq!(
            read(format, &sliced).unwrap(),
            want[1..3],
            "{format} sliced"
        );
    }
    // Offsets that go back are refused, not followed.
    let back: [i64; 3] = [0, 5, 2];
    let mut buffers = [ptr::null(), back.as_ptr().cast(), data.as_ptr().cast()];
    assert!(read("Z", &binary_array(2, 0, &mut buffers)).is_err());
    // Another type is refused with what is allowed.
    let refused = read("i", &binary_array(2, 0, &mut buffers)).unwrap_err();
    assert!(refused.contains("binary, large_binary, utf8"), "{refused}");
}

/// A 16-byte view of `bytes`: inline up to 12, else in buffer `index` at
/// `offset`.
fn view(bytes: &[u8], index: i32, offset: i32) -> [u8; 16] {
    let mut v = [0u8; 16];
    v[..4].copy_from_slice(&(bytes.len() as i32).to_ne_bytes());
    if bytes.len() <= 12 {
        v[4..4 + bytes.len()].copy_from_slice(bytes);
    } else {
        v[4..8].copy_from_slice(&bytes[..4]);
        v[8..12].copy_from_slice(&index.to_ne_bytes());
        v[12..16].copy_from_slice(&offset.to_ne_bytes());
    }
    v
}

#[test]
fn views_are_read_inline_and_from_their_buffers() {
    let long = b"a string longer than twelve bytes";
    let data: Vec<u8> = [&b"xx"[..], long].concat();
    let views = [view(b"short", 0, 0), view(long, 0, 2), view(b"", 0, 0)];
    let sizes = [data.len() as i64];
    let mut buffers = [
        ptr::null(),
        views.as_ptr().cast(),
        data.as_ptr().cast(),
        sizes.as_ptr().cast(),
    ];
    let got = read("vz", &binary_array(3, 0, &mut buffers)).unwrap();
    assert_eq!(
        got,
        [
            Some(b"short".to_vec()),
            Some(long.to_vec()),
            Some(Vec::new())
        ]
    );
    // A view past its buffer's size is refused.
    let past = [view(long, 0, 5)];
    let mut buffers = [
        ptr::null(),
        past.as_ptr().cast(),
        data.as_ptr().cast(),
        sizes.as_ptr().cast(),
    ];
    assert!(read("vu", &binary_array(1, 0, &mut buffers)).is_err());
    // A null sizes buffer is refused, not read.
    let views = [view(long, 0, 2)];
    let mut buffers = [
        ptr::null(),
        views.as_ptr().cast(),
        data.as_ptr().cast(),
        ptr::null(),
    ];
    let refused = read("vz", &binary_array(1, 0, &mut buffers)).unwrap_err();
    assert!(refused.contains("sizes"), "{refused}");
}
