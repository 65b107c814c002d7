//! Fuzz target `c_abi`: the core's C ABI (crates/rustfx-capi), as Python
//! drives it through ctypes, with any spec bytes and documents, and its
//! Arrow C Data both ways.
//!
//! Input: the first byte picks how many documents (1-4) and how long; the
//! rest is the spec, as raw bytes (not UTF-8 checked: the ABI must refuse
//! them itself). The documents are cut from the spec bytes. A hash of the
//! whole input picks how the documents also travel as Arrow (binary,
//! large_binary or binary_view; which are null; the array's offset; views
//! in one or two data buffers) and the order of the releases.
//!
//! Checks:
//! - no entry point panics or crashes; a refused spec is null and a
//!   message;
//! - documents given one by one (`rustfx_documents_set`, a null one empty
//!   with status INVALID_ARGUMENT) and read in place from a hand-built
//!   Arrow array (`rustfx_documents_from_arrow`: the array is moved in,
//!   released exactly once, when the documents are freed; a refused type
//!   releases it at once) have the same sizes, SHA-256, status codes and
//!   rows;
//! - the export (`rustfx_rows_export`) holds together: the format per
//!   layout ("+w:<width>" dense; "+L" ragged and sparse, with a "+s" child
//!   {index "l", value} for sparse, "Z" for strings), N+1 offsets from 0,
//!   non-decreasing, ending at the child's length, a dense child of
//!   rows x width values, the values bytes the batch's, a validity bit
//!   clear exactly for the failed documents, the metadata's spec and
//!   errors; each struct released once, a child moved out outliving its
//!   parent and the rows handle;
//! - the export imported back (`rustfx_rows_from_arrow`, with the
//!   metadata's spec and errors) is the same rows bit for bit, with the same
//!   row digests (`rustfx_rows_digests`), which `rustfx_row_digests` of the
//!   exported array also gives when no document failed (and refuses a null
//!   row otherwise);
//! - calls with null handles or pointers fail without crashing;
//! - `rustfx_explain` answers an explanation whose columns agree (as many
//!   offsets, lengths, values and text ends as indices, within the caps,
//!   spans inside the document) or refuses with a message; out-of-range
//!   caps are refused;
//! - `rustfx_spec_query` on the spec bytes answers a JSON array of strings
//!   or refuses with a message, and a canonical spec is its own canonical
//!   form.
//!
//! Extractors whose outputs are huge (a width above 2^16) are only built.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rustfx::output::{Batch, DType, Layout, OutputSpec, Values};
use rustfx_capi::arrow::{
    rustfx_arrow_array_free, rustfx_arrow_schema_free, ArrowArray, ArrowSchema, FLAG_NULLABLE,
};
use rustfx_capi::*;
use std::cell::Cell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;

/// INVALID_ARGUMENT, the status of a null document.
const INVALID_ARGUMENT: i32 = 3;

/// `rustfx_spec_query(what, spec)`: checks it against the core's
/// `spec::query` (accepts and refuses alike, the refusal the core's
/// message, the answer a JSON array) and returns whether it answered.
fn query(what: &str, spec: &[u8]) -> bool {
    let (mut answer, mut len, mut message) = (ptr::null_mut(), 0, ptr::null_mut());
    // SAFETY: both inputs are their length's readable bytes; the outs are writable.
    let ok = unsafe {
        rustfx_spec_query(
            what.as_ptr(),
            what.len(),
            spec.as_ptr(),
            spec.len(),
            &mut answer,
            &mut len,
            &mut message,
        )
    };
    let taken = if ok { answer } else { message };
    assert!(!taken.is_null(), "an answer, or a refusal with a message");
    let text = take_message(taken);
    let core = std::str::from_utf8(spec)
        .ok()
        .map(|spec| rustfx::spec::query(what, spec));
    match core {
        Some(Ok(_)) => {
            assert!(ok, "the core answers {what}");
            assert_eq!(text.len(), len);
            assert!(text.starts_with('[') && text.ends_with(']'), "a JSON array");
        }
        Some(Err(e)) => assert_eq!((ok, text), (false, e.to_string())),
        None => assert!(!ok, "non-UTF-8 is refused"),
    }
    ok
}

/// The text of a message an entry point wrote, freed.
fn take_message(message: *mut c_char) -> String {
    assert!(!message.is_null(), "a refusal carries a message");
    // SAFETY: written by an entry point, NUL-terminated.
    let text = unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: as above; freed once.
    unsafe { rustfx_message_free(message) };
    text
}

