//! Extracted rows: the handle every extraction returns (`rustfx_extract`,
//! `rustfx_cache_*`), exported as Arrow C Data over the core's buffers
//! ([`rustfx_rows_export`]), and the row digests a corpus job writes
//! beside them ([`rustfx_rows_digests`]).

use crate::arrow::export::{export, Exportable};
use crate::arrow::{import, ArrowArray, ArrowSchema};
use crate::{bytes, done, report, text};
use rustfx::error::catch_panic;
use rustfx::output::Batch;
use rustfx::spec::FeatureSpec;
use rustfx::{Error, Result};
use rustfx_cache::DocKey;
use std::ffi::c_char;
use std::ptr;
use std::sync::Arc;

/// Schema metadata key of the spec's canonical JSON.
pub const SPEC_METADATA_KEY: &str = "rustfx.spec";
/// Schema metadata key of the failed documents, a JSON array of
/// `[index, status code, message]` (only when one failed).
pub const ERRORS_METADATA_KEY: &str = "rustfx.errors";

/// One extraction's rows, shared by every export of them.
pub struct Rows {
    rows: Arc<Exportable>,
    spec: FeatureSpec,
}

impl Rows {
    /// `batch` of `spec`, with the documents `failures` (index, status
    /// code, message) null.
    pub fn new(spec: FeatureSpec, batch: Batch, failures: &[(usize, i32, String)]) -> Rows {
        let mut metadata = vec![(SPEC_METADATA_KEY.to_string(), spec.to_json())];
        if !failures.is_empty() {
            let errors: Vec<serde_json::Value> = failures
                .iter()
                .map(|(i, code, message)| serde_json::json!([i, code, message]))
                .collect();
            metadata.push((
                ERRORS_METADATA_KEY.to_string(),
                serde_json::Value::from(errors).to_string(),
            ));
        }
        let failed: Vec<usize> = failures.iter().map(|f| f.0).collect();
        Rows {
            rows: Arc::new(Exportable::new(batch, &failed, metadata)),
            spec,
        }
    }

    /// The batch.
    pub fn batch(&self) -> &Batch {
        &self.rows.batch
    }
}

/// Rows of the spec (`spec_len` bytes of JSON) copied from an Arrow array
/// in the export's layout (what a pickled batch holds), checked whole; its
/// null rows are failed documents with `message`... from the `errors`
/// JSON (`errors_len` bytes, `[[index, code, message], ...]`, as the
/// export's metadata gives them). Null and a message if refused.
///
/// # Safety
/// `spec` and `errors` hold their lengths' bytes; `schema` and `array`
/// are live Arrow C Data structs (only read).
#[no_mangle]
pub unsafe extern "C" fn rustfx_rows_from_arrow(
    spec: *const u8,
    spec_len: usize,
    errors: *const u8,
    errors_len: usize,
    schema: *const ArrowSchema,
    array: *const ArrowArray,
    message: *mut *mut c_char,
) -> *mut Rows {
    let outcome = catch_panic("rustfx_rows_from_arrow", || {
        // SAFETY: the caller passes `spec_len` readable bytes at `spec`.
        let spec = FeatureSpec::from_json(unsafe { text(spec, spec_len, "a feature spec") }?)?;
        // SAFETY: the caller passes `errors_len` readable bytes at `errors`.
        let errors = unsafe { text(errors, errors_len, "errors") }?;
        // SAFETY: each is null or a live Arrow C Data struct (the caller's
        // contract).
        let (Some(schema), Some(array)) = (unsafe { schema.as_ref() }, unsafe { array.as_ref() })
        else {
            return Err(Error::invalid_argument("a null Arrow schema or array"));
        };
        // SAFETY: both are live and describe each other (the caller's
        // contract).
        let (batch, nulls) = unsafe { import::rows_and_nulls(schema, array, &spec.output()) }?;
        let listed: Vec<(usize, i32, String)> = if errors.is_empty() {
            Vec::new()
        } else {
            serde_json::from_str(errors)
                .map_err(|e| Error::invalid_argument(format!("errors: {e}")))?
        };
        if listed.iter().map(|f| f.0).ne(nulls.iter().copied()) {
            return Err(Error::invalid_argument(
                "the null rows are not the failed documents listed",
            ));
        }
        Ok(Rows::new(spec, batch, &listed))
    });
    hand_rows(outcome, message)
}

/// Boxes `rows`, or gives null and the message.
pub(crate) fn hand_rows(outcome: Result<Rows>, message: *mut *mut c_char) -> *mut Rows {
    match outcome {
        Ok(rows) => Box::into_raw(Box::new(rows)),
        Err(e) => {
            report(&e, message);
            ptr::null_mut()
        }
    }
}

