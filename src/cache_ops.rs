//! The feature cache in the extractor ops: an op given a `cache_dir` reads
//! each file's row from the process's cache of that directory
//! (`rustfx_cache::shared`), extracts the misses and queues them to the
//! cache's writer thread. So tf.data's map threads look up in parallel,
//! with no Python and no GIL per batch, and the kernels stay stateless: the
//! cache is the process's, keyed by directory and options, not the
//! kernel's.
//!
//! A SavedModel of a graph with a cached extraction holds the cache's
//! directory and options as the op's attrs. It never depends on them to
//! serve: a kernel whose directory is missing, or does not open as a
//! feature cache, extracts uncached and prints why once. Bad options (a
//! key or cap out of range) are refused when the kernel is built, with the
//! core's message. A cache that cannot be written (read-only storage) is
//! read: hits served, misses extracted and not stored (said once by the
//! core).
//!
//! A tf.data service worker runs the ops with the same attrs: it opens the
//! cache's directory on its own node. Where that directory is missing
//! there, the kernel neither creates it (`shared(.., create: false)`) nor
//! fails: it extracts uncached and says so once. `rustfx.FeatureCache`'s
//! stats op, run where the cache is made, creates the directory.

use crate::bridge::{documents, ffi, guard, BridgeResult};
use crate::part::Part;
use rustfx::read::{check_max_bytes, OnError};
use rustfx::spec::FeatureSpec;
use rustfx::{Error, ErrorKind, Result};
use rustfx_cache::{
    CacheKey, CacheOptions, FeatureCache, FileThreads, PreparedSpec, Stats, DEFAULT_MAX_BYTES,
};
use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex, Once};

/// An extractor op's cache: the process's cache of its directory (`None`
/// when it has none, or it could not be opened), the spec, and how files
/// are read.
pub struct OpCache {
    cache: Option<Arc<FeatureCache>>,
    spec: PreparedSpec,
    max_bytes: u64,
    on_error: OnError,
}

/// The options of the `cache_key`, `cache_max_bytes` (-1: the core's
/// default cap) and `cache_read_only` attrs, checked.
fn options(key: &str, max_bytes: i64, read_only: bool) -> Result<CacheOptions> {
    let options = CacheOptions {
        key: CacheKey::from_name(key)?,
        max_bytes: if max_bytes < 0 {
            DEFAULT_MAX_BYTES
        } else {
            max_bytes as u64
        },
        read_only,
    };
    options.check()?;
    Ok(options)
}

pub fn new_op_cache(
    spec: &str,
    dir: &[u8],
    key: &str,
    max_bytes: i64,
    read_only: bool,
    read_max_bytes: i64,
    on_error: ffi::OnError,
) -> BridgeResult<Box<OpCache>> {
    guard("new_op_cache", || {
        let options = options(key, max_bytes, read_only)?;
        let spec = PreparedSpec::new(FeatureSpec::from_json(spec)?);
        let read_max_bytes = check_max_bytes(read_max_bytes)?;
        let on_error = on_error.to_core()?;
        let cache = if dir.is_empty() {
            None
        } else {
            let path = Path::new(std::ffi::OsStr::from_bytes(dir));
            match rustfx_cache::shared(path, options, false) {
                Ok(cache) => {
                    flush_at_exit();
                    Some(cache)
                }
                Err(e) => {
                    warn_once(path, &e);
                    None
                }
            }
        };
        Ok(Box::new(OpCache {
            cache,
            spec,
            max_bytes: read_max_bytes,
            on_error,
        }))
    })
}

/// Prints, once per directory, why an op extracts without its cache.
fn warn_once(dir: &Path, e: &Error) {
    static WARNED: Mutex<Option<HashSet<Vec<u8>>>> = Mutex::new(None);
    let mut warned = WARNED.lock().unwrap_or_else(|p| p.into_inner());
    if warned
        .get_or_insert_with(HashSet::new)
        .insert(dir.as_os_str().as_bytes().to_vec())
    {
        eprintln!(
            "rustfx: extracting without the feature cache {}: {e}",
            dir.display()
        );
    }
}

/// Commits every cache's queued rows when the process exits (rows queued
/// by the last batches of a run would be lost otherwise).
fn flush_at_exit() {
    static REGISTER: Once = Once::new();
    extern "C" fn flush() {
        let _ = std::panic::catch_unwind(rustfx_cache::flush_shared);
    }
    REGISTER.call_once(|| {
        // SAFETY: `flush` is an `extern "C" fn()` that never unwinds (it
        // catches panics); atexit only stores it.
        #[allow(unsafe_code)]
        unsafe {
            libc::atexit(flush);
        }
    });
}

impl OpCache {
    pub fn active(&self) -> bool {
        self.cache.is_some()
    }

    pub fn extract_files(&self, paths: &ffi::DocumentChunk) -> BridgeResult<Box<Part>> {
        guard("extract_files", || {
            let cache = self.cache.as_ref().ok_or_else(|| {
                Error::new(ErrorKind::Internal, "no feature cache (a bug in rustfx)")
            })?;
            let files = cache.extract_files_on(
                &self.spec,
                &documents(paths),
                self.max_bytes,
                &OpFileThreads,
            )?;
            let failed = match self.on_error {
                OnError::Raise => files
                    .errors
                    .into_iter()
                    .enumerate()
                    .find_map(|(i, e)| e.map(|e| (i, e))),
                OnError::Empty => None,
            };
            Ok(Box::new(Part::failing(files.batch, failed)))
        })
    }
}

/// A cached call's files on the op library's threads (src/op_threads.rs):
/// a thread per core (or `RUSTFX_NUM_THREADS`), fewer when other calls
/// are running, each taking the next file as it frees up, as uncached
/// extraction takes them.
struct OpFileThreads;

impl FileThreads for OpFileThreads {
    fn run(&self, work: &(dyn Fn() + Sync)) {
        let threads = crate::op_threads::default_threads();
        crate::op_threads::run_chunks(threads, threads, &|_| work());
    }
}

/// The figures of the process's cache of `dir` with these options
/// (`rustfx_cache::Stats::NAMES`' order), its queued rows committed first;
/// the cache is opened (and its directory created) if it was not. For
/// Rustfx>FeatureCacheStats, which `rustfx.FeatureCache` runs when it is
/// made: so this fails only for bad options. A cache that cannot be
/// opened (damaged and not set aside, a path that is not a directory)
/// gives the figures of none, its failure in `errors`, said once: the ops
/// extract uncached, and training goes on.
pub fn feature_cache_stats(
    dir: &[u8],
    key: &str,
    max_bytes: i64,
    read_only: bool,
) -> BridgeResult<Vec<u64>> {
    guard("feature_cache_stats", || {
        let options = options(key, max_bytes, read_only)?;
        let path = Path::new(std::ffi::OsStr::from_bytes(dir));
        let stats = match rustfx_cache::shared(path, options, true) {
            Ok(cache) => {
                flush_at_exit();
                cache
                    .stats()
                    .unwrap_or_else(|e| unopened(path, &e, read_only))
            }
            Err(e) => unopened(path, &e, read_only),
        };
        Ok(stats.figures().to_vec())
    })
}

/// The figures of a cache that could not be opened or read (`e`, said
/// once): its failure counted, nothing else.
fn unopened(dir: &Path, e: &Error, read_only: bool) -> Stats {
    warn_once(dir, e);
    Stats {
        errors: 1,
        read_only,
        ..Stats::default()
    }
}
