//! rustfx's feature cache: each document's features, stored under the
//! document's content and the spec that made them, in an SQLite database
//! that several processes share and that survives crashes.
//!
//! An entry's key is two SHA-256 digests: the document's ([`DocKey`]; of
//! its content by default) and the spec's ([`spec_digest`]: of its
//! canonical JSON, which holds every parameter and the output version). So
//! a spec that differs in anything, or a file whose content changed, never
//! finds another's entry. A faster key from the file's metadata (path,
//! device, inode, size, mtime, ctime) is an explicit option,
//! [`CacheKey::Stat`], with its risk: a file rewritten within the
//! timestamps' granularity at the same size is served stale.
//!
//! Every entry carries a checksum of all it stores and of its key; an entry
//! that fails it is deleted and counts as a miss, never served. The store
//! is SQLite in WAL mode: writers in several processes wait for each other
//! (`busy_timeout`), every batch is one transaction, and a process killed
//! mid-write leaves the last committed state. The size is capped: after a
//! batch that takes the entries past `max_bytes`, the least recently used
//! are deleted until they fit in 90% of it ([`CacheOptions::max_bytes`]).
//!
//! ```
//! use rustfx::spec::FeatureSpec;
//! use rustfx_cache::{CacheOptions, FeatureCache};
//! let dir = std::env::temp_dir().join(format!("rustfx-cache-doc-{}", std::process::id()));
//! let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
//! let spec = FeatureSpec::from_json(r#"{"extractor": "byte_histogram"}"#).unwrap();
//! let first = cache.extract(&spec, &[b"abc", b""]).unwrap(); // extracted, stored
//! let again = cache.extract(&spec, &[b"abc", b""]).unwrap(); // read back
//! assert!(again.same_bits(&first));
//! assert_eq!(cache.stats().unwrap().hits, 2);
//! # drop(cache);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod row;
mod store;

use rayon::prelude::*;
use row::{assemble, StoredRow};
use rustfx::extractor::Extractor;
use rustfx::output::Batch;
use rustfx::read::read_file;
use rustfx::sha256::{sha256, Sha256};
use rustfx::spec::FeatureSpec;
use rustfx::{Error, ErrorKind, Result};
use std::borrow::Cow;
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use store::Store;

pub use row::ENTRY_OVERHEAD;

/// The smallest `max_bytes` accepted.
pub const MIN_MAX_BYTES: u64 = 1 << 16;
/// The largest `max_bytes` accepted (SQLite counts in i64).
pub const MAX_MAX_BYTES: u64 = i64::MAX as u64;
/// The default cap: 10 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 10 << 30;
/// The database's file name in the cache's directory.
pub const DB_FILE: &str = "features.sqlite3";

/// How a file's entry is found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CacheKey {
    /// The SHA-256 of the bytes extracted: a changed file is always a
    /// miss. Costs reading and hashing every file.
    #[default]
    Content,
    /// The file's path, device, inode, size, mtime and ctime (and the
    /// `max_bytes` it is read with): no read on a hit. **Risk**: a file
    /// rewritten at the same size within one tick of the file system's
    /// timestamps (a few milliseconds on Linux) keeps all of them, and its
    /// old features are served. Documents given as bytes are keyed by
    /// content whatever this says.
    Stat,
}

impl CacheKey {
    /// Every accepted name.
    pub const NAMES: &'static [&'static str] = &["content", "stat"];

    /// The key named `name` ("content" or "stat").
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "content" => Ok(CacheKey::Content),
            "stat" => Ok(CacheKey::Stat),
            _ => Err(Error::invalid_argument(format!(
                "a feature cache's key must be one of {}, got '{name}'",
                Self::NAMES.join(", ")
            ))),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            CacheKey::Content => "content",
            CacheKey::Stat => "stat",
        }
    }
}

/// How a cache is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheOptions {
    /// The cap on the entries' bytes ([`ENTRY_OVERHEAD`] plus the values of
    /// each), from [`MIN_MAX_BYTES`] to [`MAX_MAX_BYTES`]. After a put that
    /// takes the total past it, the least recently used entries (by their
    /// last hit or put, across every process) are deleted until the total
    /// is at most 90% of it. An entry larger than the cap is not stored.
    /// The database file stays about this size: SQLite reuses the pages
    /// of deleted entries.
    pub max_bytes: u64,
    /// How [`FeatureCache::extract_files`] keys a file.
    pub key: CacheKey,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            max_bytes: DEFAULT_MAX_BYTES,
            key: CacheKey::Content,
        }
    }
}

