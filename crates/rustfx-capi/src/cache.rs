//! The feature cache through the C ABI (`rustfx_cache::FeatureCache`),
//! for `python/rustfx_core/cache.py`.
//!
//! [`rustfx_cache_open`] returns a handle freed with [`rustfx_cache_free`].
//! Every call names its spec by its JSON text; the handle parses each spec
//! once and keeps it, so a cached epoch builds no extractor. Rows come back
//! as an [`Output`] (the one `rustfx_extract` returns, read with
//! `rustfx_output_array`), so Python converts cached and extracted rows
//! with the same code. Rows are stored from the core's own extraction,
//! or, by [`rustfx_cache_put_rows`], from rows the core extracted
//! elsewhere (a corpus job's shards), checked whole against the spec
//! before they are stored; [`rustfx_row_digests`] gives the digest of
//! each such row that a corpus job writes and the fill checks.

use crate::{bytes, output_of, report, text, Documents, Output};
use rustfx::error::catch_panic;
use rustfx::output::{Batch, DType, Layout, Strings, Values};
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
/// dropped, errors, entries, bytes.
pub const CACHE_STATS: usize = rustfx_cache::Stats::NAMES.len();

impl Cache {
    /// The spec of `len` bytes of JSON at `data`, parsed once per handle.
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
unsafe fn cache<'a>(cache: *mut Cache) -> Result<&'a mut Cache> {
    // SAFETY: a non-null `cache` came from `rustfx_cache_open` and the
    // caller does not use it from two threads at once.
    unsafe { cache.as_mut() }.ok_or_else(|| Error::invalid_argument("null feature cache"))
}

/// `documents` as a reference.
unsafe fn documents<'a>(documents: *const Documents) -> Result<&'a Documents> {
    // SAFETY: a non-null `documents` came from `rustfx_documents_new`.
    unsafe { documents.as_ref() }.ok_or_else(|| Error::invalid_argument("null documents"))
}

/// A boxed output, or null and the message.
fn hand_output(outcome: Result<Output>, message: *mut *mut c_char) -> *mut Output {
    match outcome {
        Ok(output) => Box::into_raw(Box::new(output)),
        Err(e) => {
            report(&e, message);
            ptr::null_mut()
        }
    }
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

/// Opens (creating) the feature cache in `directory` (`directory_len`
/// bytes, a path), capped at `*max_bytes` (null: the core's default, so no
/// other language repeats it), keyed by `key` ("content" or "stat",
/// `key_len` bytes). Null and the core's message if refused.
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
    message: *mut *mut c_char,
) -> *mut Cache {
    let opened = catch_panic("rustfx_cache_open", || {
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: the caller passes `directory_len` and `key_len` readable bytes.
        let directory = unsafe { bytes(directory, directory_len) }?;
        let key = CacheKey::from_name(unsafe { text(key, key_len, "a cache key") }?)?;
        let dir = std::path::Path::new(std::ffi::OsStr::from_bytes(directory));
        // SAFETY: a non-null `max_bytes` points to a readable u64.
        let max_bytes = unsafe { max_bytes.as_ref() }
            .copied()
            .unwrap_or(CacheOptions::default().max_bytes);
        let cache = FeatureCache::open(dir, CacheOptions { max_bytes, key })?;
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
) -> *mut Output {
    let outcome = catch_panic("rustfx_cache_extract", || {
        // SAFETY: see `cache`, `documents` and `Cache::spec`.
        let cache = unsafe { self::cache(cache) }?;
        let docs = unsafe { documents(docs) }?;
        let spec = unsafe { cache.spec(spec, spec_len) }?;
        let contents: Vec<&[u8]> = docs.contents.iter().map(Vec::as_slice).collect();
        Ok(output_of(cache.cache.extract(&spec, &contents)?))
    });
    hand_output(outcome, message)
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
) -> *mut Output {
    let outcome = catch_panic("rustfx_cache_extract_files", || {
        // SAFETY: see `cache` and `Cache::spec`; the caller passes
        // `paths_len` bytes at `paths` and `n` ends at `path_ends`.
        let cache = unsafe { self::cache(cache) }?;
        let spec = unsafe { cache.spec(spec, spec_len) }?;
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
        for (i, error) in files.errors.iter().enumerate() {
            let code = error.as_ref().map_or(0, |e| e.kind().status_code());
            // SAFETY: room for `n` codes at the non-null `codes`.
            unsafe { *codes.add(i) = code };
        }
        Ok(output_of(files.batch))
    });
    hand_output(outcome, message)
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
) -> *mut Output {
    let outcome = catch_panic("rustfx_cache_get", || {
        // SAFETY: see `cache`, `documents` and `Cache::spec`.
        let cache = unsafe { self::cache(cache) }?;
        let docs = unsafe { documents(docs) }?;
        let spec = unsafe { cache.spec(spec, spec_len) }?;
        if found.is_null() && !docs.contents.is_empty() {
            return Err(Error::invalid_argument("null found"));
        }
        let keys: Vec<DocKey> = docs
            .contents
            .iter()
            .map(|d| DocKey::of_content(d))
            .collect();
        let (hit, rows) = cache.cache.get_found(&spec, &keys)?;
        for (i, hit) in hit.into_iter().enumerate() {
            // SAFETY: room for one bool per document at the non-null `found`.
            unsafe { *found.add(i) = hit };
        }
        Ok(output_of(rows))
    });
    hand_output(outcome, message)
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
        // SAFETY: see `cache`, `documents` and `Cache::spec`.
        let cache = unsafe { self::cache(cache) }?;
        let docs = unsafe { documents(docs) }?;
        let spec = unsafe { cache.spec(spec, spec_len) }?;
        let contents: Vec<&[u8]> = docs.contents.iter().map(Vec::as_slice).collect();
        let keys: Vec<DocKey> = contents.iter().map(|d| DocKey::of_content(d)).collect();
        let batch = spec.build()?.extract_batch(&contents)?;
        cache.cache.put_many(&spec, &keys, &batch)
    });
    done(outcome, message)
}

/// `len` values of `T` at `data` (null allowed when `len` is 0), copied.
unsafe fn copied<T: Copy>(data: *const T, len: usize, what: &str) -> Result<Vec<T>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if data.is_null() {
        return Err(Error::invalid_argument(format!(
            "null {what} with a length"
        )));
    }
    // SAFETY: the caller passes `len` readable values at `data`.
    Ok(unsafe { std::slice::from_raw_parts(data, len) }.to_vec())
}

