//! The core's C ABI: Python's one channel into Rust for everything that is
//! not a TF op (`python/rustfx_core`, through ctypes): the registry, spec
//! parsing and validation, feature names, numpy extraction, explanations
//! (`explain.rs`) and the Ray corpus workers, which then need neither TensorFlow's import (about 5 s
//! per worker) nor its memory. The same registry, reader and SHA-256 as the
//! ops, so the same bytes give the same rows (tests/python/test_corpus.py
//! compares them with the ops). Spec queries work while a tf.function is
//! traced: no op runs.
//!
//! This crate is its own library (`make build` copies it to
//! `python/rustfx_core/_rustfx_core.so`): the op library and the core carry
//! none of its `unsafe` code, which is here because a C ABI takes raw
//! pointers; each block has a SAFETY comment.
//!
//! Handles are boxes that the caller frees with the matching `_free`, once,
//! and uses from one thread at a time; every buffer is given with its
//! length in elements. Those are the callers' obligations (the `unsafe` of
//! these functions).
//! Every entry point catches panics (no panic crosses the boundary) and
//! checks its pointers for null; a failure returns null (or a negative
//! count) and, where the caller passed room for it, a message that it
//! frees with [`rustfx_message_free`].

#![deny(missing_docs)]

use rustfx::error::catch_panic;
use rustfx::extractor::Extractor;
use rustfx::output::{Batch, Values};
use rustfx::read::{check_max_bytes, read_file};
use rustfx::sha256::sha256_hex;
use rustfx::{Error, ErrorKind, Result};
use std::ffi::{c_char, CString};
use std::ptr;

mod cache;
mod explain;
pub use cache::*;
pub use explain::*;

/// The layout of this ABI; `_core.py` refuses a library of another one.
/// 3: explanations (`rustfx_explain` and its accessors); 4: the feature
/// cache (`rustfx_cache_*`); 6: BLAKE3 content keys, flush; 7: row digests
/// (`rustfx_row_digests`).
pub const ABI_VERSION: u32 = 7;

/// [`ABI_VERSION`].
#[no_mangle]
pub extern "C" fn rustfx_abi_version() -> u32 {
    ABI_VERSION
}

/// The documents of a batch: contents (read by the core, or given by the
/// caller), and the status of each read.
pub struct Documents {
    contents: Vec<Vec<u8>>,
    codes: Vec<i32>,
    messages: Vec<String>,
}

/// One extractor's output for a batch of documents, by its kind: dense
/// rows end to end in `values`; ragged ids in `values` with `row_splits`;
/// sparse rows as `indices` and `values` with `row_splits`; ragged strings
/// as their bytes end to end in `values`, `string_ends`, and `row_splits`
/// counting strings.
#[derive(Default)]
pub struct Output {
    values: Values,
    row_splits: Vec<i64>,
    indices: Vec<i64>,
    string_ends: Vec<i64>,
}

/// [`rustfx_output_array`]'s `which`: the values (of the output's dtype;
/// bytes for strings).
pub const VALUES: u32 = 0;
/// ... the row splits (int64, one more than the documents; not for dense).
pub const ROW_SPLITS: u32 = 1;
/// ... the sparse values' column indices (int64).
pub const INDICES: u32 = 2;
/// ... where each string ends in the bytes (int64).
pub const STRING_ENDS: u32 = 3;

/// A message for the caller, or nothing if it gave no room for one.
fn report(error: &Error, message: *mut *mut c_char) {
    if message.is_null() {
        return;
    }
    let text = CString::new(error.to_string().replace('\0', "\\0")).unwrap_or_default();
    // SAFETY: `message` is non-null and, by the contract of every entry
    // point, points to a writable pointer.
    unsafe { *message = text.into_raw() };
}

/// `len` bytes at `data` (null allowed when `len` is 0).
unsafe fn bytes<'a>(data: *const u8, len: usize) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if data.is_null() {
        return Err(Error::invalid_argument("a null pointer with a length"));
    }
    // SAFETY: the caller passes `len` readable bytes at `data`.
    Ok(unsafe { std::slice::from_raw_parts(data, len) })
}

/// Frees a message (or a [`rustfx_spec_query`] answer) written by an
/// entry point.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_message_free(message: *mut c_char) {
    if !message.is_null() {
        // SAFETY: `message` came from `CString::into_raw` in `report` or
        // `rustfx_spec_query`.
        drop(unsafe { CString::from_raw(message) });
    }
}