impl CacheOptions {
    fn check(&self) -> Result<()> {
        if !(MIN_MAX_BYTES..=MAX_MAX_BYTES).contains(&self.max_bytes) {
            return Err(Error::invalid_argument(format!(
                "a feature cache's max_bytes must be from {MIN_MAX_BYTES} to {MAX_MAX_BYTES} \
                 bytes, got {}",
                self.max_bytes
            )));
        }
        Ok(())
    }
}

/// One document's key: a SHA-256 of its content ([`DocKey::of_content`]),
/// or of its file's metadata ([`DocKey::of_file_stat`]). A content key is
/// the file's plain SHA-256, the one corpus extraction writes beside the
/// features.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DocKey(pub [u8; 32]);

impl DocKey {
    /// The content key of `contents`: their SHA-256.
    pub fn of_content(contents: &[u8]) -> DocKey {
        DocKey(sha256(contents))
    }

    /// The stat key of the file at `path` read with `max_bytes`: a SHA-256
    /// of a tagged record of the path, device, inode, size, mtime and ctime
    /// (nanoseconds) and `max_bytes` (a file longer than it is extracted
    /// truncated). It never equals a content key. Errors as reading does
    /// (symlinks followed).
    pub fn of_file_stat(path: &[u8], max_bytes: u64) -> Result<DocKey> {
        let os_path = Path::new(std::ffi::OsStr::from_bytes(path));
        let meta = std::fs::metadata(os_path).map_err(|e| {
            let kind = match e.kind() {
                std::io::ErrorKind::NotFound => ErrorKind::NotFound,
                std::io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
                _ => ErrorKind::Io,
            };
            Error::new(kind, format!("cannot stat {}: {e}", os_path.display()))
        })?;
        let mut h = Sha256::new();
        h.update(b"rustfx-cache stat key 1\0");
        h.update(&(path.len() as u64).to_le_bytes());
        h.update(path);
        for field in [
            meta.dev(),
            meta.ino(),
            meta.size(),
            meta.mtime() as u64,
            meta.mtime_nsec() as u64,
            meta.ctime() as u64,
            meta.ctime_nsec() as u64,
            max_bytes,
        ] {
            h.update(&field.to_le_bytes());
        }
        Ok(DocKey(h.finish()))
    }
}

/// The spec's digest, half of every entry's key: the SHA-256 of its
/// canonical JSON, which holds every parameter (defaults filled in), the
/// output and the output version.
pub fn spec_digest(spec: &FeatureSpec) -> [u8; 32] {
    sha256(spec.to_json().as_bytes())
}

/// What a cache has done and holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Documents found, by this handle.
    pub hits: u64,
    /// Documents not found (corrupt ones included), by this handle.
    pub misses: u64,
    /// Entries that failed their checksum and were deleted, by this handle.
    pub corrupt: u64,
    /// Entries evicted for the cap, by this handle.
    pub evicted: u64,
    /// Entries in the cache (every process's).
    pub entries: u64,
    /// Their bytes, as the cap counts them.
    pub bytes: u64,
}

/// The rows of [`FeatureCache::extract_files`]: one per path (an empty
/// document's for a file that could not be read), and each path's read
/// error.
#[derive(Debug)]
pub struct FilesBatch {
    /// One row per path.
    pub batch: Batch,
    /// `Some` for a path that could not be read (its row is an empty
    /// document's, never stored).
    pub errors: Vec<Option<Error>>,
}

/// A feature cache in a directory (its database, [`DB_FILE`]). Shared by
/// threads (`Sync`) and by processes (SQLite's locks).
pub struct FeatureCache {
    store: Mutex<Store>,
    options: CacheOptions,
    dir: PathBuf,
    hits: AtomicU64,
    misses: AtomicU64,
    corrupt: AtomicU64,
    evicted: AtomicU64,
    /// Built extractors by spec digest: a spec is built once per handle,
    /// and only when something misses.
    extractors: Mutex<HashMap<[u8; 32], Arc<Extractor>>>,
}