/// Rows of the spec's output handed in as buffers (a corpus job's, or
/// what it is given to check), and their documents' content keys.
struct RowBuffers {
    rows: usize,
    digests: *const u8,
    values: *const u8,
    values_len: usize,
    string_ends: *const u64,
    string_count: usize,
    row_ends: *const u64,
    indices: *const u64,
    index_count: usize,
}

impl RowBuffers {
    /// The keys and the batch, checked whole against `spec`'s output.
    ///
    /// # Safety
    /// The lengths at each pointer, as [`rustfx_cache_put_rows`] says.
    unsafe fn batch(&self, spec: &FeatureSpec) -> Result<(Vec<DocKey>, Batch)> {
        let rows = self.rows;
        // SAFETY: the caller passes the lengths above at each pointer.
        let digest_bytes = unsafe { bytes(self.digests, rows.saturating_mul(32)) }?;
        let value_bytes = unsafe { bytes(self.values, self.values_len) }?;
        let output = spec.output();
        let values = match output.dtype {
            DType::String => Values::String(Strings {
                bytes: value_bytes.to_vec(),
                ends: unsafe { copied(self.string_ends, self.string_count, "string ends") }?,
            }),
            dtype => Values::from_host_bytes(dtype, value_bytes)?,
        };
        let row_ends = || unsafe { copied(self.row_ends, rows, "row ends") };
        let batch = match output.layout {
            Layout::Dense => Batch::Dense {
                rows,
                width: output.width.unwrap_or(0),
                values,
            },
            Layout::Ragged => Batch::Ragged {
                values,
                row_ends: row_ends()?,
            },
            Layout::Sparse => Batch::Sparse {
                width: output.width.unwrap_or(0),
                indices: unsafe { copied(self.indices, self.index_count, "indices") }?,
                values,
                row_ends: row_ends()?,
            },
        };
        batch.check(&output, rows)?;
        let keys = digest_bytes
            .chunks_exact(32)
            .map(|d| DocKey(d.try_into().expect("chunks of 32")))
            .collect();
        Ok((keys, batch))
    }
}

