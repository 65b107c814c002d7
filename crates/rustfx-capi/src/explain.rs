//! Explanations through the C ABI (`rustfx::explain`): one document's
//! contributions as columns, for `python/rustfx_core/explain.py`.
//!
//! [`rustfx_explain`] runs an extractor's explainer on one document and
//! returns a handle holding the contributions column by column (index,
//! offset, length, value, and the texts end to end with where each ends),
//! so that Python copies each column once into numpy rather than walking
//! a list of structs. The handle is freed with [`rustfx_explanation_free`].
//! The caps are optional (null: the core's defaults) so no default is
//! repeated in another language; the core checks them and says which
//! values it allows.

use crate::SpecExtractor;
use crate::{bytes, hand_out, report};
use rustfx::error::catch_panic;
use rustfx::explain::{
    ExplainOptions, DEFAULT_MAX_CONTRIBUTIONS, DEFAULT_MAX_TEXT_BYTES, MAX_CONTRIBUTIONS,
    MAX_TEXT_BYTES,
};
use rustfx::extractor::Extractor;
use rustfx::{Error, Result};
use std::ffi::c_char;
use std::ptr;

/// One document's explanation, column by column (row i of every column is
/// contribution i, in the order the extractor made them).
pub struct Explanation {
    index: Vec<u64>,
    offset: Vec<u64>,
    length: Vec<u64>,
    value: Vec<f64>,
    /// The texts end to end; text i is `text[text_ends[i - 1]..text_ends[i]]`.
    text: Vec<u8>,
    text_ends: Vec<u64>,
    truncated: bool,
    combine: &'static str,
}

/// [`rustfx_explanation_array`]'s `which`: the output indices (u64).
pub const EXPLAIN_INDEX: u32 = 0;
/// ... where each contribution's bytes start in the document (u64).
pub const EXPLAIN_OFFSET: u32 = 1;
/// ... how many bytes each covers (u64).
pub const EXPLAIN_LENGTH: u32 = 2;
/// ... what each added (f64).
pub const EXPLAIN_VALUE: u32 = 3;
/// ... the texts, end to end (bytes).
pub const EXPLAIN_TEXT: u32 = 4;
/// ... where each text ends in those bytes (u64).
pub const EXPLAIN_TEXT_ENDS: u32 = 5;

/// A cap the caller gave (`*value`) or the default (null `value`): a
/// negative one is refused in the core's words, since `usize` cannot hold
/// it to pass it on.
///
/// # Safety
/// `value` is null or points to a readable `i64`.
unsafe fn cap(
    value: *const i64,
    name: &str,
    min: usize,
    max: usize,
    default: usize,
) -> Result<usize> {
    // SAFETY: a non-null `value` points to a readable i64 (the caller's
    // contract).
    let Some(&value) = (unsafe { value.as_ref() }) else {
        return Ok(default);
    };
    if value < 0 {
        return Err(Error::invalid_argument(format!(
            "{name} must be in [{min}, {max}], got {value}"
        )));
    }
    // On a 32-bit target, a value beyond usize is beyond the cap too.
    Ok(usize::try_from(value).unwrap_or(usize::MAX))
}

fn explain(extractor: &Extractor, doc: &[u8], options: &ExplainOptions) -> Result<Explanation> {
    let explained = extractor.explain_with(doc, options)?;
    let n = explained.contributions.len();
    let mut out = Explanation {
        index: Vec::with_capacity(n),
        offset: Vec::with_capacity(n),
        length: Vec::with_capacity(n),
        value: Vec::with_capacity(n),
        text: Vec::new(),
        text_ends: Vec::with_capacity(n),
        truncated: explained.truncated,
        combine: explained.combine,
    };
    for c in explained.contributions {
        out.index.push(c.index);
        out.offset.push(c.offset);
        out.length.push(c.length);
        out.value.push(c.value);
        out.text.extend_from_slice(&c.text);
        out.text_ends.push(out.text.len() as u64);
    }
    Ok(out)
}