impl std::fmt::Debug for FeatureCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeatureCache")
            .field("dir", &self.dir)
            .field("options", &self.options)
            .finish()
    }
}

/// The `Internal` error of a poisoned lock (a panic while it was held).
fn poisoned() -> Error {
    Error::new(
        ErrorKind::Internal,
        "the feature cache's lock is poisoned (a bug in rustfx)",
    )
}

impl FeatureCache {
    /// Opens the cache in `dir`, creating the directory and the database
    /// if missing. `InvalidArgument` for options out of range, or a
    /// database that is not a feature cache of this format; `Io` for what
    /// the file system or SQLite refuses.
    pub fn open(dir: impl AsRef<Path>, options: CacheOptions) -> Result<FeatureCache> {
        options.check()?;
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!(
                    "cannot create the feature cache's directory {}: {e}",
                    dir.display()
                ),
            )
        })?;
        let store = Store::open(&dir.join(DB_FILE))?;
        Ok(FeatureCache {
            store: Mutex::new(store),
            options,
            dir,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            corrupt: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            extractors: Mutex::new(HashMap::new()),
        })
    }

    /// The options it was opened with.
    pub fn options(&self) -> CacheOptions {
        self.options
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The row of `spec` for `key`, if stored: a batch of one row.
    pub fn get(&self, spec: &FeatureSpec, key: &DocKey) -> Result<Option<Batch>> {
        let mut rows = self.get_many(spec, std::slice::from_ref(key))?;
        Ok(rows.pop().flatten())
    }

    /// The rows of `spec` for `keys`, each a batch of one row or `None`:
    /// one read transaction, then one write transaction that marks the hits
    /// used and deletes entries that failed their checksum.
    pub fn get_many(&self, spec: &FeatureSpec, keys: &[DocKey]) -> Result<Vec<Option<Batch>>> {
        let digest = spec_digest(spec);
        let output = spec.output();
        let found = self.lookup(&digest, spec, keys)?;
        Ok(found
            .iter()
            .map(|row| row.as_ref().map(|r| assemble(output, std::iter::once(r))))
            .collect())
    }

    /// [`get_many`](Self::get_many) as one batch: whether each key was
    /// found, and the rows found, in order, end to end.
    pub fn get_found(&self, spec: &FeatureSpec, keys: &[DocKey]) -> Result<(Vec<bool>, Batch)> {
        let found = self.lookup(&spec_digest(spec), spec, keys)?;
        let hit = found.iter().map(Option::is_some).collect();
        Ok((hit, assemble(spec.output(), found.iter().flatten())))
    }

    /// The stored rows for `keys` (checked), counting hits and misses.
    fn lookup(
        &self,
        digest: &[u8; 32],
        spec: &FeatureSpec,
        keys: &[DocKey],
    ) -> Result<Vec<Option<StoredRow>>> {
        let mut store = self.store.lock().map_err(|_| poisoned())?;
        let found = store.get_many(digest, spec.output(), keys)?;
        drop(store);
        let hits = found.rows.iter().filter(|r| r.is_some()).count() as u64;
        self.hits.fetch_add(hits, Ordering::Relaxed);
        self.misses
            .fetch_add(keys.len() as u64 - hits, Ordering::Relaxed);
        self.corrupt.fetch_add(found.corrupt, Ordering::Relaxed);
        Ok(found.rows)
    }

    /// Whether an entry is stored under `digest` and `key` (not checked,
    /// not marked used).
    fn contains(&self, digest: &[u8; 32], key: &DocKey) -> Result<bool> {
        self.store
            .lock()
            .map_err(|_| poisoned())?
            .contains(digest, key)
    }

    /// Stores `row` (a batch of one row of `spec`'s output) under `key`.
    pub fn put(&self, spec: &FeatureSpec, key: &DocKey, row: &Batch) -> Result<()> {
        self.put_many(spec, std::slice::from_ref(key), row)
    }

    /// Stores the rows of `rows` (a batch of `spec`'s output), row `i`
    /// under `keys[i]`, in one transaction, replacing what was there; then
    /// evicts if the cap is passed. `InvalidArgument` if the batch is not
    /// of `spec`'s output or has another number of rows.
    pub fn put_many(&self, spec: &FeatureSpec, keys: &[DocKey], rows: &Batch) -> Result<()> {
        let output = spec.output();
        let shape = (rows.layout(), rows.values().dtype());
        if shape != (output.layout, output.dtype) || rows.rows() != keys.len() {
            return Err(Error::invalid_argument(format!(
                "a feature cache stores {} rows of {} {} for {}, got {} rows of {} {}",
                keys.len(),
                output.layout.name(),
                output.dtype.name(),
                spec.extractor(),
                rows.rows(),
                shape.0.name(),
                shape.1.name()
            )));
        }
        let stored: Vec<StoredRow> = (0..keys.len()).map(|i| StoredRow::of(rows, i)).collect();
        if let Some(bad) = stored.iter().find(|r| !r.fits(output)) {
            return Err(Error::invalid_argument(format!(
                "a feature cache stores rows of {}'s output, got a row of width {}",
                spec.extractor(),
                bad.width
            )));
        }
        self.store_rows(&spec_digest(spec), keys.iter().zip(&stored))
    }

    fn store_rows<'a>(
        &self,
        digest: &[u8; 32],
        rows: impl Iterator<Item = (&'a DocKey, &'a StoredRow)>,
    ) -> Result<()> {
        let mut store = self.store.lock().map_err(|_| poisoned())?;
        let evicted = store.put_many(digest, rows, self.options.max_bytes)?;
        self.evicted.fetch_add(evicted, Ordering::Relaxed);
        Ok(())
    }

    /// `spec`'s extractor, built once per handle.
    fn extractor(&self, digest: &[u8; 32], spec: &FeatureSpec) -> Result<Arc<Extractor>> {
        let mut built = self.extractors.lock().map_err(|_| poisoned())?;
        if let Some(extractor) = built.get(digest) {
            return Ok(extractor.clone());
        }
        let extractor = Arc::new(spec.build()?);
        built.insert(*digest, extractor.clone());
        Ok(extractor)
    }

    /// `spec`'s rows of `docs`, as `spec.build()?.extract_batch(docs)` gives
    /// them, bit for bit: each document hashed (on rayon's threads) and
    /// looked up by its content, the misses extracted in one batch and
    /// stored in one transaction.
    pub fn extract(&self, spec: &FeatureSpec, docs: &[&[u8]]) -> Result<Batch> {
        let keys: Vec<Option<DocKey>> = docs
            .par_iter()
            .map(|d| Some(DocKey::of_content(d)))
            .collect();
        let read = |i: usize| Read {
            contents: Cow::Borrowed(docs[i]),
            error: None,
            store: true,
        };
        self.extract_keyed(spec, &keys, read)
            .map(|files| files.batch)
    }

    /// `spec`'s rows of the files at `paths`, each read by the core's rules
    /// (`rustfx::read::read_file`: at most `max_bytes`, symlinks followed):
    /// what extracting the contents read gives, bit for bit. A file that
    /// cannot be read is an empty document, its error in
    /// [`FilesBatch::errors`], and never stored. With [`CacheKey::Content`]
    /// every file is read and hashed (in parallel, on rayon's pool); with [`CacheKey::Stat`] only the
    /// misses are read, and a file whose metadata changed while it was read
    /// is extracted but not stored.
    pub fn extract_files(
        &self,
        spec: &FeatureSpec,
        paths: &[&[u8]],
        max_bytes: u64,
    ) -> Result<FilesBatch> {
        match self.options.key {
            CacheKey::Content => {
                // Read, hashed and probed on rayon's threads, as the core
                // extracts: a hit's contents are dropped at once (holding
                // a batch of megabyte files until the lookup made a cached
                // epoch 2.5 times slower), a miss's are kept to extract.
                let digest = spec_digest(spec);
                let (read, keys): (Vec<Probed>, Vec<Option<DocKey>>) = paths
                    .par_iter()
                    .map(|p| match read_file(p, max_bytes) {
                        Ok(contents) => {
                            let key = DocKey::of_content(&contents);
                            let stored = self.contains(&digest, &key).unwrap_or(false);
                            (Ok((!stored).then_some(contents)), Some(key))
                        }
                        Err(e) => (Err(e), None),
                    })
                    .unzip();
                self.extract_keyed(spec, &keys, |i| match &read[i] {
                    Ok(Some(contents)) => Read::of(Ok(Cow::Borrowed(contents.as_slice())), true),
                    // Stored when probed, gone (evicted, damaged) by the
                    // lookup: read again, and stored only if unchanged.
                    Ok(None) => {
                        let again = read_file(paths[i], max_bytes);
                        let same =
                            matches!(&again, Ok(c) if Some(DocKey::of_content(c)) == keys[i]);
                        Read::of(again.map(Cow::Owned), same)
                    }
                    Err(e) => Read::of(Err(e.clone()), false),
                })
            }
            CacheKey::Stat => {
                let keys: Vec<Option<DocKey>> = paths
                    .iter()
                    .map(|p| DocKey::of_file_stat(p, max_bytes).ok())
                    .collect();
                self.extract_keyed(spec, &keys, |i| {
                    let contents = read_file(paths[i], max_bytes).map(Cow::Owned);
                    // Changed while read: extracted, but not stored.
                    let same = DocKey::of_file_stat(paths[i], max_bytes).ok() == keys[i];
                    Read::of(contents, same)
                })
            }
        }
    }

    /// Looks up the documents that have a key, reads the others and the
    /// misses with `read(i)`, extracts them in one batch, stores those that
    /// have a key and that `read` says to, and assembles every row in order.
    fn extract_keyed<'a>(
        &self,
        spec: &FeatureSpec,
        keys: &[Option<DocKey>],
        read: impl Fn(usize) -> Read<'a>,
    ) -> Result<FilesBatch> {
        let digest = spec_digest(spec);
        let output = spec.output();
        let keyed: Vec<usize> = (0..keys.len()).filter(|&i| keys[i].is_some()).collect();
        let lookup_keys: Vec<DocKey> = keyed.iter().filter_map(|&i| keys[i]).collect();
        let mut rows: Vec<Option<StoredRow>> = vec![None; keys.len()];
        for (i, row) in keyed.iter().zip(self.lookup(&digest, spec, &lookup_keys)?) {
            rows[*i] = row;
        }
        let mut errors: Vec<Option<Error>> = vec![None; keys.len()];
        let missing: Vec<usize> = (0..keys.len()).filter(|&i| rows[i].is_none()).collect();
        if missing.is_empty() {
            let batch = assemble(output, rows.iter().flatten());
            return Ok(FilesBatch { batch, errors });
        }
        let reads: Vec<Read> = missing.iter().map(|&i| read(i)).collect();
        let docs: Vec<&[u8]> = reads.iter().map(|r| r.contents.as_ref()).collect();
        let fresh = self.extractor(&digest, spec)?.extract_batch(&docs)?;
        let mut to_store = Vec::new();
        for ((j, &i), read) in missing.iter().enumerate().zip(reads) {
            let row = StoredRow::of(&fresh, j);
            match (keys[i], read.store && read.error.is_none()) {
                (Some(key), true) => to_store.push((key, row.clone())),
                _ => errors[i] = read.error,
            }
            rows[i] = Some(row);
        }
        self.store_rows(&digest, to_store.iter().map(|(k, r)| (k, r)))?;
        let batch = if missing.len() == keys.len() {
            fresh
        } else {
            assemble(output, rows.iter().flatten())
        };
        Ok(FilesBatch { batch, errors })
    }

    /// What the cache has done (this handle) and holds (every process).
    pub fn stats(&self) -> Result<Stats> {
        let store = self.store.lock().map_err(|_| poisoned())?;
        let (entries, bytes) = store.totals()?;
        Ok(Stats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            corrupt: self.corrupt.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
            entries,
            bytes,
        })
    }
}

/// A file read and probed for [`FeatureCache::extract_files`]: its
/// contents if it was not stored, `None` if it was, or the read's error.
type Probed = Result<Option<Vec<u8>>>;

/// A document read for extraction: its contents (empty if the read
/// failed), the read's error, and whether its row may be stored.
struct Read<'a> {
    contents: Cow<'a, [u8]>,
    error: Option<Error>,
    store: bool,
}

impl<'a> Read<'a> {
    fn of(contents: Result<Cow<'a, [u8]>>, store: bool) -> Read<'a> {
        match contents {
            Ok(contents) => Read {
                contents,
                error: None,
                store,
            },
            Err(e) => Read {
                contents: Cow::Borrowed(&[]),
                error: Some(e),
                store: false,
            },
        }
    }
}

#[cfg(test)]
mod tests;
