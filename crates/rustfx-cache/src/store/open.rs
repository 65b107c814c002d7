//! Opening a cache's database: the writing connection (WAL mode, the
//! tables, the format check), a damaged file set aside, and the reading
//! connections; a cache that cannot be written is told apart, and read
//! (read_only.rs).

use super::persist_wal::keep_wal_files;
use super::{is_busy, sql_error, Store, BUSY_TIMEOUT, BYTE_ORDER, FORMAT, PAGE_CACHE_KIB, SCHEMA};
use rusqlite::{params, Connection, ErrorCode, OptionalExtension};
use rustfx::{Error, ErrorKind, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

mod read_only;

pub(crate) use read_only::Access;

/// What [`Store::open_replacing_damaged`] found.
pub(crate) enum Opened {
    /// The writing connection, and the note of a damaged file set aside.
    Writable(Store, Option<String>),
    /// The cache cannot be written: why (none when read-only was asked for).
    NotWritable(Option<String>),
}

/// Whether an I/O error says the file system or the permissions refuse
/// writes (EROFS, EACCES, EPERM): a cache there is read, not refused.
pub(crate) fn refuses_writes(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied
    )
}

impl Store {
    /// Opens (creating) the database at `path` to write: WAL mode, the
    /// tables, the format check.
    pub fn open(path: &Path, busy: Duration) -> Result<Store> {
        let store = Store::connect(path, busy)?;
        store.set_wal()?;
        store
            .conn
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| store.error("cannot set synchronous", e))?;
        store.create()?;
        Ok(store)
    }

    /// [`Store::open`], except that a file SQLite finds damaged (not a
    /// database, or corrupt where opening reads) is moved aside to
    /// `<path>.damaged` (its WAL to `<path>.damaged-wal`, replacing an
    /// earlier pair) and a new, empty database is made in its place; the
    /// message says so. A cache's rows can always be extracted again,
    /// while a damaged file would otherwise stop every later run until
    /// someone deleted it. A database of another format is not damage: it
    /// is refused as before. Holds `<dir>/features.lock` while it opens,
    /// so two processes that find the same damage move it once. A cache
    /// whose lock file or database cannot be written (a read-only file
    /// system, no permission) is [`Opened::NotWritable`], not an error.
    pub fn open_replacing_damaged(path: &Path, busy: Duration) -> Result<Opened> {
        let lock_path = path.with_extension("lock");
        let lock = match std::fs::File::create(&lock_path) {
            Err(e) if refuses_writes(&e) => {
                return Ok(Opened::NotWritable(Some(format!(
                    "cannot write {}: {e}",
                    lock_path.display()
                ))))
            }
            created => created.and_then(|file| file.lock().map(|()| file)),
        }
        .map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("feature cache: cannot lock {}: {e}", lock_path.display()),
            )
        })?;
        let opened = match Store::try_open(path, busy) {
            Ok(store) => Ok(Opened::Writable(store, None)),
            Err(OpenError::ReadOnly) => Ok(Opened::NotWritable(Some(format!(
                "SQLite opens {} read-only",
                path.display()
            )))),
            Err(e) if is_damage(&e) => {
                let aside = |suffix: &str| {
                    let mut name = path.as_os_str().to_owned();
                    name.push(suffix);
                    PathBuf::from(name)
                };
                let gone = |r: std::io::Result<()>| match r {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                    _ => Ok(()),
                };
                let moved = std::fs::rename(path, aside(".damaged"))
                    .and_then(|()| gone(std::fs::rename(aside("-wal"), aside(".damaged-wal"))))
                    .and_then(|()| gone(std::fs::remove_file(aside("-shm"))));
                match moved {
                    Ok(()) => Store::open(path, busy).map(|store| {
                        let note = format!(
                            "feature cache {}: the database was damaged ({e}); moved to {} \
                             and started a new cache",
                            path.display(),
                            aside(".damaged").display()
                        );
                        Opened::Writable(store, Some(note))
                    }),
                    Err(io) => Err(Error::new(
                        ErrorKind::Io,
                        format!(
                            "feature cache {}: the database is damaged ({e}) and cannot be \
                             moved aside ({io}): delete the directory to start over",
                            path.display()
                        ),
                    )),
                }
            }
            Err(e) => Err(store_error(path, "cannot open", e)),
        };
        drop(lock);
        opened
    }

    /// Copies the WAL of the database at `path` into it and empties the
    /// WAL (`wal_checkpoint(TRUNCATE)`) if no other connection is in the
    /// way, waiting for none: so a cache whose process ends with its
    /// handles open is whole in its database file (what a copy to
    /// read-only storage needs). Whether it was done.
    pub fn checkpoint(path: &Path) -> Result<bool> {
        let conn = Connection::open(path).map_err(|e| sql_error(path, "cannot open", e))?;
        keep_wal_files(&conn).map_err(|e| sql_error(path, "cannot keep the WAL", e))?;
        // Never waits (rusqlite's default is 5 s): a process that ends
        // must not hang on another's reader.
        conn.busy_timeout(Duration::ZERO)
            .map_err(|e| sql_error(path, "cannot set busy_timeout", e))?;
        let busy: i64 = conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
            .map_err(|e| sql_error(path, "cannot checkpoint", e))?;
        Ok(busy == 0)
    }

    /// [`Store::open`] with SQLite's own error, to tell damage apart.
    fn try_open(path: &Path, busy: Duration) -> std::result::Result<Store, OpenError> {
        let conn = Connection::open(path).map_err(OpenError::Sql)?;
        keep_wal_files(&conn).map_err(OpenError::Sql)?;
        // A file SQLite may not write is opened read-only, silently.
        if conn
            .is_readonly(rusqlite::MAIN_DB)
            .map_err(OpenError::Sql)?
        {
            return Err(OpenError::ReadOnly);
        }
        conn.busy_timeout(busy).map_err(OpenError::Sql)?;
        conn.query_row("PRAGMA schema_version", [], |r| r.get::<_, i64>(0))
            .map_err(OpenError::Sql)?;
        drop(conn);
        Store::open(path, busy).map_err(OpenError::Rustfx)
    }

    /// Opens the database at `path` (made by [`Store::open`]) to read, the
    /// way `access` says.
    pub fn open_reader(path: &Path, access: Access) -> Result<Store> {
        let store = match access {
            Access::ReadWrite => Store::connect(path, BUSY_TIMEOUT)?,
            read_only => Store::connect_read_only(path, read_only)?,
        };
        store
            .conn
            .pragma_update(None, "query_only", true)
            .map_err(|e| store.error("cannot set query_only", e))?;
        Ok(store)
    }

    fn connect(path: &Path, busy: Duration) -> Result<Store> {
        let conn = Connection::open(path).map_err(|e| sql_error(path, "cannot open", e))?;
        keep_wal_files(&conn).map_err(|e| sql_error(path, "cannot keep the WAL", e))?;
        Store::configure(conn, path, busy)
    }

    /// A connection's busy timeout and page cache.
    fn configure(conn: Connection, path: &Path, busy: Duration) -> Result<Store> {
        let store = Store {
            conn,
            path: path.to_path_buf(),
            busy,
        };
        store
            .conn
            .busy_timeout(busy)
            .map_err(|e| store.error("cannot set busy_timeout", e))?;
        // Pages kept in memory, up to PAGE_CACHE_KIB per connection
        // (SQLite's default is 2 MiB, less than an epoch of EMBER2024 rows
        // of a few hundred files, so every lookup went to the file again).
        store
            .conn
            .pragma_update(None, "cache_size", -PAGE_CACHE_KIB)
            .map_err(|e| store.error("cannot set cache_size", e))?;
        Ok(store)
    }

    /// WAL mode. Switching takes an exclusive lock that the busy handler
    /// does not wait for, so a process that opens while another switches
    /// retries.
    fn set_wal(&self) -> Result<()> {
        let start = std::time::Instant::now();
        loop {
            let mode = self
                .conn
                .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0));
            match mode {
                Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
                Ok(mode) => {
                    return Err(Error::new(
                        ErrorKind::Io,
                        format!(
                            "feature cache {}: SQLite refused WAL mode (journal mode {mode}): \
                             put the cache on a local file system",
                            self.path.display()
                        ),
                    ))
                }
                Err(e) if is_busy(&e) && start.elapsed() < self.busy => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Err(e) => return Err(self.error("cannot switch to WAL mode", e)),
            }
        }
    }

    /// The tables, if missing, and the format check.
    fn create(&self) -> Result<()> {
        let tx = self.write()?;
        tx.execute_batch(SCHEMA)
            .map_err(|e| self.error("cannot create the tables", e))?;
        for (name, want) in [("format", FORMAT), ("byte_order", BYTE_ORDER)] {
            let got: Option<i64> = tx
                .query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(|e| self.error("cannot read the format", e))?;
            match got {
                None => {
                    tx.execute("INSERT INTO meta VALUES (?1, ?2)", params![name, want])
                        .map_err(|e| self.error("cannot write the format", e))?;
                }
                Some(got) if got == want => {}
                Some(got) => return Err(self.format_refused(name, Some(got), want)),
            }
        }
        tx.commit().map_err(|e| self.error("cannot commit", e))
    }
}

/// Why [`Store::try_open`] failed: SQLite's error (from the first read of
/// the file), the file read-only, or any later one.
enum OpenError {
    Sql(rusqlite::Error),
    ReadOnly,
    Rustfx(Error),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Sql(e) => e.fmt(f),
            OpenError::ReadOnly => f.write_str("read-only"),
            OpenError::Rustfx(e) => e.fmt(f),
        }
    }
}

/// Whether SQLite found the file damaged: not a database, or corrupt.
fn is_damage(e: &OpenError) -> bool {
    matches!(e, OpenError::Sql(e) if matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt)
    ))
}

/// [`OpenError`] as rustfx's error.
fn store_error(path: &Path, what: &str, e: OpenError) -> Error {
    match e {
        OpenError::Sql(e) => sql_error(path, what, e),
        OpenError::ReadOnly => Error::new(
            ErrorKind::Io,
            format!("feature cache {}: {what}: read-only", path.display()),
        ),
        OpenError::Rustfx(e) => e,
    }
}
