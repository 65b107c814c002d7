//! The feature cache through the C ABI (`rustfx_cache::FeatureCache`),
//! for `python/rustfx_core/cache.py`.
//!
//! [`rustfx_cache_open`] returns a handle freed with [`rustfx_cache_free`].
//! Every call names its spec by its JSON text; the handle parses each spec
//! once and keeps it, so a cached epoch builds no extractor. Rows come back
//! as [`Rows`] (what `rustfx_extract` returns, exported as Arrow C Data),
//! so cached and extracted rows reach Python in one form. Rows are stored
//! from the core's own extraction, or, by [`rustfx_cache_put_rows`], from
//! rows the core extracted elsewhere (a corpus job's shards), given as
//! Arrow arrays of the export's layout and checked whole against the spec
//! before they are stored; [`rustfx_row_digests`] gives the digest of
//! each such row that a corpus job wrote and the fill checks.

use crate::arrow::{import, ArrowArray, ArrowSchema};
use crate::documents::documents_ref as documents;
use crate::rows::{doc_keys, hand_rows, write_digests};
use crate::{bytes, done, report, text, Documents, Rows};
use rustfx::error::catch_panic;
use rustfx::output::Batch;
use rustfx::read::check_max_bytes;
use rustfx::spec::FeatureSpec;
use rustfx::{Error, Result};
use rustfx_cache::{CacheKey, CacheOptions, DocKey, FeatureCache};
use std::collections::HashMap;
use std::ffi::c_char;
use std::ptr;

/// A feature cache and the specs it was given, parsed.
pub struct Cache {
    cache: FeatureCache,
    specs: HashMap<String, FeatureSpec>,
}

/// How many values [`rustfx_cache_stats`] writes, in
/// `rustfx_cache::Stats::NAMES`' order: hits, misses, corrupt, evicted,
/// dropped, errors, entries, bytes, read_only (0 or 1).
pub const CACHE_STATS: usize = rustfx_cache::Stats::NAMES.len();

impl Cache {
    /// The spec of `len` bytes of JSON at `data`, parsed once per handle.
    ///
    /// # Safety
    /// As [`bytes`]: `len` readable bytes at `data` (null allowed when
    /// `len` is 0).
    unsafe fn spec(&mut self, data: *const u8, len: usize) -> Result<FeatureSpec> {
        // SAFETY: the caller passes `len` readable bytes.
        let text = unsafe { text(data, len, "a feature spec") }?;
        if let Some(spec) = self.specs.get(text) {
            return Ok(spec.clone());
        }
        let spec = FeatureSpec::from_json(text)?;
        self.specs.insert(text.to_string(), spec.clone());
        Ok(spec)
    }
}

/// `cache` as a mutable reference.
///
/// # Safety
/// `cache` is null or came from [`rustfx_cache_open`], is not freed, and
/// no other reference to it is in use for `'a`.
unsafe fn cache<'a>(cache: *mut Cache) -> Result<&'a mut Cache> {
    // SAFETY: a non-null `cache` came from `rustfx_cache_open` and the
    // caller does not use it from two threads at once.
    unsafe { cache.as_mut() }.ok_or_else(|| Error::invalid_argument("null feature cache"))
}

/// Opens (creating) the feature cache in `directory` (`directory_len`
/// bytes, a path), capped at `*max_bytes` (null: the core's default, so no
/// other language repeats it), keyed by `key` ("content" or "stat",
/// `key_len` bytes), to read only if `read_only` (or if it cannot be
/// written: `rustfx_cache::CacheOptions::read_only`). Null and the core's
/// message if refused.
///
/// # Safety
/// Pointers as the module doc of the crate says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_cache_open(
    directory: *const u8,
    directory_len: usize,
    max_bytes: *const u64,
    key: *const u8,
    key_len: usize,
    read_only: bool,
    message: *mut *mut c_char,
) -> *mut Cache {
    let opened = catch_panic("rustfx_cache_open", || {
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: the caller passes `directory_len` readable bytes at `directory`.
        let directory = unsafe { bytes(directory, directory_len) }?;
        // SAFETY: the caller passes `key_len` readable bytes at `key`.
        let key = CacheKey::from_name(unsafe { text(key, key_len, "a cache key") }?)?;
        let dir = std::path::Path::new(std::ffi::OsStr::from_bytes(directory));
        // SAFETY: a non-null `max_bytes` points to a readable u64.
        let max_bytes = unsafe { max_bytes.as_ref() }
            .copied()
            .unwrap_or(CacheOptions::default().max_bytes);
        let options = CacheOptions {
            max_bytes,
            key,
            read_only,
        };
        let cache = FeatureCache::open(dir, options)?;
        Ok(Cache {
            cache,
            specs: HashMap::new(),
        })
    });
    match opened {
        Ok(cache) => Box::into_raw(Box::new(cache)),
        Err(e) => {
            report(&e, message);
            ptr::null_mut()
        }
    }
}

