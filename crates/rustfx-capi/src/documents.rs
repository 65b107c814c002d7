//! Documents for the core: read from files by the core, given one by one,
//! or read in place from an Arrow binary or string array (or a stream of
//! them) with no copy and no Python object per document.

use crate::arrow::import::{self, DocumentSpan};
use crate::arrow::{ArrowArray, ArrowArrayStream, ArrowSchema};
use crate::{bytes, hand_out, report};
use rustfx::error::catch_panic;
use rustfx::read::{check_max_bytes, read_file};
use rustfx::sha256::sha256_hex;
use rustfx::{Error, ErrorKind, Result};
use std::ffi::c_char;
use std::ptr;

/// The documents of a batch and the status of each: owned contents (read
/// by the core, or given), or spans of imported Arrow arrays, which the
/// documents own and release when freed.
pub struct Documents {
    contents: Vec<Vec<u8>>,
    /// Imported documents (`None`: the contents are `contents`).
    spans: Option<Vec<DocumentSpan>>,
    /// The imported arrays the spans point into.
    _arrays: Vec<ArrowArray>,
    pub(crate) codes: Vec<i32>,
    messages: Vec<String>,
}

impl Documents {
    fn owned(n: usize) -> Documents {
        Documents {
            contents: vec![Vec::new(); n],
            spans: None,
            _arrays: Vec::new(),
            codes: vec![0; n],
            messages: vec![String::new(); n],
        }
    }

    fn imported(spans: Vec<DocumentSpan>, arrays: Vec<ArrowArray>) -> Documents {
        let nulls: Vec<usize> = (0..spans.len()).filter(|&i| spans[i].is_none()).collect();
        let mut documents = Documents {
            contents: Vec::new(),
            codes: vec![0; spans.len()],
            messages: vec![String::new(); spans.len()],
            spans: Some(spans),
            _arrays: arrays,
        };
        for i in nulls {
            documents.codes[i] = ErrorKind::InvalidArgument.status_code();
            documents.messages[i] = format!("document {i} is null");
        }
        documents
    }

    /// How many documents.
    pub fn len(&self) -> usize {
        self.codes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// Every document's bytes (a null one is empty).
    pub fn slices(&self) -> Vec<&[u8]> {
        match &self.spans {
            None => self.contents.iter().map(Vec::as_slice).collect(),
            Some(spans) => spans
                .iter()
                .map(|span| match *span {
                    // SAFETY: each span points into an array `_arrays`
                    // holds until the documents are freed.
                    Some((data, len)) if len > 0 => unsafe {
                        std::slice::from_raw_parts(data, len)
                    },
                    _ => &[],
                })
                .collect(),
        }
    }

    /// The documents that failed (a read, or a null in Arrow).
    pub fn failed(&self) -> Vec<usize> {
        (0..self.len()).filter(|&i| self.codes[i] != 0).collect()
    }

    /// Each failed document's index, status code and message.
    pub fn failures(&self) -> Vec<(usize, i32, String)> {
        self.failed()
            .into_iter()
            .map(|i| (i, self.codes[i], self.messages[i].clone()))
            .collect()
    }
}

/// `n` empty documents, each with status OK.
#[no_mangle]
pub extern "C" fn rustfx_documents_new(n: usize) -> *mut Documents {
    match catch_panic("rustfx_documents_new", || Ok(Documents::owned(n))) {
        Ok(documents) => Box::into_raw(Box::new(documents)),
        Err(_) => ptr::null_mut(),
    }
}

/// Documents read in place from an Arrow array of binary or strings
/// (`binary`, `large_binary`, `utf8`, `large_utf8`, `binary_view`,
/// `string_view`): the array is moved in (`*array` is left released, so
/// its capsule frees only the struct) and released with the documents;
/// the schema is only read. A null element is an empty document with
/// status INVALID_ARGUMENT. Null and a message if refused (another type, a
/// malformed array: the array is then released).
///
/// # Safety
/// `schema` and `array` are live Arrow C Data structs that describe each
/// other (or null).
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_from_arrow(
    schema: *const ArrowSchema,
    array: *mut ArrowArray,
    message: *mut *mut c_char,
) -> *mut Documents {
    let outcome = catch_panic("rustfx_documents_from_arrow", || {
        if schema.is_null() || array.is_null() {
            return Err(Error::invalid_argument("a null Arrow schema or array"));
        }
        // SAFETY: the caller's contract; the array is moved out first, so
        // it is released once whatever happens.
        let array = unsafe { ArrowArray::take(array) };
        let mut spans = Vec::new();
        // SAFETY: `schema` is non-null and live, and describes `array`
        // (the caller's contract).
        unsafe { import::documents(&*schema, &array, &mut spans) }?;
        Ok(Documents::imported(spans, vec![array]))
    });
    hand_documents(outcome, message)
}

/// Documents read in place from an Arrow stream of binary or string
/// arrays (as [`rustfx_documents_from_arrow`]), moved in and released
/// once read. Null and a message if refused.
///
/// # Safety
/// `stream` is a live `ArrowArrayStream` (or null).
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_from_arrow_stream(
    stream: *mut ArrowArrayStream,
    message: *mut *mut c_char,
) -> *mut Documents {
    let outcome = catch_panic("rustfx_documents_from_arrow_stream", || {
        if stream.is_null() {
            return Err(Error::invalid_argument("a null Arrow stream"));
        }
        // SAFETY: the caller's contract: the stream is moved out, leaving
        // a released one behind.
        let taken = unsafe {
            ptr::replace(
                stream,
                ArrowArrayStream {
                    get_schema: None,
                    get_next: None,
                    get_last_error: None,
                    release: None,
                    private_data: ptr::null_mut(),
                },
            )
        };
        let mut spans = Vec::new();
        // SAFETY: `taken` is the caller's live stream, now owned here.
        let arrays = unsafe { import::stream_documents(taken, &mut spans) }?;
        Ok(Documents::imported(spans, arrays))
    });
    hand_documents(outcome, message)
}

fn hand_documents(outcome: Result<Documents>, message: *mut *mut c_char) -> *mut Documents {
    match outcome {
        Ok(documents) => Box::into_raw(Box::new(documents)),
        Err(e) => {
            report(&e, message);
            ptr::null_mut()
        }
    }
}

/// How many documents (0 for null).
///
/// # Safety
/// `documents` came from a `rustfx_documents_*` constructor (or is null).
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_len(documents: *const Documents) -> usize {
    // SAFETY: the caller's contract.
    unsafe { documents.as_ref() }.map_or(0, Documents::len)
}

/// Frees documents.
///
/// # Safety
/// Pointers as the crate doc says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_free(documents: *mut Documents) {
    if !documents.is_null() {
        // SAFETY: `documents` came from a `rustfx_documents_*` constructor.
        drop(unsafe { Box::from_raw(documents) });
    }
}