/// `len` bytes at `data` as UTF-8; `what` names them in the refusal.
unsafe fn text<'a>(data: *const u8, len: usize, what: &str) -> Result<&'a str> {
    // SAFETY: the caller passes `len` readable bytes at `data`.
    let raw = unsafe { bytes(data, len) }?;
    std::str::from_utf8(raw).map_err(|_| Error::invalid_argument(format!("{what} must be UTF-8")))
}

/// The core's answer to a spec query (`rustfx::spec::query`): `query` is
/// "registry" (the registry as JSON), "spec" (the canonical JSON of
/// `spec`), "feature_names" (the name of each value of `spec`'s rows) or
/// "constants" (the default `max_bytes` and the status codes, as JSON);
/// `query_len` and `spec_len` bytes of UTF-8. On success, true and
/// `*answer` a NUL-terminated JSON array of the answer's strings,
/// `*answer_len` bytes before the NUL, freed with [`rustfx_message_free`];
/// on refusal, false, nothing in `*answer`, and the core's message.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_spec_query(
    query: *const u8,
    query_len: usize,
    spec: *const u8,
    spec_len: usize,
    answer: *mut *mut c_char,
    answer_len: *mut usize,
    message: *mut *mut c_char,
) -> bool {
    let outcome = catch_panic("rustfx_spec_query", || {
        if answer.is_null() || answer_len.is_null() {
            return Err(Error::invalid_argument("no room for the answer"));
        }
        // SAFETY: the caller passes `query_len` and `spec_len` readable bytes.
        let query = unsafe { text(query, query_len, "a spec query") }?;
        let spec = unsafe { text(spec, spec_len, "a feature spec") }?;
        let lines = rustfx::spec::query(query, spec)?;
        // JSON escapes every control character, so no NUL is inside.
        let json = serde_json::to_string(&lines)
            .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
        let len = json.len();
        let json =
            CString::new(json).map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
        Ok((json, len))
    });
    match outcome {
        Ok((json, len)) => {
            // SAFETY: both are non-null (checked above) and writable.
            unsafe {
                *answer = json.into_raw();
                *answer_len = len;
            }
            true
        }
        Err(e) => {
            report(&e, message);
            false
        }
    }
}

/// Builds the extractor of a FeatureSpec (`spec_len` bytes of JSON), as
/// `FeatureSpec::from_json` checks it: null and a message on a bad spec.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_extractor_new(
    spec: *const u8,
    spec_len: usize,
    message: *mut *mut c_char,
) -> *mut Extractor {
    let built = catch_panic("rustfx_extractor_new", || {
        // SAFETY: the caller passes `spec_len` readable bytes.
        let text = unsafe { bytes(spec, spec_len) }?;
        let text = std::str::from_utf8(text)
            .map_err(|_| Error::invalid_argument("a feature spec must be UTF-8 JSON"))?;
        rustfx::spec::load(text).map(|(_, extractor)| extractor)
    });
    match built {
        Ok(extractor) => Box::into_raw(Box::new(extractor)),
        Err(e) => {
            report(&e, message);
            ptr::null_mut()
        }
    }
}

/// Frees an extractor.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_extractor_free(extractor: *mut Extractor) {
    if !extractor.is_null() {
        // SAFETY: `extractor` came from `rustfx_extractor_new`.
        drop(unsafe { Box::from_raw(extractor) });
    }
}

/// `n` empty documents, each with status OK.
#[no_mangle]
pub extern "C" fn rustfx_documents_new(n: usize) -> *mut Documents {
    match catch_panic("rustfx_documents_new", || {
        Ok(Documents {
            contents: vec![Vec::new(); n],
            codes: vec![0; n],
            messages: vec![String::new(); n],
        })
    }) {
        Ok(documents) => Box::into_raw(Box::new(documents)),
        Err(_) => ptr::null_mut(),
    }
}

/// Frees documents.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_free(documents: *mut Documents) {
    if !documents.is_null() {
        // SAFETY: `documents` came from `rustfx_documents_new`.
        drop(unsafe { Box::from_raw(documents) });
    }
}

/// `documents` as a mutable reference, and `i` checked against it.
unsafe fn document<'a>(documents: *mut Documents, i: usize) -> Result<&'a mut Documents> {
    // SAFETY: a non-null `documents` came from `rustfx_documents_new` and
    // the caller does not use it from two threads at once.
    let documents =
        unsafe { documents.as_mut() }.ok_or_else(|| Error::invalid_argument("null documents"))?;
    if i >= documents.contents.len() {
        return Err(Error::invalid_argument(format!(
            "document {i} of {}",
            documents.contents.len()
        )));
    }
    Ok(documents)
}

