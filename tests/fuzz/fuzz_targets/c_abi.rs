//! Fuzz target `c_abi`: the core's C ABI (src/c_abi.rs), as the Ray corpus
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
//! - calls with null handles or pointers fail without crashing.
//!
//! Extractors whose outputs are huge (a width above 2^16) are only built.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rustfx::c_abi::*;
use rustfx::extractor::{DType, OutputKind};
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

fuzz_target!(|data: &[u8]| {
    let Some((&shape, spec)) = data.split_first() else {
        return;
    };
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
    match output_spec.kind {
        OutputKind::Dense => {
            assert_eq!(Some(values), output_spec.width.map(|w| w * n));
            assert!(row_splits.is_empty());
        }
        kind => {
            assert_eq!(row_splits.len(), n + 1);
            assert_eq!(row_splits[0], 0);
            assert!(row_splits.windows(2).all(|w| w[0] <= w[1]));
            let rows_of = if kind == OutputKind::Sparse {
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
    // SAFETY: each handle freed once.
    unsafe {
        rustfx_output_free(output);
        rustfx_documents_free(documents);
        rustfx_extractor_free(extractor);
    }
});