/// `documents` as a mutable reference, `i` checked against it, and owned
/// contents (imported documents cannot be replaced).
///
/// # Safety
/// `documents` is null or came from a `rustfx_documents_*` constructor, is
/// not freed, and no other reference to it is in use for `'a`.
unsafe fn document<'a>(documents: *mut Documents, i: usize) -> Result<&'a mut Documents> {
    // SAFETY: a non-null `documents` came from a constructor and the
    // caller does not use it from two threads at once.
    let documents =
        unsafe { documents.as_mut() }.ok_or_else(|| Error::invalid_argument("null documents"))?;
    if i >= documents.len() {
        return Err(Error::invalid_argument(format!(
            "document {i} of {}",
            documents.len()
        )));
    }
    if documents.spans.is_some() {
        return Err(Error::invalid_argument(
            "documents read from Arrow cannot be replaced",
        ));
    }
    Ok(documents)
}

/// `documents` as a reference.
///
/// # Safety
/// `documents` came from a constructor (or is null).
pub(crate) unsafe fn documents_ref<'a>(documents: *const Documents) -> Result<&'a Documents> {
    // SAFETY: the caller's contract.
    unsafe { documents.as_ref() }.ok_or_else(|| Error::invalid_argument("null documents"))
}

/// Reads document `i` from the file at `path` (`path_len` bytes), at most
/// `max_bytes` of it, by `read_files`' rules. Returns its status code (0,
/// or a TensorFlow code with the message kept for
/// [`rustfx_documents_message`]; the contents are then empty), or -1 if
/// the call itself was wrong (null documents, `i` out of range, a bad
/// `max_bytes`, imported documents), with nothing read.
///
/// # Safety
/// Pointers as the crate doc says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_read(
    documents: *mut Documents,
    i: usize,
    path: *const u8,
    path_len: usize,
    max_bytes: i64,
) -> i32 {
    let outcome = catch_panic("rustfx_documents_read", || {
        // SAFETY: `documents` is null or from a constructor, used from one
        // thread at a time (the caller's contract).
        let documents = unsafe { document(documents, i) }?;
        // SAFETY: the caller passes `path_len` readable bytes at `path`.
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
/// status `code` with `message` (`message_len` bytes of UTF-8; code 0 and
/// no message for a document that was read). Returns false if the call
/// was wrong.
///
/// # Safety
/// Pointers as the crate doc says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_set(
    documents: *mut Documents,
    i: usize,
    data: *const u8,
    len: usize,
    code: i32,
    message: *const u8,
    message_len: usize,
) -> bool {
    catch_panic("rustfx_documents_set", || {
        // SAFETY: `documents` is null or from a constructor, used from one
        // thread at a time (the caller's contract).
        let documents = unsafe { document(documents, i) }?;
        // SAFETY: the caller passes `len` readable bytes at `data`.
        documents.contents[i] = unsafe { bytes(data, len) }?.to_vec();
        documents.codes[i] = code;
        // SAFETY: the caller passes `message_len` readable bytes at `message`.
        documents.messages[i] =
            String::from_utf8_lossy(unsafe { bytes(message, message_len) }?).into_owned();
        Ok(())
    })
    .is_ok()
}

/// Document `i`'s status message ("" if it was read): `*len` bytes of
/// UTF-8 at `*data`, valid until the documents change or are freed.
/// Returns false if the call was wrong.
///
/// # Safety
/// Pointers as the crate doc says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_message(
    documents: *mut Documents,
    i: usize,
    data: *mut *const u8,
    len: *mut usize,
) -> bool {
    catch_panic("rustfx_documents_message", || {
        // SAFETY: see `documents_ref` and `hand_out`.
        let documents = unsafe { documents_ref(documents) }?;
        let message = documents
            .messages
            .get(i)
            .ok_or_else(|| Error::invalid_argument("document out of range"))?
            .as_bytes();
        // SAFETY: `data` and `len`, when not null, are writable (the
        // caller's contract).
        Ok(unsafe { hand_out(data, len, message.as_ptr(), message.len()) })
    })
    .unwrap_or(false)
}

/// Writes each document's status code to `codes` (room for one per
/// document). Returns false if the call was wrong.
///
/// # Safety
/// Pointers as the crate doc says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_codes(
    documents: *const Documents,
    codes: *mut i32,
) -> bool {
    catch_panic("rustfx_documents_codes", || {
        // SAFETY: see `documents_ref`.
        let documents = unsafe { documents_ref(documents) }?;
        if codes.is_null() && !documents.is_empty() {
            return Err(Error::invalid_argument("null codes"));
        }
        // SAFETY: room for one code per document at the non-null `codes`.
        unsafe { ptr::copy_nonoverlapping(documents.codes.as_ptr(), codes, documents.len()) };
        Ok(())
    })
    .is_ok()
}