/// Closes a feature cache.
///
/// # Safety
/// Pointers as the module doc of the crate says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_cache_free(cache: *mut Cache) {
    if !cache.is_null() {
        // SAFETY: `cache` came from `rustfx_cache_open`.
        drop(unsafe { Box::from_raw(cache) });
    }
}

/// The rows of every document by the spec (`spec_len` bytes of JSON), as
/// `rustfx_extract` gives them: each looked up by its content, the misses
/// extracted and stored. Null and a message on failure.
///
/// # Safety
/// Pointers as the module doc of the crate says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_cache_extract(
    cache: *mut Cache,
    spec: *const u8,
    spec_len: usize,
    docs: *const Documents,
    message: *mut *mut c_char,
) -> *mut Rows {
    let outcome = catch_panic("rustfx_cache_extract", || {
        // SAFETY: a non-null `cache` came from `rustfx_cache_open` and is
        // used from one thread at a time (the caller's contract).
        let cache = unsafe { self::cache(cache) }?;
        // SAFETY: a non-null `docs` came from a `rustfx_documents_*` constructor.
        let docs = unsafe { documents(docs) }?;
        // SAFETY: the caller passes `spec_len` readable bytes at `spec`.
        let spec = unsafe { cache.spec(spec, spec_len) }?;
        let batch = cache.cache.extract(&spec, &docs.slices())?;
        Ok(Rows::new(spec, batch, &docs.failures()))
    });
    hand_rows(outcome, message)
}

/// The rows of the files at `paths` (`paths_len` bytes, path `i` ending at
/// `path_ends[i]`, `n` of them), each read by `read_files`' rules with
/// `max_bytes`, looked up by the cache's key, the misses extracted and
/// stored. Each path's status code goes to `codes` (room for `n`; 0, or a
/// TensorFlow code for a file that could not be read, whose row is an
/// empty document's). Null and a message on failure.
///
/// # Safety
/// Pointers as the module doc of the crate says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_cache_extract_files(
    cache: *mut Cache,
    spec: *const u8,
    spec_len: usize,
    paths: *const u8,
    paths_len: usize,
    path_ends: *const u64,
    n: usize,
    max_bytes: i64,
    codes: *mut i32,
    message: *mut *mut c_char,
) -> *mut Rows {
    let outcome = catch_panic("rustfx_cache_extract_files", || {
        // SAFETY: a non-null `cache` came from `rustfx_cache_open` and is
        // used from one thread at a time (the caller's contract).
        let cache = unsafe { self::cache(cache) }?;
        // SAFETY: the caller passes `spec_len` readable bytes at `spec`.
        let spec = unsafe { cache.spec(spec, spec_len) }?;
        // SAFETY: the caller passes `paths_len` readable bytes at `paths`.
        let all = unsafe { bytes(paths, paths_len) }?;
        let ends: &[u64] = if n == 0 {
            &[]
        } else if path_ends.is_null() || codes.is_null() {
            return Err(Error::invalid_argument("null path ends or codes"));
        } else {
            // SAFETY: `n` readable u64s at the non-null `path_ends`.
            unsafe { std::slice::from_raw_parts(path_ends, n) }
        };
        let mut list = Vec::with_capacity(n);
        let mut start = 0usize;
        for &end in ends {
            let end = usize::try_from(end).unwrap_or(usize::MAX);
            let path = all
                .get(start..end)
                .ok_or_else(|| Error::invalid_argument("path ends out of order or range"))?;
            list.push(path);
            start = end;
        }
        let max_bytes = check_max_bytes(max_bytes)?;
        let files = cache.cache.extract_files(&spec, &list, max_bytes)?;
        let mut failures = Vec::new();
        for (i, error) in files.errors.iter().enumerate() {
            let code = error.as_ref().map_or(0, |e| e.kind().status_code());
            // SAFETY: room for `n` codes at the non-null `codes`.
            unsafe { *codes.add(i) = code };
            if let Some(e) = error {
                failures.push((i, code, e.to_string()));
            }
        }
        Ok(Rows::new(spec, files.batch, &failures))
    });
    hand_rows(outcome, message)
}