/// `rustfx_explain` of `doc`, under small or default caps as `shape` says.
fn explain(extractor: *const SpecExtractor, doc: &[u8], shape: u8) {
    let (max, text) = (i64::from(shape % 8) + 1, i64::from(shape % 5));
    let caps = (shape & 0x80 != 0).then_some((max, text));
    let (max_ptr, text_ptr) = match &caps {
        Some((m, t)) => (m as *const i64, t as *const i64),
        None => (ptr::null(), ptr::null()),
    };
    let mut message = ptr::null_mut();
    // SAFETY: `doc` is readable; the caps point to i64s or are null.
    let explanation = unsafe {
        rustfx_explain(
            extractor,
            doc.as_ptr(),
            doc.len(),
            max_ptr,
            text_ptr,
            shape & 0x40 != 0,
            &mut message,
        )
    };
    if explanation.is_null() {
        take_message(message);
        return;
    }
    let column = |which| {
        let (mut data, mut len) = (ptr::null(), 0);
        // SAFETY: a live explanation; `data` and `len` are writable.
        assert!(unsafe { rustfx_explanation_array(explanation, which, &mut data, &mut len) });
        (data, len)
    };
    let (_, n) = column(EXPLAIN_INDEX);
    for which in [
        EXPLAIN_OFFSET,
        EXPLAIN_LENGTH,
        EXPLAIN_VALUE,
        EXPLAIN_TEXT_ENDS,
    ] {
        assert_eq!(column(which).1, n, "column {which}");
    }
    let read = |which| -> Vec<u64> {
        let (data, len) = column(which);
        if len == 0 {
            return Vec::new();
        }
        // SAFETY: `len` u64 values at `data`, alive with the explanation.
        unsafe { std::slice::from_raw_parts(data.cast::<u64>(), len) }.to_vec()
    };
    for (offset, length) in read(EXPLAIN_OFFSET).into_iter().zip(read(EXPLAIN_LENGTH)) {
        assert!(offset
            .checked_add(length)
            .is_some_and(|end| end <= doc.len() as u64));
    }
    if let Some((max, text)) = caps {
        assert!(n as i64 <= max);
        let ends = read(EXPLAIN_TEXT_ENDS);
        let mut start = 0;
        for end in ends {
            assert!(end >= start && (end - start) as i64 <= text);
            start = end;
        }
    }
    // SAFETY: a null handle and an unknown column are refused; freed once.
    unsafe {
        let (mut data, mut len) = (ptr::null(), 0);
        assert!(!rustfx_explanation_array(
            explanation,
            99,
            &mut data,
            &mut len
        ));
        assert!(!rustfx_explanation_array(
            ptr::null(),
            EXPLAIN_INDEX,
            &mut data,
            &mut len
        ));
        let too_many = i64::MAX;
        let refused = rustfx_explain(
            extractor,
            doc.as_ptr(),
            doc.len(),
            &too_many,
            ptr::null(),
            false,
            ptr::null_mut(),
        );
        assert!(refused.is_null(), "a cap out of range is refused");
        rustfx_explanation_free(explanation);
    }
}

/// FNV-1a of the input: the Arrow shape's choices.
fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Bit `bit` of `h`.
fn bit(h: u64, bit: u32) -> bool {
    (h >> bit) & 1 == 1
}

/// The binary layouts the target builds.
#[derive(Clone, Copy, Debug)]
enum Format {
    Binary,
    LargeBinary,
    View,
}

/// A documents array built here: its buffers (owned until the end of the
/// input), the struct (moved into the ABI) and a release count.
struct Built {
    _validity: Vec<u8>,
    _offsets32: Vec<i32>,
    _offsets64: Vec<i64>,
    _views: Vec<[u8; 16]>,
    _data: Vec<Vec<u8>>,
    _sizes: Vec<i64>,
    buffers: Vec<*const c_void>,
    format: CString,
    length: i64,
    offset: i64,
    null_count: i64,
    released: Box<Cell<u32>>,
}

/// A released-flag release callback: counts the call in `private_data`.
///
/// # Safety
/// `array` is a live array that [`Built::array`] made.
unsafe extern "C" fn release_built(array: *mut ArrowArray) {
    // SAFETY: the caller's contract: a live array of `Built::array`.
    let array = unsafe { &mut *array };
    assert!(array.release.is_some(), "released twice");
    // SAFETY: `private_data` is the `Built`'s counter, alive until the end
    // of the input (the documents are freed first).
    let count = unsafe { &*array.private_data.cast::<Cell<u32>>() };
    count.set(count.get() + 1);
    array.release = None;
}

