//! Fuzz target `c_abi`: the core's C ABI (crates/rustfx-capi/src/lib.rs), as the Ray corpus
//! workers drive it through ctypes, with any spec bytes and documents.
//!
//! Input: the first byte picks how many documents (1-4) and how long; the
//! rest is the spec, as raw bytes (not UTF-8 checked: the ABI must refuse
//! them itself). The documents are cut from the spec bytes.
//!
//! Checks:
//! - no entry point panics or crashes; a refused spec is null and a
//!   message;
//! - an output's arrays agree with its kind: dense rows of n x width
//!   values; otherwise n + 1 row splits from 0, non-decreasing, ending at
//!   the number of values (strings: of string ends; sparse: indices as
//!   many as values);
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
use rustfx::extractor::Extractor;
use rustfx::output::{DType, Layout};
use rustfx_capi::*;
use std::ptr;

fn array(output: *const Output, which: u32) -> (*const u8, usize) {
    let (mut data, mut len) = (ptr::null(), 0);
    // SAFETY: `output` came from `rustfx_extract`; `data` and `len` are valid.
    assert!(unsafe { rustfx_output_array(output, which, &mut data, &mut len) });
    (data, len)
}

fn splits(output: *const Output) -> Vec<i64> {
    let (data, len) = array(output, ROW_SPLITS);
    if len == 0 {
        return Vec::new();
    }
    // SAFETY: the row splits are `len` int64 values at `data`.
    unsafe { std::slice::from_raw_parts(data.cast::<i64>(), len) }.to_vec()
}

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
    // SAFETY: written by rustfx_spec_query, NUL-terminated; freed once.
    let text = unsafe { std::ffi::CStr::from_ptr(taken) }
        .to_string_lossy()
        .into_owned();
    unsafe { rustfx_message_free(taken) };
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

/// `rustfx_explain` of `doc`, under small or default caps as `shape` says.
fn explain(extractor: *const Extractor, doc: &[u8], shape: u8) {
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
        assert!(!message.is_null(), "a refusal carries a message");
        // SAFETY: written by rustfx_explain.
        unsafe { rustfx_message_free(message) };
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
        assert!(!message.is_null(), "a refusal carries a message");
        // SAFETY: written by rustfx_extractor_new.
        unsafe { rustfx_message_free(message) };
        return;
    }
    let output_spec = rustfx::spec::load(std::str::from_utf8(spec).unwrap())
        .expect("the ABI accepted it")
        .1
        .output();
    if output_spec.width.is_some_and(|w| w > 1 << 16) {
        // SAFETY: from rustfx_extractor_new, freed once.
        unsafe { rustfx_extractor_free(extractor) };
        return;
    }
    let n = usize::from(shape % 4) + 1;
    let documents = rustfx_documents_new(n);
    for i in 0..n {
        let len = (usize::from(shape) * (i + 1)).min(spec.len());
        // SAFETY: `documents` from rustfx_documents_new; `len` bytes of `spec`.
        assert!(unsafe { rustfx_documents_set(documents, i, spec.as_ptr(), len) });
    }
    // Out of range and null: refused, nothing touched.
    // SAFETY: as above; the wrong index and the null handle are the test.
    unsafe {
        assert!(!rustfx_documents_set(documents, n, spec.as_ptr(), 0));
        assert!(!rustfx_documents_set(ptr::null_mut(), 0, ptr::null(), 0));
        assert!(rustfx_extract(extractor, ptr::null(), ptr::null_mut()).is_null());
    }
    // SAFETY: handles from their `_new`; no message wanted.
    let output = unsafe { rustfx_extract(extractor, documents, ptr::null_mut()) };
    assert!(
        !output.is_null(),
        "extraction of a built extractor does not fail"
    );
    let values = array(output, VALUES).1;
    let row_splits = splits(output);
    match output_spec.layout {
        Layout::Dense => {
            assert_eq!(Some(values), output_spec.width.map(|w| w * n));
            assert!(row_splits.is_empty());
        }
        kind => {
            assert_eq!(row_splits.len(), n + 1);
            assert_eq!(row_splits[0], 0);
            assert!(row_splits.windows(2).all(|w| w[0] <= w[1]));
            let rows_of = if kind == Layout::Sparse {
                assert_eq!(array(output, INDICES).1, values, "an index per value");
                values
            } else if output_spec.dtype == DType::String {
                array(output, STRING_ENDS).1
            } else {
                values
            };
            assert_eq!(*row_splits.last().unwrap() as usize, rows_of);
        }
    }
    explain(
        extractor,
        &spec[..(usize::from(shape) * 7).min(spec.len())],
        shape,
    );
    // SAFETY: each handle freed once.
    unsafe {
        rustfx_output_free(output);
        rustfx_documents_free(documents);
        rustfx_extractor_free(extractor);
    }
});