/// How many documents `rows` holds (0 for null).
///
/// # Safety
/// `rows` came from an extraction (or is null).
#[no_mangle]
pub unsafe extern "C" fn rustfx_rows_len(rows: *const Rows) -> usize {
    // SAFETY: the caller's contract.
    unsafe { rows.as_ref() }.map_or(0, |r| r.batch().rows())
}

/// Exports `rows` as a new `ArrowSchema` and `ArrowArray` (boxed, written
/// to `*schema` and `*array`) over the rows' own buffers, which live until
/// the last exported struct (or child) is released. Give each to a
/// PyCapsule with `rustfx_arrow_*_capsule_free`, or free it with
/// `rustfx_arrow_*_free`. The mapping: `arrow/export.rs`. False and a
/// message on failure.
///
/// # Safety
/// `rows` came from an extraction (or is null); `schema` and `array` are
/// writable.
#[no_mangle]
pub unsafe extern "C" fn rustfx_rows_export(
    rows: *const Rows,
    schema: *mut *mut ArrowSchema,
    array: *mut *mut ArrowArray,
    message: *mut *mut c_char,
) -> bool {
    let outcome = catch_panic("rustfx_rows_export", || {
        // SAFETY: the caller's contract.
        let rows = unsafe { rows.as_ref() }.ok_or_else(|| Error::invalid_argument("null rows"))?;
        if schema.is_null() || array.is_null() {
            return Err(Error::invalid_argument("no room for the Arrow structs"));
        }
        let (exported_schema, exported_array) = export(&rows.rows)?;
        // SAFETY: both are non-null and writable (checked above).
        unsafe {
            *schema = Box::into_raw(Box::new(exported_schema));
            *array = Box::into_raw(Box::new(exported_array));
        }
        Ok(())
    });
    done(outcome, message)
}

/// Writes the row digest of each row (`rustfx_cache::row_digests`: what a
/// corpus job writes beside a row and filling a cache checks) to `out`, 32
/// bytes each, given each document's content key (32 bytes each at
/// `keys`). False and a message on failure.
///
/// # Safety
/// `rows` came from an extraction; `32 * rows` readable bytes at `keys`
/// and writable bytes at `out`.
#[no_mangle]
pub unsafe extern "C" fn rustfx_rows_digests(
    rows: *const Rows,
    keys: *const u8,
    out: *mut u8,
    message: *mut *mut c_char,
) -> bool {
    let outcome = catch_panic("rustfx_rows_digests", || {
        // SAFETY: the caller's contract.
        let rows = unsafe { rows.as_ref() }.ok_or_else(|| Error::invalid_argument("null rows"))?;
        let n = rows.batch().rows();
        // SAFETY: the caller passes 32 readable bytes per row at `keys`.
        let keys = doc_keys(unsafe { bytes(keys, 32 * n) }?);
        // SAFETY: room for 32 bytes per row at `out`.
        unsafe { write_digests(&rows.spec, &keys, rows.batch(), out) }
    });
    done(outcome, message)
}

/// Content keys, 32 bytes each.
pub(crate) fn doc_keys(bytes: &[u8]) -> Vec<DocKey> {
    bytes
        .chunks_exact(32)
        .map(|d| DocKey(d.try_into().expect("chunks of 32")))
        .collect()
}

/// The row digests of `batch` under `keys`, written to `out`.
///
/// # Safety
/// `out` has room for 32 bytes per row.
pub(crate) unsafe fn write_digests(
    spec: &FeatureSpec,
    keys: &[DocKey],
    batch: &Batch,
    out: *mut u8,
) -> Result<()> {
    let found = rustfx_cache::row_digests(spec, keys, batch)?;
    if out.is_null() && !found.is_empty() {
        return Err(Error::invalid_argument("null row digests"));
    }
    for (i, digest) in found.iter().enumerate() {
        // SAFETY: the caller gave room for 32 bytes per row at `out`.
        unsafe { ptr::copy_nonoverlapping(digest.as_ptr(), out.add(32 * i), 32) };
    }
    Ok(())
}

/// Frees rows (the exported structs keep their share of the buffers).
///
/// # Safety
/// `rows` came from an extraction (or is null), freed once.
#[no_mangle]
pub unsafe extern "C" fn rustfx_rows_free(rows: *mut Rows) {
    if !rows.is_null() {
        // SAFETY: the caller's contract.
        drop(unsafe { Box::from_raw(rows) });
    }
}
