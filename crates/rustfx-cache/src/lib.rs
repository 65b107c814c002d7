//! rustfx's feature cache: each document's features, stored under the
//! document's content and the spec that made them, in an SQLite database
//! that several processes share and that survives crashes.
//!
//! An entry's key is two BLAKE3 digests (src/keys.rs): the document's
//! ([`DocKey`]; of its content by default) and the spec's ([`spec_digest`]:
//! of its canonical JSON, which holds every parameter and the output
//! version, and of the keys' scheme). So
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
//! Lookups only read, on a connection per thread that looks up at once:
//! hits never take SQLite's write lock. Misses are stored, and hits marked
//! used, by the handle's writer thread in batched transactions
//! (src/writer.rs): extraction never waits for a write, a full queue drops
//! entries, and a write that fails is counted and printed once. A handle
//! reads its own queued writes; [`FeatureCache::flush`] waits for them to
//! be committed (dropping the handle does too). A lookup that fails in
//! [`FeatureCache::extract`] or [`FeatureCache::extract_files`] is a miss,
//! counted the same way: the cache is an accelerator, never a reason for
//! extraction to stop or to give other rows.
//!
//! ```
//! use rustfx::spec::FeatureSpec;
//! use rustfx_cache::{CacheOptions, FeatureCache};
//! let dir = std::env::temp_dir().join(format!("rustfx-cache-doc-{}", std::process::id()));
//! let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
//! let spec = FeatureSpec::from_json(r#"{"extractor": "byte_histogram"}"#).unwrap();
//! let first = cache.extract(&spec, &[b"abc", b""]).unwrap(); // extracted, queued
//! cache.flush().unwrap(); // committed
//! let again = cache.extract(&spec, &[b"abc", b""]).unwrap(); // read back
//! assert!(again.same_bits(&first));
//! assert_eq!(cache.stats().unwrap().hits, 2);
//! # drop(cache);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```
#![deny(missing_docs)]
// One audited exception: src/store/persist_wal.rs, one SQLite file control
// that rusqlite has no safe call for.
#![deny(unsafe_code)]

mod buffers;
mod files;
mod keys;
mod options;
mod row;
mod shared;
mod store;
mod threads;
mod writer;