/// The contributions of one document (`len` bytes at `doc`) to
/// `extractor`'s output (`rustfx::explain`): at most `*max_contributions`
/// of them, each text cut at `*max_text_bytes` (either null: the core's
/// default), byte histograms one per byte if `byte_offsets`. Null and the
/// core's message on failure: bad caps, or an extractor that does not
/// explain ("X does not explain: why").
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer; each cap
/// null or a readable i64.
#[no_mangle]
pub unsafe extern "C" fn rustfx_explain(
    extractor: *const SpecExtractor,
    doc: *const u8,
    len: usize,
    max_contributions: *const i64,
    max_text_bytes: *const i64,
    byte_offsets: bool,
    message: *mut *mut c_char,
) -> *mut Explanation {
    let outcome = catch_panic("rustfx_explain", || {
        // SAFETY: a non-null `extractor` came from `rustfx_extractor_new`.
        let extractor = &unsafe { extractor.as_ref() }
            .ok_or_else(|| Error::invalid_argument("null extractor"))?
            .extractor;
        // SAFETY: the caller passes `len` readable bytes at `doc`.
        let doc = unsafe { bytes(doc, len) }?;
        // SAFETY: `max_contributions` is null or a readable i64 (the
        // caller's contract).
        let max_contributions = unsafe {
            cap(
                max_contributions,
                "max_contributions",
                1,
                MAX_CONTRIBUTIONS,
                DEFAULT_MAX_CONTRIBUTIONS,
            )
        }?;
        // SAFETY: `max_text_bytes` is null or a readable i64 (the caller's
        // contract).
        let max_text_bytes = unsafe {
            cap(
                max_text_bytes,
                "max_text_bytes",
                0,
                MAX_TEXT_BYTES,
                DEFAULT_MAX_TEXT_BYTES,
            )
        }?;
        let options = ExplainOptions::new(max_contributions, max_text_bytes, byte_offsets)?;
        explain(extractor, doc, &options)
    });
    match outcome {
        Ok(explanation) => Box::into_raw(Box::new(explanation)),
        Err(e) => {
            report(&e, message);
            ptr::null_mut()
        }
    }
}

/// One column of `explanation` (`which`: [`EXPLAIN_INDEX`] ...
/// [`EXPLAIN_TEXT_ENDS`]): its address and length in elements (u64, f64
/// for values, bytes for texts), valid until the explanation is freed.
/// Returns false if the call was wrong.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_explanation_array(
    explanation: *const Explanation,
    which: u32,
    data: *mut *const u8,
    len: *mut usize,
) -> bool {
    // SAFETY: a non-null `explanation` came from `rustfx_explain`.
    let Some(e) = (unsafe { explanation.as_ref() }) else {
        return false;
    };
    let (address, count) = match which {
        EXPLAIN_INDEX => (e.index.as_ptr().cast::<u8>(), e.index.len()),
        EXPLAIN_OFFSET => (e.offset.as_ptr().cast::<u8>(), e.offset.len()),
        EXPLAIN_LENGTH => (e.length.as_ptr().cast::<u8>(), e.length.len()),
        EXPLAIN_VALUE => (e.value.as_ptr().cast::<u8>(), e.value.len()),
        EXPLAIN_TEXT => (e.text.as_ptr(), e.text.len()),
        EXPLAIN_TEXT_ENDS => (e.text_ends.as_ptr().cast::<u8>(), e.text_ends.len()),
        _ => return false,
    };
    // SAFETY: see `hand_out`.
    unsafe { hand_out(data, len, address, count) }
}

/// Whether the cap stopped `explanation` before the document's end, in
/// `*truncated`. Returns false (nothing written) if the call was wrong.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_explanation_truncated(
    explanation: *const Explanation,
    truncated: *mut bool,
) -> bool {
    // SAFETY: a non-null `explanation` came from `rustfx_explain`; a
    // non-null `truncated` is writable.
    match unsafe { (explanation.as_ref(), truncated.as_mut()) } {
        (Some(e), Some(out)) => {
            *out = e.truncated;
            true
        }
        _ => false,
    }
}

/// How the contributions at an index make its output value (one line of
/// UTF-8, `*len` bytes at `*data`, static). Returns false if the call was
/// wrong.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_explanation_combine(
    explanation: *const Explanation,
    data: *mut *const u8,
    len: *mut usize,
) -> bool {
    // SAFETY: a non-null `explanation` came from `rustfx_explain`.
    let Some(e) = (unsafe { explanation.as_ref() }) else {
        return false;
    };
    // SAFETY: see `hand_out`.
    unsafe { hand_out(data, len, e.combine.as_ptr(), e.combine.len()) }
}

/// Frees an explanation.
///
/// # Safety
/// Pointers as the module doc says: handles from their `_new` (or
/// null), `len` readable or writable elements at each buffer.
#[no_mangle]
pub unsafe extern "C" fn rustfx_explanation_free(explanation: *mut Explanation) {
    if !explanation.is_null() {
        // SAFETY: `explanation` came from `rustfx_explain`.
        drop(unsafe { Box::from_raw(explanation) });
    }
}