/// The stored rows of the documents (by content) for the spec: only the
/// rows found, in order, in the output; `found` (room for one per
/// document) says which. Null and a message on failure.
///
/// # Safety
/// Pointers as the module doc of the crate says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_cache_get(
    cache: *mut Cache,
    spec: *const u8,
    spec_len: usize,
    docs: *const Documents,
    found: *mut bool,
    message: *mut *mut c_char,
) -> *mut Rows {
    let outcome = catch_panic("rustfx_cache_get", || {
        // SAFETY: a non-null `cache` came from `rustfx_cache_open` and is
        // used from one thread at a time (the caller's contract).
        let cache = unsafe { self::cache(cache) }?;
        // SAFETY: a non-null `docs` came from a `rustfx_documents_*` constructor.
        let docs = unsafe { documents(docs) }?;
        // SAFETY: the caller passes `spec_len` readable bytes at `spec`.
        let spec = unsafe { cache.spec(spec, spec_len) }?;
        if found.is_null() && !docs.is_empty() {
            return Err(Error::invalid_argument("null found"));
        }
        let keys: Vec<DocKey> = docs.slices().into_iter().map(DocKey::of_content).collect();
        let (hit, rows) = cache.cache.get_found(&spec, &keys)?;
        for (i, hit) in hit.into_iter().enumerate() {
            // SAFETY: room for one bool per document at the non-null `found`.
            unsafe { *found.add(i) = hit };
        }
        Ok(Rows::new(spec, rows, &[]))
    });
    hand_rows(outcome, message)
}

/// Extracts every document by the spec and stores its row (replacing
/// what was stored). False and a message on failure.
///
/// # Safety
/// Pointers as the module doc of the crate says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_cache_put(
    cache: *mut Cache,
    spec: *const u8,
    spec_len: usize,
    docs: *const Documents,
    message: *mut *mut c_char,
) -> bool {
    let outcome = catch_panic("rustfx_cache_put", || {
        // SAFETY: a non-null `cache` came from `rustfx_cache_open` and is
        // used from one thread at a time (the caller's contract).
        let cache = unsafe { self::cache(cache) }?;
        // SAFETY: a non-null `docs` came from a `rustfx_documents_*` constructor.
        let docs = unsafe { documents(docs) }?;
        // SAFETY: the caller passes `spec_len` readable bytes at `spec`.
        let spec = unsafe { cache.spec(spec, spec_len) }?;
        let contents = docs.slices();
        let keys: Vec<DocKey> = contents.iter().map(|d| DocKey::of_content(d)).collect();
        let batch = spec.build()?.extract_batch(&contents)?;
        cache.cache.put_many(&spec, &keys, &batch)
    });
    done(outcome, message)
}

/// The content keys (32 bytes each at `digests`) and the rows of an Arrow
/// array of the export's layout (`arrow/export.rs`), one per key, checked
/// whole against `spec`'s output.
///
/// # Safety
/// `digests` holds 32 readable bytes per row; `schema` and `array` are
/// live Arrow C Data structs that describe each other (or null).
unsafe fn keyed_rows(
    spec: &FeatureSpec,
    digests: *const u8,
    schema: *const ArrowSchema,
    array: *const ArrowArray,
) -> Result<(Vec<DocKey>, Batch)> {
    // SAFETY: the caller's contract.
    let (Some(schema), Some(array)) = (unsafe { schema.as_ref() }, unsafe { array.as_ref() })
    else {
        return Err(Error::invalid_argument("a null Arrow schema or array"));
    };
    // SAFETY: both are live and describe each other (the caller's contract).
    let batch = unsafe { import::rows(schema, array, &spec.output()) }?;
    // SAFETY: the caller passes 32 readable bytes per row at `digests`.
    let keys = doc_keys(unsafe { bytes(digests, 32 * batch.rows()) }?);
    Ok((keys, batch))
}