use row::{assemble, StoredRow};
use rustfx::extractor::Extractor;
use rustfx::output::{Batch, OutputSpec};
use rustfx::spec::FeatureSpec;
use rustfx::{Error, ErrorKind, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use store::{Access, Opened, Store, Write};
use writer::Writer;

pub use files::{FilesBatch, PreparedSpec};
pub use keys::{spec_digest, CacheKey, DocKey, KEY_SCHEME};
pub use options::{CacheOptions, Stats};
pub use row::{ENTRY_OVERHEAD, ROW_DIGEST_CONTEXT};
pub use shared::{flush_shared, shared};
pub use threads::{CallingThread, FileThreads, RayonThreads};
pub use writer::QUEUE_BYTES;

/// The smallest `max_bytes` accepted.
pub const MIN_MAX_BYTES: u64 = 1 << 16;
/// The largest `max_bytes` accepted (SQLite counts in i64).
pub const MAX_MAX_BYTES: u64 = i64::MAX as u64;
/// The default cap: 10 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 10 << 30;
/// The database's file name in the cache's directory.
pub const DB_FILE: &str = "features.sqlite3";

/// Idle reading connections kept per handle (one per thread that looks up
/// at once; more are opened as needed and closed after use).
const IDLE_READERS: usize = 4;

/// A feature cache in a directory (its database, [`DB_FILE`]). Shared by
/// threads (`Sync`: every method may be called from any thread at once)
/// and by processes (SQLite's locks).
pub struct FeatureCache {
    options: CacheOptions,
    dir: PathBuf,
    db: PathBuf,
    /// How reading connections open the database (read-only caches: the
    /// way the first one could).
    access: Access,
    readers: Mutex<Vec<Store>>,
    /// Idle (no thread) when the cache is read-only.
    writer: Writer,
    hits: AtomicU64,
    misses: AtomicU64,
    corrupt: AtomicU64,
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
    /// the file system or SQLite refuses. A database SQLite finds damaged
    /// is moved aside and a new one started, counted in `errors` and
    /// printed ([`Store::open_replacing_damaged`]). A cache that cannot be
    /// written (a read-only file system, no permission), or opened with
    /// [`CacheOptions::read_only`], is opened to read only: its entries
    /// are served, nothing is stored (said once per directory when it was
    /// not asked for; `NotFound` when it holds no database to read).
    pub fn open(dir: impl AsRef<Path>, options: CacheOptions) -> Result<FeatureCache> {
        FeatureCache::open_waiting(dir, options, store::BUSY_TIMEOUT)
    }

    /// [`FeatureCache::open`] whose writes wait `busy` for another's lock
    /// (the tests' shorter timeout).
    pub(crate) fn open_waiting(
        dir: impl AsRef<Path>,
        options: CacheOptions,
        busy: std::time::Duration,
    ) -> Result<FeatureCache> {
        options.check()?;
        let dir = dir.as_ref().to_path_buf();
        let db = dir.join(DB_FILE);
        let name = dir.display().to_string();
        let opened = if options.read_only {
            Opened::NotWritable(None)
        } else {
            std::fs::create_dir_all(&dir).map_err(|e| {
                Error::new(
                    ErrorKind::Io,
                    format!("cannot create the feature cache's directory {name}: {e}"),
                )
            })?;
            Store::open_replacing_damaged(&db, busy)?
        };
        let (writer, access, reader) = match opened {
            Opened::Writable(store, replaced) => {
                let writer = Writer::start(store, options.max_bytes, &name)?;
                if let Some(note) = replaced {
                    eprintln!("rustfx: {note}");
                    writer.counters.errors.fetch_add(1, Ordering::Relaxed);
                }
                let reader = Store::open_reader(&db, Access::ReadWrite)?;
                (writer, Access::ReadWrite, reader)
            }
            Opened::NotWritable(why) => {
                let (reader, access, caveat) = Store::open_read_only(&db)?;
                if let Some(why) = why {
                    say_read_only(&dir, &why, caveat.as_deref());
                } else if let Some(caveat) = caveat {
                    eprintln!("rustfx: feature cache {name}: {caveat}");
                }
                (Writer::idle(), access, reader)
            }
        };
        Ok(FeatureCache {
            options,
            readers: Mutex::new(vec![reader]),
            dir,
            db,
            access,
            writer,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            corrupt: AtomicU64::new(0),
            extractors: Mutex::new(HashMap::new()),
        })
    }

    /// Whether it only reads ([`CacheOptions::read_only`], or the cache
    /// could not be written): misses are extracted and not stored.
    pub fn read_only(&self) -> bool {
        self.access != Access::ReadWrite
    }

    /// The options it was opened with.
    pub fn options(&self) -> CacheOptions {
        self.options
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `f` on an idle reading connection (opened if none is idle), which
    /// goes back to the idle ones after, unless `f` failed.
    fn with_reader<T>(&self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        let idle = self.readers.lock().map_err(|_| poisoned())?.pop();
        let reader = match idle {
            Some(reader) => reader,
            None => Store::open_reader(&self.db, self.access)?,
        };
        let outcome = f(&reader);
        if outcome.is_ok() {
            let mut idle = self.readers.lock().map_err(|_| poisoned())?;
            if idle.len() < IDLE_READERS {
                idle.push(reader);
            }
        }
        outcome
    }

    /// The row of `spec` for `key`, if stored: a batch of one row.
    pub fn get(&self, spec: &FeatureSpec, key: &DocKey) -> Result<Option<Batch>> {
        let mut rows = self.get_many(spec, std::slice::from_ref(key))?;
        Ok(rows.pop().flatten())
    }

    /// The rows of `spec` for `keys`, each a batch of one row or `None`:
    /// one read transaction; hits to mark used and entries that failed
    /// their checksum (to delete) are queued to the writer.
    pub fn get_many(&self, spec: &FeatureSpec, keys: &[DocKey]) -> Result<Vec<Option<Batch>>> {
        let output = spec.output();
        let found = self.lookup(&spec_digest(spec), output, keys)?;
        Ok(found
            .iter()
            .map(|row| row.as_ref().map(|r| assemble(output, std::iter::once(r))))
            .collect())
    }

    /// [`get_many`](Self::get_many) as one batch: whether each key was
    /// found, and the rows found, in order, end to end.
    pub fn get_found(&self, spec: &FeatureSpec, keys: &[DocKey]) -> Result<(Vec<bool>, Batch)> {
        let found = self.lookup(&spec_digest(spec), spec.output(), keys)?;
        let hit = found.iter().map(Option::is_some).collect();
        Ok((hit, assemble(spec.output(), found.iter().flatten())))
    }

    /// The rows this handle has queued and not yet written, and the
    /// stored rows (checked) of the other `keys`, counting hits and misses.
    fn lookup(
        &self,
        digest: &[u8; 32],
        output: OutputSpec,
        keys: &[DocKey],
    ) -> Result<Vec<Option<StoredRow>>> {
        // The queued rows first: a row leaves the queue only once it is
        // committed, so a read that starts after this finds it. (Read
        // first, a row committed and dequeued in between was missed.)
        let mut rows = vec![None; keys.len()];
        self.writer.fill_queued(digest, keys, &mut rows);
        // A queued row that is hit is marked used after its put.
        let queued_hits: Vec<DocKey> = (0..keys.len())
            .filter(|&i| rows[i].is_some())
            .map(|i| keys[i])
            .collect();
        let unqueued: Vec<usize> = (0..keys.len()).filter(|&i| rows[i].is_none()).collect();
        let wanted: Vec<DocKey> = unqueued.iter().map(|&i| keys[i]).collect();
        let found = self.with_reader(|reader| reader.get_many(digest, output, &wanted))?;
        for (&i, row) in unqueued.iter().zip(found.rows) {
            rows[i] = row;
        }
        let hits = rows.iter().filter(|r| r.is_some()).count() as u64;
        self.hits.fetch_add(hits, Ordering::Relaxed);
        self.misses
            .fetch_add(keys.len() as u64 - hits, Ordering::Relaxed);
        self.corrupt
            .fetch_add(found.bad.len() as u64, Ordering::Relaxed);
        let touches = queued_hits
            .into_iter()
            .chain(found.stale)
            .map(|key| Write::Touch { spec: *digest, key });
        let drops = found.bad.into_iter().map(|(key, checksum)| Write::Drop {
            spec: *digest,
            key,
            checksum,
        });
        if !self.read_only() {
            self.writer.offer(touches.chain(drops).collect());
        }
        Ok(rows)
    }

    /// [`lookup`](Self::lookup) for extraction: a lookup that fails is a
    /// miss of every key, counted and printed once.
    fn lookup_or_miss(
        &self,
        digest: &[u8; 32],
        output: OutputSpec,
        keys: &[DocKey],
    ) -> Vec<Option<StoredRow>> {
        self.lookup(digest, output, keys).unwrap_or_else(|e| {
            self.writer
                .counters
                .fault("feature cache: cannot look up", &e);
            self.misses.fetch_add(keys.len() as u64, Ordering::Relaxed);
            vec![None; keys.len()]
        })
    }

    /// Stores `row` (a batch of one row of `spec`'s output) under `key`.
    pub fn put(&self, spec: &FeatureSpec, key: &DocKey, row: &Batch) -> Result<()> {
        self.put_many(spec, std::slice::from_ref(key), row)
    }

    /// Stores the rows of `rows` (a batch of `spec`'s output), row `i`
    /// under `keys[i]`, in one transaction, replacing what was there; then
    /// evicts if the cap is passed. Waits until they are committed.
    /// `InvalidArgument` if the batch is not of `spec`'s output or has
    /// another number of rows.
    pub fn put_many(&self, spec: &FeatureSpec, keys: &[DocKey], rows: &Batch) -> Result<()> {
        let stored = stored_rows(spec, keys, rows)?;
        if self.read_only() {
            return Err(Error::new(
                ErrorKind::Io,
                format!(
                    "feature cache {} is read-only: nothing is stored",
                    self.dir.display()
                ),
            ));
        }
        let rows = keys.iter().copied().zip(stored.into_iter().map(Arc::new));
        self.writer.write_now(puts(&spec_digest(spec), rows))
    }

    /// Queues `rows` to be stored under `digest` (dropped if the queue is
    /// full).
    fn queue_rows(&self, digest: &[u8; 32], rows: Vec<(DocKey, Arc<StoredRow>)>) {
        if !self.read_only() {
            self.writer.offer(puts(digest, rows));
        }
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

    /// Waits until every write queued by this handle so far is committed:
    /// the error of the last transaction, if it failed.
    pub fn flush(&self) -> Result<()> {
        if self.read_only() {
            return Ok(());
        }
        self.writer.flush()
    }

    /// Commits the queued writes, then copies the WAL into the database
    /// file and empties it if no other connection is in the way (waiting
    /// for none; SQLite does the same when a cache's last handle closes).
    /// Whether the database file is whole. A read-only cache: nothing done.
    pub fn checkpoint(&self) -> Result<bool> {
        if self.read_only() {
            return Ok(false);
        }
        self.flush()?;
        Store::checkpoint(&self.db)
    }

    /// What the cache has done (this handle) and holds (every process),
    /// once the writes queued so far are committed. Safe from any thread
    /// at any time, and never fails for the database: totals it cannot
    /// read (a file damaged under the handle) are 0, counted in `errors`
    /// and printed once, so a caller that only asks (a constructor) never
    /// stops on a cache.
    pub fn stats(&self) -> Result<Stats> {
        // A failed write is in `errors` already; the totals are what the
        // database holds.
        let _ = self.flush();
        let counters = &self.writer.counters;
        let (entries, bytes) = self.with_reader(Store::totals).unwrap_or_else(|e| {
            counters.fault("feature cache: cannot count the entries", &e);
            (0, 0)
        });
        Ok(Stats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            corrupt: self.corrupt.load(Ordering::Relaxed),
            evicted: counters.evicted.load(Ordering::Relaxed),
            dropped: counters.dropped.load(Ordering::Relaxed),
            errors: counters.errors.load(Ordering::Relaxed),
            entries,
            bytes,
            read_only: self.read_only(),
        })
    }
}

/// Prints, once per directory in a process, that a cache that could not
/// be written is read only.
fn say_read_only(dir: &Path, why: &str, caveat: Option<&str>) {
    static SAID: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
    if said.iter().any(|d| d == dir) {
        return;
    }
    said.push(dir.to_path_buf());
    let caveat = caveat.map(|c| format!("; {c}")).unwrap_or_default();
    eprintln!(
        "rustfx: feature cache {} cannot be written ({why}): read-only, its entries are \
         served and misses are extracted, not stored{caveat} (said once)",
        dir.display()
    );
}

/// Each row of `rows` (a batch of `spec`'s output) as stored;
/// `InvalidArgument` if the batch is not of `spec`'s output or has another
/// number of rows than `keys`.
fn stored_rows(spec: &FeatureSpec, keys: &[DocKey], rows: &Batch) -> Result<Vec<StoredRow>> {
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
    Ok(stored)
}

/// The digest of each row of `rows` (a batch of `spec`'s output) under its
/// key in `keys` ([`StoredRow::digest`]): what a corpus job writes beside
/// each row, and what filling a cache from its shards checks. Errors as
/// [`FeatureCache::put_many`]'s.
pub fn row_digests(spec: &FeatureSpec, keys: &[DocKey], rows: &Batch) -> Result<Vec<[u8; 32]>> {
    let digest = spec_digest(spec);
    let stored = stored_rows(spec, keys, rows)?;
    Ok(keys
        .iter()
        .zip(&stored)
        .map(|(key, row)| row.digest(&digest, &key.0))
        .collect())
}

/// The writes that store `rows` under `digest`.
fn puts(digest: &[u8; 32], rows: impl IntoIterator<Item = (DocKey, Arc<StoredRow>)>) -> Vec<Write> {
    rows.into_iter()
        .map(|(key, row)| Write::Put {
            spec: *digest,
            key,
            row,
        })
        .collect()
}

#[cfg(test)]
mod fault_tests;
#[cfg(test)]
mod files_tests;
#[cfg(test)]
mod read_only_tests;
#[cfg(test)]
mod tests;
