//! The core's C ABI: Python's one channel into Rust for everything that is
//! not a TF op (`python/rustfx_core`, through ctypes): the registry, spec
//! parsing and validation, feature names, extraction with its rows
//! exported as Arrow C Data (`rows.rs`, `arrow/`), documents read from
//! files or in place from Arrow (`documents.rs`), explanations
//! (`explain.rs`), the feature cache (`cache.rs`) and the Ray corpus
//! workers, which then need neither TensorFlow's import (about 5 s per
//! worker) nor its memory. The same registry, reader and SHA-256 as the
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
// Each `unsafe` block says why it is sound, and each `unsafe fn` says what
// its caller must ensure (`# Safety`); clippy checks both (clippy.toml:
// private functions too).
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

use rustfx::error::catch_panic;
use rustfx::extractor::Extractor;
use rustfx::spec::FeatureSpec;
use rustfx::{Error, ErrorKind, Result};
use std::ffi::{c_char, CString};
use std::ptr;

pub mod arrow;
mod cache;
mod documents;
mod explain;
mod rows;
pub use cache::*;
pub use documents::*;
pub use explain::*;
pub use rows::*;

/// The layout of this ABI; `_abi.py` refuses a library of another one.
/// 3: explanations; 4: the feature cache; 6: BLAKE3 content keys, flush;
/// 7: row digests; 8: rows as Arrow C Data (`rustfx_rows_export`),
/// documents from Arrow, one offsets type.
pub const ABI_VERSION: u32 = 8;

/// [`ABI_VERSION`].
#[no_mangle]
pub extern "C" fn rustfx_abi_version() -> u32 {
    ABI_VERSION
}

/// A FeatureSpec's extractor, and the spec (its JSON travels with every
/// export of the rows).
pub struct SpecExtractor {
    spec: FeatureSpec,
    extractor: Extractor,
}

/// True, or false and the message.
fn done(outcome: Result<()>, message: *mut *mut c_char) -> bool {
    match outcome {
        Ok(()) => true,
        Err(e) => {
            report(&e, message);
            false
        }
    }
}

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
///
/// # Safety
/// Unless `len` is 0, `data` is null or points to `len` readable bytes
/// that stay alive and unchanged for `'a`.
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
///
/// # Safety
/// As [`bytes`].
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
        // SAFETY: the caller passes `query_len` readable bytes at `query`.
        let query = unsafe { text(query, query_len, "a spec query") }?;
        // SAFETY: the caller passes `spec_len` readable bytes at `spec`.
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
/// Freed with [`rustfx_extractor_free`].
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_extractor_new(
    spec: *const u8,
    spec_len: usize,
    message: *mut *mut c_char,
) -> *mut SpecExtractor {
    let built = catch_panic("rustfx_extractor_new", || {
        // SAFETY: the caller passes `spec_len` readable bytes.
        let text = unsafe { bytes(spec, spec_len) }?;
        let text = std::str::from_utf8(text)
            .map_err(|_| Error::invalid_argument("a feature spec must be UTF-8 JSON"))?;
        rustfx::spec::load(text).map(|(spec, extractor)| SpecExtractor { spec, extractor })
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
pub unsafe extern "C" fn rustfx_extractor_free(extractor: *mut SpecExtractor) {
    if !extractor.is_null() {
        // SAFETY: `extractor` came from `rustfx_extractor_new`.
        drop(unsafe { Box::from_raw(extractor) });
    }
}

/// The rows of every document by `extractor`, as a [`Rows`] handle
/// (exported by [`rustfx_rows_export`], freed by [`rustfx_rows_free`]); a
/// document that failed (its read, or a null in Arrow) has an empty
/// document's row, null in the export. Null and a message on failure.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_extract(
    extractor: *const SpecExtractor,
    documents: *const Documents,
    message: *mut *mut c_char,
) -> *mut Rows {
    let outcome = catch_panic("rustfx_extract", || {
        // SAFETY: a non-null `extractor` came from `rustfx_extractor_new`.
        let handle = unsafe { extractor.as_ref() }
            .ok_or_else(|| Error::invalid_argument("null extractor"))?;
        // SAFETY: a non-null `documents` came from a `rustfx_documents_*`
        // constructor.
        let documents = unsafe { documents::documents_ref(documents) }?;
        let batch = handle.extractor.extract_batch(&documents.slices())?;
        Ok(Rows::new(handle.spec.clone(), batch, &documents.failures()))
    });
    hand_rows(outcome, message)
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

#[cfg(test)]
mod tests;