/// The schema's release callback: only marks it released.
///
/// # Safety
/// `schema` is a live schema.
unsafe extern "C" fn release_schema(schema: *mut ArrowSchema) {
    // SAFETY: the caller's contract.
    unsafe { (*schema).release = None };
}

impl Built {
    /// `docs` (null where `nulls` says) after `offset` padding elements,
    /// in `format`; `h` picks the rest.
    fn new(docs: &[&[u8]], nulls: &[bool], offset: usize, format: Format, h: u64) -> Built {
        let pad: &[u8] = b"padding element, never read";
        let elements: Vec<(Option<&[u8]>, bool)> = (0..offset)
            .map(|j| (Some(&pad[..(j * 5) % pad.len()]), bit(h, 20 + j as u32)))
            .chain(docs.iter().zip(nulls).map(|(&d, &null)| (Some(d), !null)))
            .collect();
        let any_null = elements.iter().any(|e| !e.1);
        let junk = bit(h, 14);
        let mut validity = vec![0u8; elements.len().div_ceil(8)];
        for (j, e) in elements.iter().enumerate() {
            if e.1 {
                validity[j / 8] |= 1 << (j % 8);
            }
        }
        if bit(h, 19) {
            // The bits past the array's end are anything.
            let last = validity.len() - 1;
            validity[last] |= (!0u8)
                .checked_shl((elements.len() - 8 * last) as u32)
                .unwrap_or(0);
        }
        let validity_ptr = if !any_null && bit(h, 11) {
            ptr::null()
        } else {
            validity.as_ptr().cast()
        };
        // A null element's bytes: nothing, or junk the reader must skip.
        let bytes_of = |e: &(Option<&[u8]>, bool)| -> Vec<u8> {
            match (e.1, junk) {
                (true, _) => e.0.unwrap_or_default().to_vec(),
                (false, true) => b"junk of a null".to_vec(),
                (false, false) => Vec::new(),
            }
        };
        let (mut offsets32, mut offsets64, mut views, mut data, mut sizes) =
            (vec![0i32], vec![0i64], Vec::new(), Vec::new(), Vec::new());
        let buffers;
        let format_text;
        match format {
            Format::Binary | Format::LargeBinary => {
                let mut all = Vec::new();
                for e in &elements {
                    all.extend_from_slice(&bytes_of(e));
                    offsets32.push(all.len() as i32);
                    offsets64.push(all.len() as i64);
                }
                data.push(all);
                let offsets: *const c_void = if matches!(format, Format::Binary) {
                    format_text = "z";
                    offsets32.as_ptr().cast()
                } else {
                    format_text = "Z";
                    offsets64.as_ptr().cast()
                };
                buffers = vec![validity_ptr, offsets, data[0].as_ptr().cast()];
            }
            Format::View => {
                format_text = "vz";
                let n_data = if bit(h, 13) { 2 } else { 1 };
                data = vec![b"prefix".to_vec(); n_data];
                for (j, e) in elements.iter().enumerate() {
                    let mut v = [0u8; 16];
                    if !e.1 && junk {
                        // A view of a null that points nowhere: never read.
                        v[..4].copy_from_slice(&(-7i32).to_ne_bytes());
                        v[8..12].copy_from_slice(&99i32.to_ne_bytes());
                    } else {
                        let bytes = bytes_of(e);
                        v[..4].copy_from_slice(&(bytes.len() as i32).to_ne_bytes());
                        if bytes.len() <= 12 {
                            v[4..4 + bytes.len()].copy_from_slice(&bytes);
                        } else {
                            let index = j % n_data;
                            v[4..8].copy_from_slice(&bytes[..4]);
                            v[8..12].copy_from_slice(&(index as i32).to_ne_bytes());
                            let at = data[index].len();
                            v[12..16].copy_from_slice(&(at as i32).to_ne_bytes());
                            data[index].extend_from_slice(&bytes);
                        }
                    }
                    views.push(v);
                }
                sizes = data.iter().map(|d| d.len() as i64).collect();
                let mut b = vec![validity_ptr, views.as_ptr().cast()];
                b.extend(data.iter().map(|d| d.as_ptr().cast::<c_void>()));
                b.push(sizes.as_ptr().cast());
                buffers = b;
            }
        }
        let null_count = if bit(h, 12) {
            -1
        } else {
            elements[offset..].iter().filter(|e| !e.1).count() as i64
        };
        Built {
            _validity: validity,
            _offsets32: offsets32,
            _offsets64: offsets64,
            _views: views,
            _data: data,
            _sizes: sizes,
            buffers,
            format: CString::new(format_text).unwrap(),
            length: docs.len() as i64,
            offset: offset as i64,
            null_count,
            released: Box::new(Cell::new(0)),
        }
    }