/// Writes each document's size (bytes held) to `sizes` (room for one per
/// document) and, if `sha256_hex_out` is not null, its SHA-256 as 64
/// lowercase hex digits, end to end (room for 64 per document). Returns
/// false if the call was wrong.
///
/// # Safety
/// Pointers as the crate doc says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_digest(
    documents: *const Documents,
    sizes: *mut i64,
    sha256_hex_out: *mut u8,
) -> bool {
    catch_panic("rustfx_documents_digest", || {
        // SAFETY: see `documents_ref`.
        let documents = unsafe { documents_ref(documents) }?;
        if sizes.is_null() && !documents.is_empty() {
            return Err(Error::invalid_argument("null sizes"));
        }
        for (i, contents) in documents.slices().into_iter().enumerate() {
            // SAFETY: the caller gave room for one size per document and,
            // if not null, 64 digits per document.
            unsafe { *sizes.add(i) = contents.len() as i64 };
            if !sha256_hex_out.is_null() {
                let hex = sha256_hex(contents);
                // SAFETY: as above.
                unsafe { ptr::copy_nonoverlapping(hex.as_ptr(), sha256_hex_out.add(64 * i), 64) };
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
/// Pointers as the crate doc says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_documents_content_keys(
    documents: *const Documents,
    keys: *mut u8,
) -> bool {
    catch_panic("rustfx_documents_content_keys", || {
        // SAFETY: see `documents_ref`.
        let documents = unsafe { documents_ref(documents) }?;
        if keys.is_null() && !documents.is_empty() {
            return Err(Error::invalid_argument("null keys"));
        }
        for (i, contents) in documents.slices().into_iter().enumerate() {
            let key = rustfx_cache::DocKey::of_content(contents);
            // SAFETY: the caller gave room for 32 bytes per document.
            unsafe { ptr::copy_nonoverlapping(key.0.as_ptr(), keys.add(32 * i), 32) };
        }
        Ok(())
    })
    .is_ok()
}