/// Reads document `i` from the file at `path` (`path_len` bytes), at most
/// `max_bytes` of it, by `read_files`' rules. Returns its status code (0,
/// or a TensorFlow code with the message kept for
/// [`rustfx_documents_message`]; the contents are then empty), or -1 if
/// the call itself was wrong (null documents, `i` out of range, a bad
/// `max_bytes`), with nothing read.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_read(
    documents: *mut Documents,
    i: usize,
    path: *const u8,
    path_len: usize,
    max_bytes: i64,
) -> i32 {
    let outcome = catch_panic("rustfx_documents_read", || {
        // SAFETY: see `document` and `bytes`.
        let documents = unsafe { document(documents, i) }?;
        let path = unsafe { bytes(path, path_len) }?;
        let max_bytes = check_max_bytes(max_bytes)?;
        let (contents, code, message) = match read_file(path, max_bytes) {
            Ok(contents) => (contents, 0, String::new()),
            Err(e) => (Vec::new(), e.kind().status_code(), e.to_string()),
        };
        documents.contents[i] = contents;
        documents.codes[i] = code;
        documents.messages[i] = message;
        Ok(code)
    });
    outcome.unwrap_or(-1)
}

/// Sets document `i`'s contents (`len` bytes at `data`, copied), its
/// status OK. Returns false if the call was wrong.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_set(
    documents: *mut Documents,
    i: usize,
    data: *const u8,
    len: usize,
) -> bool {
    catch_panic("rustfx_documents_set", || {
        // SAFETY: see `document` and `bytes`.
        let documents = unsafe { document(documents, i) }?;
        documents.contents[i] = unsafe { bytes(data, len) }?.to_vec();
        documents.codes[i] = 0;
        documents.messages[i].clear();
        Ok(())
    })
    .is_ok()
}

/// Document `i`'s status message ("" if it was read): `*len` bytes of
/// UTF-8 at `*data`, valid until the documents change or are freed.
/// Returns false if the call was wrong.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_message(
    documents: *mut Documents,
    i: usize,
    data: *mut *const u8,
    len: *mut usize,
) -> bool {
    catch_panic("rustfx_documents_message", || {
        // SAFETY: see `document` and `hand_out`.
        let documents = unsafe { document(documents, i) }?;
        let message = documents.messages[i].as_bytes();
        Ok(unsafe { hand_out(data, len, message.as_ptr(), message.len()) })
    })
    .unwrap_or(false)
}

/// Writes each document's size (bytes held) to `sizes` (room for one per
/// document) and, if `sha256_hex` is not null, its SHA-256 as 64 lowercase
/// hex digits, end to end (room for 64 per document). Returns false if
/// the call was wrong.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_digest(
    documents: *const Documents,
    sizes: *mut i64,
    sha256_hex_out: *mut u8,
) -> bool {
    catch_panic("rustfx_documents_digest", || {
        // SAFETY: a non-null `documents` came from `rustfx_documents_new`.
        let documents = unsafe { documents.as_ref() }
            .ok_or_else(|| Error::invalid_argument("null documents"))?;
        let n = documents.contents.len();
        if sizes.is_null() && n > 0 {
            return Err(Error::invalid_argument("null sizes"));
        }
        for (i, contents) in documents.contents.iter().enumerate() {
            // SAFETY: the caller gave room for `n` sizes and, if not null,
            // `64 * n` digits.
            unsafe { *sizes.add(i) = contents.len() as i64 };
            if !sha256_hex_out.is_null() {
                let hex = sha256_hex(contents);
                unsafe {
                    ptr::copy_nonoverlapping(hex.as_ptr(), sha256_hex_out.add(64 * i), 64);
                }
            }
        }
        Ok(())
    })
    .is_ok()
}

/// Writes each document's feature-cache content key (its BLAKE3,
/// `rustfx_cache::DocKey::of_content`) to `keys`, 32 bytes each, end to
/// end (room for 32 per document). Returns false if the call was wrong.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_content_keys(
    documents: *const Documents,
    keys: *mut u8,
) -> bool {
    catch_panic("rustfx_documents_content_keys", || {
        // SAFETY: a non-null `documents` came from `rustfx_documents_new`.
        let documents = unsafe { documents.as_ref() }
            .ok_or_else(|| Error::invalid_argument("null documents"))?;
        if keys.is_null() && !documents.contents.is_empty() {
            return Err(Error::invalid_argument("null keys"));
        }
        for (i, contents) in documents.contents.iter().enumerate() {
            let key = rustfx_cache::DocKey::of_content(contents);
            // SAFETY: the caller gave room for 32 bytes per document.
            unsafe { ptr::copy_nonoverlapping(key.0.as_ptr(), keys.add(32 * i), 32) };
        }
        Ok(())
    })
    .is_ok()
}