    /// The struct over the buffers, with [`release_built`].
    fn array(&mut self) -> ArrowArray {
        ArrowArray {
            length: self.length,
            null_count: self.null_count,
            offset: self.offset,
            n_buffers: self.buffers.len() as i64,
            n_children: 0,
            buffers: self.buffers.as_mut_ptr(),
            children: ptr::null_mut(),
            dictionary: ptr::null_mut(),
            release: Some(release_built),
            private_data: ptr::from_ref::<Cell<u32>>(&self.released).cast_mut().cast(),
        }
    }
}

/// A schema of `format`, marked released when dropped.
fn schema_of(format: &CStr) -> ArrowSchema {
    ArrowSchema {
        format: format.as_ptr(),
        release: Some(release_schema),
        ..ArrowSchema::empty()
    }
}

/// Arrow's format string of a dtype, restated.
fn format_of(dtype: DType) -> &'static str {
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

/// The schema's key-value metadata, decoded from the spec's encoding (an
/// i32 count, then each key and value as an i32 length and its bytes).
///
/// # Safety
/// `metadata` is null or the spec's encoding.
unsafe fn metadata(metadata: *const c_char) -> Vec<(String, String)> {
    if metadata.is_null() {
        return Vec::new();
    }
    let mut at = metadata.cast::<u8>();
    // SAFETY: the caller's contract, for each length and text below.
    let count = unsafe { next_len(&mut at) };
    let mut pairs = Vec::new();
    for _ in 0..count {
        // SAFETY: as above.
        let (key, value) = unsafe { (next_text(&mut at), next_text(&mut at)) };
        pairs.push((key, value));
    }
    pairs
}

/// The i32 length at `*at`, moving past it.
///
/// # Safety
/// The encoding has a length at `*at`.
unsafe fn next_len(at: &mut *const u8) -> usize {
    // SAFETY: the caller's contract.
    let value = unsafe { at.cast::<i32>().read_unaligned() };
    // SAFETY: as above.
    *at = unsafe { at.add(4) };
    usize::try_from(value).expect("a length is not negative")
}

/// The length-prefixed UTF-8 text at `*at`, moving past it.
///
/// # Safety
/// The encoding has a length and its bytes at `*at`.
unsafe fn next_text(at: &mut *const u8) -> String {
    // SAFETY: the caller's contract.
    let len = unsafe { next_len(at) };
    // SAFETY: `len` bytes follow.
    let bytes = unsafe { std::slice::from_raw_parts(*at, len) }.to_vec();
    // SAFETY: as above.
    *at = unsafe { at.add(len) };
    String::from_utf8(bytes).expect("metadata is UTF-8")
}

/// A C string of the export.
///
/// # Safety
/// `text` is a NUL-terminated string.
unsafe fn c_text(text: *const c_char) -> String {
    assert!(!text.is_null());
    // SAFETY: the caller's contract.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

/// `count` elements of `T` at buffer `i` of `array`.
///
/// # Safety
/// The buffer holds them.
unsafe fn buffer<T: Copy>(array: &ArrowArray, i: usize, count: usize) -> Vec<T> {
    assert!((i as i64) < array.n_buffers);
    // SAFETY: `i` is a buffer (asserted).
    let data = unsafe { *array.buffers.add(i) }.cast::<T>();
    if count == 0 {
        return Vec::new();
    }
    assert!(!data.is_null());
    // SAFETY: the caller's contract; Arrow's buffers may be unaligned.
    (0..count)
        .map(|k| unsafe { data.add(k).read_unaligned() })
        .collect()
}

/// Checks N+1 offsets from 0, non-decreasing; returns the last.
fn check_offsets(offsets: &[i64], n: usize) -> usize {
    assert_eq!(offsets.len(), n + 1);
    assert_eq!(offsets[0], 0);
    assert!(offsets.windows(2).all(|w| w[0] <= w[1]), "{offsets:?}");
    offsets[n] as usize
}

/// Child `i` of a schema and an array, checked to exist.
///
/// # Safety
/// Both are live exported structs.
unsafe fn child<'a>(
    schema: &'a ArrowSchema,
    array: &'a ArrowArray,
    i: usize,
) -> (&'a ArrowSchema, &'a ArrowArray) {
    assert!((i as i64) < schema.n_children && schema.n_children == array.n_children);
    // SAFETY: child `i` exists in both (asserted).
    unsafe { (&**schema.children.add(i), &**array.children.add(i)) }
}