/// Stores `rows` documents' rows for the spec, made elsewhere by the core
/// (a corpus job's output), under their content keys (`rows` BLAKE3
/// digests of 32 bytes at `digests`, `rustfx_documents_content_keys`),
/// replacing what was stored, in one transaction. The rows in the layout of
/// the spec's output:
/// - `values`: `values_len` bytes, the values in native byte order (strings:
///   their bytes end to end, and `string_count` ends at `string_ends`);
/// - `row_ends`: `rows` ends (ragged and sparse; null for dense);
/// - `indices`: one column per value (sparse; else null and 0).
///
/// Checked whole against the spec (layout, dtype, width, ends, sorted
/// indices) before anything is stored: `InvalidArgument` otherwise. False
/// and a message on failure.
///
/// # Safety
/// Pointers as the module doc of the crate says.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rustfx_cache_put_rows(
    cache: *mut Cache,
    spec: *const u8,
    spec_len: usize,
    rows: usize,
    digests: *const u8,
    values: *const u8,
    values_len: usize,
    string_ends: *const u64,
    string_count: usize,
    row_ends: *const u64,
    indices: *const u64,
    index_count: usize,
    message: *mut *mut c_char,
) -> bool {
    let buffers = RowBuffers {
        rows,
        digests,
        values,
        values_len,
        string_ends,
        string_count,
        row_ends,
        indices,
        index_count,
    };
    let outcome = catch_panic("rustfx_cache_put_rows", || {
        // SAFETY: see `cache` and `Cache::spec`; the caller passes the
        // lengths of `RowBuffers::batch`.
        let cache = unsafe { self::cache(cache) }?;
        let spec = unsafe { cache.spec(spec, spec_len) }?;
        let (keys, batch) = unsafe { buffers.batch(&spec) }?;
        cache.cache.put_many(&spec, &keys, &batch)
    });
    done(outcome, message)
}

/// Writes the row digest of each of `rows` documents' rows for the spec
/// (`rustfx_cache::row_digests`: what a corpus job writes beside a row and
/// filling a cache checks) to `out`, 32 bytes each, end to end. The other
/// arguments as [`rustfx_cache_put_rows`]'s, checked the same way. False
/// and a message on failure.
///
/// # Safety
/// Pointers as the module doc of the crate says; `32 * rows` writable
/// bytes at `out`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rustfx_row_digests(
    spec: *const u8,
    spec_len: usize,
    rows: usize,
    digests: *const u8,
    values: *const u8,
    values_len: usize,
    string_ends: *const u64,
    string_count: usize,
    row_ends: *const u64,
    indices: *const u64,
    index_count: usize,
    out: *mut u8,
    message: *mut *mut c_char,
) -> bool {
    let buffers = RowBuffers {
        rows,
        digests,
        values,
        values_len,
        string_ends,
        string_count,
        row_ends,
        indices,
        index_count,
    };
    let outcome = catch_panic("rustfx_row_digests", || {
        // SAFETY: the caller passes `spec_len` bytes and the lengths of
        // `RowBuffers::batch`.
        let spec = FeatureSpec::from_json(unsafe { text(spec, spec_len, "a feature spec") }?)?;
        let (keys, batch) = unsafe { buffers.batch(&spec) }?;
        let found = rustfx_cache::row_digests(&spec, &keys, &batch)?;
        if out.is_null() && rows > 0 {
            return Err(Error::invalid_argument("null row digests"));
        }
        for (i, digest) in found.iter().enumerate() {
            // SAFETY: room for 32 * rows bytes at the non-null `out`.
            unsafe { ptr::copy_nonoverlapping(digest.as_ptr(), out.add(32 * i), 32) };
        }
        Ok(())
    });
    done(outcome, message)
}

/// Writes the cache's [`CACHE_STATS`] figures to `stats`: hits, misses,
/// corrupt, evicted, dropped, errors (this handle's), entries, bytes (the
/// cache's, once this handle's queued writes are committed). False and a
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