/// The rows of every document by `extractor` (see [`Output`]); null and a
/// message on failure.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_extract(
    extractor: *const Extractor,
    documents: *const Documents,
    message: *mut *mut c_char,
) -> *mut Output {
    let outcome = catch_panic("rustfx_extract", || {
        // SAFETY: non-null handles came from their `_new`.
        let extractor = unsafe { extractor.as_ref() }
            .ok_or_else(|| Error::invalid_argument("null extractor"))?;
        let documents = unsafe { documents.as_ref() }
            .ok_or_else(|| Error::invalid_argument("null documents"))?;
        extract(extractor, documents)
    });
    match outcome {
        Ok(output) => Box::into_raw(Box::new(output)),
        Err(e) => {
            report(&e, message);
            ptr::null_mut()
        }
    }
}

fn extract(extractor: &Extractor, documents: &Documents) -> Result<Output> {
    let docs: Vec<&[u8]> = documents.contents.iter().map(Vec::as_slice).collect();
    Ok(output_of(extractor.extract_batch(&docs)?))
}

/// The C ABI's form of a batch: dense rows as values only; ragged and
/// sparse rows with int64 row splits from 0, as `tf.RaggedTensor` and
/// numpy take them.
fn output_of(batch: Batch) -> Output {
    let splits = |row_ends: Vec<u64>| -> Vec<i64> {
        std::iter::once(0)
            .chain(row_ends.into_iter().map(|end| end as i64))
            .collect()
    };
    let (values, row_splits, indices) = match batch {
        Batch::Dense { values, .. } => (values, Vec::new(), Vec::new()),
        Batch::Ragged { values, row_ends } => (values, splits(row_ends), Vec::new()),
        Batch::Sparse {
            indices,
            values,
            row_ends,
            ..
        } => (
            values,
            splits(row_ends),
            indices.into_iter().map(|i| i as i64).collect(),
        ),
    };
    let string_ends = match &values {
        Values::String(strings) => strings.ends.iter().map(|&end| end as i64).collect(),
        _ => Vec::new(),
    };
    Output {
        values,
        row_splits,
        indices,
        string_ends,
    }
}

/// Hands `count` elements at `address` to the caller's `data` and `len`;
/// false (nothing written) if either is null.
///
/// # Safety
/// `data` and `len`, when not null, are writable.
unsafe fn hand_out(
    data: *mut *const u8,
    len: *mut usize,
    address: *const u8,
    count: usize,
) -> bool {
    if data.is_null() || len.is_null() {
        return false;
    }
    // SAFETY: both are non-null and writable (the caller's contract).
    unsafe {
        *data = address;
        *len = count;
    }
    true
}

/// One array of `output` (`which`: 0 values, 1 row splits, 2 sparse
/// indices, 3 string ends): its address and length in elements (values:
/// of the output's dtype, bytes for strings), valid until the output is
/// freed; an array the kind does not have is empty. Returns false if the
/// call was wrong.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_output_array(
    output: *const Output,
    which: u32,
    data: *mut *const u8,
    len: *mut usize,
) -> bool {
    // SAFETY: a non-null `output` came from `rustfx_extract`.
    let Some(output) = (unsafe { output.as_ref() }) else {
        return false;
    };
    let (address, count) = match which {
        // Values of the output's dtype (strings: their bytes end to end),
        // counted in elements.
        VALUES => {
            let bytes = output.values.as_bytes();
            let size = output.values.dtype().size().unwrap_or(1);
            (bytes.as_ptr(), bytes.len() / size)
        }
        ROW_SPLITS => (
            output.row_splits.as_ptr().cast::<u8>(),
            output.row_splits.len(),
        ),
        INDICES => (output.indices.as_ptr().cast::<u8>(), output.indices.len()),
        STRING_ENDS => (
            output.string_ends.as_ptr().cast::<u8>(),
            output.string_ends.len(),
        ),
        _ => return false,
    };
    // SAFETY: see `hand_out`.
    unsafe { hand_out(data, len, address, count) }
}

/// Frees an output.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_output_free(output: *mut Output) {
    if !output.is_null() {
        // SAFETY: `output` came from `rustfx_extract`.
        drop(unsafe { Box::from_raw(output) });
    }
}

#[cfg(test)]
mod tests;