/// A leaf of numbers: its format, name, shape, and its values' bytes
/// equal to `values`'.
///
/// # Safety
/// Both are live exported structs.
unsafe fn check_leaf(schema: &ArrowSchema, array: &ArrowArray, values: &Values, name: &str) {
    // SAFETY: the caller's contract.
    let (format, field) = unsafe { (c_text(schema.format), c_text(schema.name)) };
    assert_eq!(
        (format.as_str(), field.as_str()),
        (format_of(values.dtype()), name)
    );
    assert_eq!(
        (array.offset, array.null_count, array.n_children),
        (0, 0, 0)
    );
    assert_eq!(array.length as usize, values.len());
    if let Values::String(strings) = values {
        assert_eq!(array.n_buffers, 3);
        // SAFETY: a large binary leaf: N+1 i64 offsets, then the bytes.
        let offsets: Vec<i64> = unsafe { buffer(array, 1, values.len() + 1) };
        let total = check_offsets(&offsets, values.len());
        assert_eq!(offsets, strings.offsets.as_slice());
        // SAFETY: `total` bytes (the offsets' end).
        let bytes: Vec<u8> = unsafe { buffer(array, 2, total) };
        assert_eq!(bytes, strings.bytes);
    } else {
        assert_eq!(array.n_buffers, 2);
        let bytes = values.as_bytes();
        // SAFETY: `length` values of the dtype.
        let got: Vec<u8> = unsafe { buffer(array, 1, bytes.len()) };
        assert_eq!(got, bytes);
    }
    // SAFETY: buffer 0 exists (at least 2).
    assert!(unsafe { *array.buffers }.is_null(), "a leaf has no nulls");
}

