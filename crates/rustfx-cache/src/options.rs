//! How a cache is opened ([`CacheOptions`]) and what it reports
//! ([`Stats`]).

use crate::{CacheKey, DEFAULT_MAX_BYTES, MAX_MAX_BYTES, MIN_MAX_BYTES};
use rustfx::{Error, Result};

/// How a cache is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CacheOptions {
    /// The cap on the entries' bytes ([`ENTRY_OVERHEAD`](crate::ENTRY_OVERHEAD) plus the values of
    /// each), from [`MIN_MAX_BYTES`] to [`MAX_MAX_BYTES`]. After a put that
    /// takes the total past it, the least recently used entries (by their
    /// last hit or put, across every process) are deleted until the total
    /// is at most 90% of it. An entry larger than the cap is not stored.
    /// The database file stays about this size: SQLite reuses the pages
    /// of deleted entries.
    pub max_bytes: u64,
    /// How [`FeatureCache::extract_files`](crate::FeatureCache::extract_files) keys a file.
    pub key: CacheKey,
    /// Open to read only: hits are served, misses extracted and never
    /// stored, nothing written (a cache filled once and shared by many
    /// trainers). A cache that cannot be written (a read-only file system,
    /// no permission) is opened so without it, and says so once.
    pub read_only: bool,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            max_bytes: DEFAULT_MAX_BYTES,
            key: CacheKey::Content,
            read_only: false,
        }
    }
}

impl CacheOptions {
    /// `InvalidArgument`, saying what is allowed, for a cap out of range.
    pub fn check(&self) -> Result<()> {
        if !(MIN_MAX_BYTES..=MAX_MAX_BYTES).contains(&self.max_bytes) {
            return Err(Error::invalid_argument(format!(
                "a feature cache's max_bytes must be from {} to {} bytes, got {}",
                MIN_MAX_BYTES, MAX_MAX_BYTES, self.max_bytes
            )));
        }
        Ok(())
    }
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
    /// Writes dropped because the writer's queue was full, by this handle:
    /// rows not stored this time.
    pub dropped: u64,
    /// Lookups and writes that failed, by this handle (each a miss, or a
    /// row not stored; the first is printed).
    pub errors: u64,
    /// Entries in the cache (every process's).
    pub entries: u64,
    /// Their bytes, as the cap counts them.
    pub bytes: u64,
    /// Whether the handle only reads (asked for, or the cache cannot be
    /// written): its misses are not stored.
    pub read_only: bool,
}

impl Stats {
    /// The names of the figures, in [`Stats::figures`]' order.
    pub const NAMES: [&'static str; 9] = [
        "hits",
        "misses",
        "corrupt",
        "evicted",
        "dropped",
        "errors",
        "entries",
        "bytes",
        "read_only",
    ];

    /// The figures in [`Stats::NAMES`]' order (`read_only` as 0 or 1).
    pub fn figures(&self) -> [u64; 9] {
        [
            self.hits,
            self.misses,
            self.corrupt,
            self.evicted,
            self.dropped,
            self.errors,
            self.entries,
            self.bytes,
            u64::from(self.read_only),
        ]
    }
}