/// Stores rows for the spec made elsewhere by the core (a corpus job's
/// output), under their content keys (32-byte BLAKE3 digests at
/// `digests`, one per row: `rustfx_documents_content_keys`), replacing
/// what was stored, in one transaction. The rows are an Arrow array of the
/// export's layout for the spec's output (`arrow/export.rs`), read (not
/// moved: the caller still releases it) and checked whole (layout, dtype,
/// width, offsets, sorted indices, no null row) before anything is stored:
/// `InvalidArgument` otherwise. False and a message on failure.
///
/// # Safety
/// Pointers as the module doc of the crate says; `schema` and `array` are
/// live Arrow C Data structs.
#[no_mangle]
pub unsafe extern "C" fn rustfx_cache_put_rows(
    cache: *mut Cache,
    spec: *const u8,
    spec_len: usize,
    digests: *const u8,
    schema: *const ArrowSchema,
    array: *const ArrowArray,
    message: *mut *mut c_char,
) -> bool {
    let outcome = catch_panic("rustfx_cache_put_rows", || {
        // SAFETY: a non-null `cache` came from `rustfx_cache_open` and is
        // used from one thread at a time (the caller's contract).
        let cache = unsafe { self::cache(cache) }?;
        // SAFETY: the caller passes `spec_len` readable bytes at `spec`.
        let spec = unsafe { cache.spec(spec, spec_len) }?;
        // SAFETY: the caller's contract is `keyed_rows`'.
        let (keys, batch) = unsafe { keyed_rows(&spec, digests, schema, array) }?;
        cache.cache.put_many(&spec, &keys, &batch)
    });
    done(outcome, message)
}

/// Writes the row digest of each row of an Arrow array of the export's
/// layout for the spec (`rustfx_cache::row_digests`: what filling a cache
/// checks against what the corpus job wrote) to `out`, 32 bytes each, end
/// to end. The other arguments as [`rustfx_cache_put_rows`]'s, checked the
/// same way. False and a message on failure.
///
/// # Safety
/// Pointers as the module doc of the crate says; `32` writable bytes per
/// row at `out`.
#[no_mangle]
pub unsafe extern "C" fn rustfx_row_digests(
    spec: *const u8,
    spec_len: usize,
    digests: *const u8,
    schema: *const ArrowSchema,
    array: *const ArrowArray,
    out: *mut u8,
    message: *mut *mut c_char,
) -> bool {
    let outcome = catch_panic("rustfx_row_digests", || {
        // SAFETY: the caller passes `spec_len` readable bytes at `spec`.
        let spec = FeatureSpec::from_json(unsafe { text(spec, spec_len, "a feature spec") }?)?;
        // SAFETY: the caller's contract is `keyed_rows`'.
        let (keys, batch) = unsafe { keyed_rows(&spec, digests, schema, array) }?;
        // SAFETY: room for 32 bytes per row at `out`.
        unsafe { write_digests(&spec, &keys, &batch, out) }
    });
    done(outcome, message)
}

/// Writes the cache's [`CACHE_STATS`] figures to `stats`: hits, misses,
/// corrupt, evicted, dropped, errors (this handle's), entries, bytes (the
/// cache's, once this handle's queued writes are committed), read_only. False and a
/// message on failure.
///
/// # Safety
/// Pointers as the module doc of the crate says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_cache_stats(
    cache: *mut Cache,
    stats: *mut u64,
    message: *mut *mut c_char,
) -> bool {
    let outcome = catch_panic("rustfx_cache_stats", || {
        // SAFETY: see `cache`.
        let cache = unsafe { self::cache(cache) }?;
        if stats.is_null() {
            return Err(Error::invalid_argument("null stats"));
        }
        let figures = cache.cache.stats()?.figures();
        // SAFETY: room for CACHE_STATS u64s at the non-null `stats`.
        unsafe { ptr::copy_nonoverlapping(figures.as_ptr(), stats, CACHE_STATS) };
        Ok(())
    });
    done(outcome, message)
}

/// Waits until the rows this handle queued are committed. False and the
/// message of the last write, if it failed.
///
/// # Safety
/// Pointers as the module doc of the crate says.
#[no_mangle]
pub unsafe extern "C" fn rustfx_cache_flush(cache: *mut Cache, message: *mut *mut c_char) -> bool {
    let outcome = catch_panic("rustfx_cache_flush", || {
        // SAFETY: see `cache`.
        unsafe { self::cache(cache) }?.cache.flush()
    });
    done(outcome, message)
}