/// Exports `rows` (of `output`, `failed` documents null), checks the
/// structs, imports them back and compares the digests.
fn check_export(rows: *mut Rows, output: &OutputSpec, failed: &[usize], keys: &[u8], h: u64) {
    // SAFETY: `rows` is a live handle.
    let batch = unsafe { &*rows }.batch().clone();
    let n = batch.rows();
    // SAFETY: a live handle.
    assert_eq!(unsafe { rustfx_rows_len(rows) }, n);
    let (mut schema, mut array) = (ptr::null_mut(), ptr::null_mut());
    let mut message = ptr::null_mut();
    // SAFETY: a live handle; the outs are writable.
    let exported = unsafe { rustfx_rows_export(rows, &mut schema, &mut array, &mut message) };
    assert!(exported, "the export of extracted rows never fails");
    // SAFETY: just exported, boxed.
    let (s, a) = unsafe { (&*schema, &*array) };
    assert!(s.release.is_some() && a.release.is_some());

    // The top level: one element per document, null where one failed.
    // SAFETY: an exported schema's strings and metadata.
    let (format, meta) = unsafe { (c_text(s.format), metadata(s.metadata)) };
    let want_format = match output.layout {
        Layout::Dense => format!("+w:{}", output.width.unwrap()),
        Layout::Ragged | Layout::Sparse => "+L".to_string(),
    };
    assert_eq!(format, want_format);
    assert_eq!(s.flags & FLAG_NULLABLE, FLAG_NULLABLE);
    assert_eq!((s.n_children, a.n_children), (1, 1));
    assert_eq!((a.length as usize, a.offset), (n, 0));
    assert_eq!(a.null_count as usize, failed.len());
    assert_eq!(
        a.n_buffers,
        if output.layout == Layout::Dense { 1 } else { 2 }
    );
    // SAFETY: buffer 0 exists.
    let validity = unsafe { *a.buffers };
    if failed.is_empty() {
        assert!(validity.is_null(), "no bitmap without a null");
    } else {
        // SAFETY: a bitmap of `n` bits.
        let bits: Vec<u8> = unsafe { buffer(a, 0, n.div_ceil(8)) };
        let nulls: Vec<usize> = (0..n)
            .filter(|&i| bits[i / 8] & (1 << (i % 8)) == 0)
            .collect();
        assert_eq!(
            nulls, failed,
            "a validity bit clear exactly for a failed document"
        );
    }
    let spec_json = meta
        .iter()
        .find(|(k, _)| k == SPEC_METADATA_KEY)
        .map(|(_, v)| v.clone())
        .expect("the spec travels with the rows");
    let errors = meta
        .iter()
        .find(|(k, _)| k == ERRORS_METADATA_KEY)
        .map(|(_, v)| v.clone());
    assert_eq!(errors.is_some(), !failed.is_empty());
    if let Some(errors) = &errors {
        let listed: Vec<(usize, i32, String)> = serde_json::from_str(errors).unwrap();
        assert!(listed.iter().map(|e| e.0).eq(failed.iter().copied()));
        assert!(listed.iter().all(|e| e.1 != 0));
    }

    // The child.
    // SAFETY: one child each (asserted above).
    let (cs, ca) = unsafe { child(s, a, 0) };
    match &batch {
        Batch::Dense { width, values, .. } => {
            assert_eq!(
                ca.length as usize,
                n * width,
                "a dense child of rows x width"
            );
            // SAFETY: live exported structs.
            unsafe { check_leaf(cs, ca, values, "item") };
        }
        Batch::Ragged { values, offsets } => {
            // SAFETY: N+1 i64 offsets.
            let got: Vec<i64> = unsafe { buffer(a, 1, n + 1) };
            assert_eq!(check_offsets(&got, n), ca.length as usize);
            assert_eq!(got, offsets.as_slice());
            if output.dtype == DType::String {
                // SAFETY: an exported string is a C string.
                assert_eq!(unsafe { c_text(cs.format) }, "Z");
            }
            // SAFETY: live exported structs.
            unsafe { check_leaf(cs, ca, values, "item") };
        }
        Batch::Sparse {
            width,
            indices,
            values,
            offsets,
        } => {
            // SAFETY: N+1 i64 offsets.
            let got: Vec<i64> = unsafe { buffer(a, 1, n + 1) };
            assert_eq!(check_offsets(&got, n), ca.length as usize);
            assert_eq!(got, offsets.as_slice());
            // SAFETY: exported strings.
            assert_eq!(unsafe { c_text(cs.format) }, "+s");
            assert_eq!((ca.n_buffers, ca.null_count, ca.offset), (1, 0, 0));
            assert_eq!(cs.n_children, 2);
            // SAFETY: two children each (asserted).
            let ((is, ia), (vs, va)) = unsafe { (child(cs, ca, 0), child(cs, ca, 1)) };
            let as_i64 = Values::Int64(indices.iter().map(|&i| i as i64).collect());
            // SAFETY: live exported structs.
            unsafe {
                check_leaf(is, ia, &as_i64, "index");
                check_leaf(vs, va, values, "value");
            }
            assert!(indices.iter().all(|&i| i < *width as u64));
        }
    }

    // Imported back, with the metadata's spec and errors.
    let errors = errors.unwrap_or_default();
    // SAFETY: both texts with their lengths; the structs are live.
    let back = unsafe {
        rustfx_rows_from_arrow(
            spec_json.as_ptr(),
            spec_json.len(),
            errors.as_ptr(),
            errors.len(),
            s,
            a,
            &mut message,
        )
    };
    if back.is_null() {
        panic!("the export is refused: {}", take_message(message));
    }
    // SAFETY: a live handle.
    let back_rows = unsafe { &*back };
    assert!(back_rows.batch().same_bits(&batch), "the same rows back");
    let digests = |rows: *const Rows| {
        let mut out = vec![0u8; 32 * n];
        // SAFETY: a live handle; 32 bytes per row at `keys` and `out`.
        assert!(unsafe {
            rustfx_rows_digests(rows, keys.as_ptr(), out.as_mut_ptr(), ptr::null_mut())
        });
        out
    };
    let want = digests(rows);
    assert_eq!(digests(back), want, "the same digests back");
    let mut out = vec![0u8; 32 * n];
    // SAFETY: the spec with its length; 32 bytes per row at `keys` and
    // `out`; the structs are live.
    let given = unsafe {
        rustfx_row_digests(
            spec_json.as_ptr(),
            spec_json.len(),
            keys.as_ptr(),
            s,
            a,
            out.as_mut_ptr(),
            &mut message,
        )
    };
    if failed.is_empty() {
        assert!(given, "rows with no null have digests");
        assert_eq!(out, want, "the digests of the array");
    } else {
        assert!(!given, "a null row has no digest");
        take_message(message);
    }
    // Wrong calls: refused, nothing touched.
    // SAFETY: null handles and structs are refused.
    unsafe {
        assert!(!rustfx_rows_export(
            ptr::null(),
            &mut schema,
            &mut array,
            ptr::null_mut()
        ));
        let (mut s2, mut a2) = (ptr::null_mut(), ptr::null_mut());
        assert!(!rustfx_rows_export(
            rows,
            ptr::null_mut(),
            &mut a2,
            ptr::null_mut()
        ));
        assert!(!rustfx_rows_export(
            rows,
            &mut s2,
            ptr::null_mut(),
            ptr::null_mut()
        ));
        assert!(s2.is_null() && a2.is_null());
        assert!(rustfx_rows_from_arrow(
            spec_json.as_ptr(),
            spec_json.len(),
            ptr::null(),
            0,
            ptr::null(),
            a,
            ptr::null_mut()
        )
        .is_null());
        assert!(!rustfx_rows_digests(
            ptr::null(),
            keys.as_ptr(),
            out.as_mut_ptr(),
            ptr::null_mut()
        ));
        assert_eq!(rustfx_rows_len(ptr::null()), 0);
        rustfx_rows_free(back);
    }

    // Releases: a child moved out outlives its parent (and, when `h`
    // says, the rows handle, freed by the caller after this).
    let moved = bit(h, 15).then(|| {
        // SAFETY: the array's child is a live boxed struct; moving it out
        // leaves a released one for the parent's release.
        let child = unsafe { ArrowArray::take(*a.children) };
        // SAFETY: as above, for the schema.
        let child_schema = unsafe { ptr::replace(*s.children, ArrowSchema::empty()) };
        (child_schema, child)
    });
    // SAFETY: from `rustfx_rows_export`, freed once.
    unsafe {
        rustfx_arrow_schema_free(schema);
        rustfx_arrow_array_free(array);
    }
    if let Some((child_schema, child)) = moved {
        if bit(h, 16) {
            // SAFETY: freed once; the child holds its share of the rows.
            unsafe { rustfx_rows_free(rows) };
        }
        let values = batch.values();
        match &batch {
            // SAFETY: the moved-out child is live.
            Batch::Dense { .. } | Batch::Ragged { .. } => unsafe {
                check_leaf(&child_schema, &child, values, "item")
            },
            Batch::Sparse { .. } => {
                assert_eq!(child.length as usize, values.len());
            }
        }
        if !bit(h, 16) {
            // SAFETY: freed once.
            unsafe { rustfx_rows_free(rows) };
        }
        // Dropping them calls their release.
    } else {
        // SAFETY: freed once.
        unsafe { rustfx_rows_free(rows) };
    }
}

/// The documents' sizes, SHA-256 hex digits and status codes.
fn describe(documents: *const Documents, n: usize) -> (Vec<i64>, Vec<u8>, Vec<i32>) {
    let (mut sizes, mut hex, mut codes) = (vec![0i64; n], vec![0u8; 64 * n], vec![0i32; n]);
    // SAFETY: a live handle of `n` documents; room for `n` of each.
    unsafe {
        assert_eq!(rustfx_documents_len(documents), n);
        assert!(rustfx_documents_digest(
            documents,
            sizes.as_mut_ptr(),
            hex.as_mut_ptr()
        ));
        assert!(rustfx_documents_codes(documents, codes.as_mut_ptr()));
    }
    (sizes, hex, codes)
}

fuzz_target!(|data: &[u8]| {
    let Some((&shape, spec)) = data.split_first() else {
        return;
    };
    if query("spec", spec) {
        let canonical = rustfx::spec::query("spec", std::str::from_utf8(spec).unwrap()).unwrap();
        assert!(
            query("spec", canonical[0].as_bytes()),
            "a canonical spec is accepted"
        );
    }
    query("feature_names", spec);
    let mut message = ptr::null_mut();
    // SAFETY: `spec` is `spec.len()` readable bytes; `message` is writable.
    let extractor = unsafe { rustfx_extractor_new(spec.as_ptr(), spec.len(), &mut message) };
    if extractor.is_null() {
        take_message(message);
        return;
    }
    let output = rustfx::spec::load(std::str::from_utf8(spec).unwrap())
        .expect("the ABI accepted it")
        .1
        .output();
    if output.width.is_some_and(|w| w > 1 << 16) {
        // SAFETY: from rustfx_extractor_new, freed once.
        unsafe { rustfx_extractor_free(extractor) };
        return;
    }
    let h = fnv(data);
    let n = usize::from(shape % 4) + 1;
    let docs: Vec<&[u8]> = (0..n)
        .map(|i| &spec[..(usize::from(shape) * (i + 1)).min(spec.len())])
        .collect();
    let nulls: Vec<bool> = (0..n).map(|i| bit(h, 10) && bit(h, 6 + i as u32)).collect();
    let failed: Vec<usize> = (0..n).filter(|&i| nulls[i]).collect();

    // The documents given one by one, a null one empty with a status.
    let given = rustfx_documents_new(n);
    for i in 0..n {
        let (doc, code, text) = if nulls[i] {
            (&[][..], INVALID_ARGUMENT, format!("document {i} is null"))
        } else {
            (docs[i], 0, String::new())
        };
        // SAFETY: `given` from rustfx_documents_new; each buffer with its length.
        assert!(unsafe {
            rustfx_documents_set(
                given,
                i,
                doc.as_ptr(),
                doc.len(),
                code,
                text.as_ptr(),
                text.len(),
            )
        });
    }
    // Out of range and null: refused, nothing touched.
    // SAFETY: as above; the wrong index and the null handle are the test.
    unsafe {
        assert!(!rustfx_documents_set(
            given,
            n,
            spec.as_ptr(),
            0,
            0,
            ptr::null(),
            0
        ));
        assert!(!rustfx_documents_set(
            ptr::null_mut(),
            0,
            ptr::null(),
            0,
            0,
            ptr::null(),
            0
        ));
        assert!(rustfx_extract(extractor, ptr::null(), ptr::null_mut()).is_null());
        assert!(rustfx_extract(ptr::null(), given, ptr::null_mut()).is_null());
    }

    // The same documents in place from Arrow.
    let format = match h % 3 {
        0 => Format::Binary,
        1 => Format::LargeBinary,
        _ => Format::View,
    };
    let offset = ((h >> 2) % 10) as usize;
    let mut built = Built::new(&docs, &nulls, offset, format, h);
    let schema = schema_of(&built.format);
    let mut array = built.array();
    // SAFETY: live structs that describe each other; the array is moved in.
    let imported = unsafe { rustfx_documents_from_arrow(&schema, &mut array, &mut message) };
    if imported.is_null() {
        panic!("{format:?} documents refused: {}", take_message(message));
    }
    assert!(array.release.is_none(), "the array is moved in");
    assert_eq!(
        built.released.get(),
        0,
        "released with the documents, not before"
    );
    assert_eq!(describe(given, n), describe(imported, n), "{format:?}");
    // Imported documents cannot be replaced.
    // SAFETY: a live handle; 0 bytes.
    assert!(!unsafe { rustfx_documents_set(imported, 0, ptr::null(), 0, 0, ptr::null(), 0) });
    // Another type is refused, and the array released at once.
    {
        let mut other = Built::new(&docs, &nulls, offset, format, h);
        let int32 = CString::new("i").unwrap();
        let mut array = other.array();
        // SAFETY: as above.
        let refused =
            unsafe { rustfx_documents_from_arrow(&schema_of(&int32), &mut array, &mut message) };
        assert!(refused.is_null());
        take_message(message);
        assert_eq!(other.released.get(), 1, "a refused array is released once");
        // SAFETY: null structs are refused.
        assert!(unsafe {
            rustfx_documents_from_arrow(ptr::null(), ptr::null_mut(), ptr::null_mut())
        }
        .is_null());
    }

    // SAFETY: handles from their constructors; no message wanted.
    let (rows_given, rows_imported) = unsafe {
        (
            rustfx_extract(extractor, given, ptr::null_mut()),
            rustfx_extract(extractor, imported, ptr::null_mut()),
        )
    };
    assert!(
        !rows_given.is_null() && !rows_imported.is_null(),
        "extraction of a built extractor does not fail"
    );
    // SAFETY: live handles.
    let (a, b) = unsafe { (&*rows_given, &*rows_imported) };
    assert!(a.batch().same_bits(b.batch()), "the same rows from either");
    let mut keys = vec![0u8; 32 * n];
    // SAFETY: a live handle; room for 32 bytes per document.
    assert!(unsafe { rustfx_documents_content_keys(imported, keys.as_mut_ptr()) });
    // SAFETY: from rustfx_extract, freed once.
    unsafe { rustfx_rows_free(rows_given) };
    check_export(rows_imported, &output, &failed, &keys, h);

    explain(
        extractor,
        &spec[..(usize::from(shape) * 7).min(spec.len())],
        shape,
    );
    // SAFETY: each handle freed once.
    unsafe {
        rustfx_documents_free(given);
        rustfx_documents_free(imported);
        rustfx_extractor_free(extractor);
    }
    assert_eq!(built.released.get(), 1, "released once, with the documents");
    drop(schema);
});
