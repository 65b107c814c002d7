//! A cache that is only read: on a read-only file system, without the
//! permission to write, or opened with `read_only`.
//!
//! A cache whose WAL (`-wal`) holds frames has rows that may not be in the
//! database file yet: it is read with SQLite's locks (`mode=ro`, which
//! needs the WAL's index, `-shm`, to exist or be made), so every committed
//! row is read, a live writer's included. A cache with an empty `-wal` (0
//! bytes: its last handle checkpointed the WAL into the database and
//! truncated it, keeping both files, store/persist_wal.rs; or the op
//! library's checkpoint at exit) or none (closed by an older rustfx, which
//! deleted both) is whole in its database file: it is read as a file
//! nobody changes (`immutable=1`), with no locks and no file written
//! (`mode=ro` would reset the index, or make it and the WAL). A live
//! writer whose WAL is empty at that moment (nothing written since it
//! opened or checkpointed) is read the same way: its later rows are not
//! seen, as a writer's that opens later is not. A `-wal` that is not empty and cannot be read so (its `-shm` missing on
//! read-only storage) leaves its rows unserved (the ones checkpointed
//! before are served), and the open says so. Whatever is read, every row
//! is checked against its checksum before it is served.

use super::super::persist_wal::keep_wal_files;
use super::super::{sql_error, Store, BUSY_TIMEOUT, BYTE_ORDER, FORMAT};
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use rustfx::{Error, ErrorKind, Result};
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How a handle's connections open its database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Read and written: the writer thread's connection, and readers that
    /// only query.
    ReadWrite,
    /// Read only, with SQLite's locks (`mode=ro`).
    ReadOnly,
    /// Read only, the database file alone, with no locks (`immutable=1`).
    Immutable,
}

impl Store {
    /// Opens the database at `path` to read only: with SQLite's locks
    /// while its WAL holds frames, else as an immutable file (module doc).
    /// The first connection, how the others open, and a caveat to say (a
    /// `-wal` whose rows cannot be read). `NotFound` without a database; the format is checked as
    /// [`Store::open`] does.
    pub fn open_read_only(path: &Path) -> Result<(Store, Access, Option<String>)> {
        if !path.is_file() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "feature cache {}: no database to read (the cache is read-only)",
                    path.display()
                ),
            ));
        }
        let wal = with_suffix(path, "-wal");
        let wal_bytes = std::fs::metadata(&wal).map_or(0, |m| m.len());
        if wal_bytes > 0 {
            let locked = Store::connect_read_only(path, Access::ReadOnly)
                .and_then(|store| store.check_format().map(|()| store));
            match locked {
                Ok(store) => return Ok((store, Access::ReadOnly, None)),
                // Another format is refused, however it is opened.
                Err(e) if e.kind() == ErrorKind::InvalidArgument => return Err(e),
                Err(_) => {}
            }
        }
        let store = Store::connect_read_only(path, Access::Immutable)?;
        let caveat = (wal_bytes > 0).then(|| {
            format!(
                "its write-ahead log {} holds rows not yet checkpointed into the database, \
                 which cannot be read without its index (-shm): the rows checkpointed before \
                 are served (open the cache read-write once, or copy it after its writers \
                 closed)",
                wal.display()
            )
        });
        match (store.check_format(), &caveat) {
            (Err(e), Some(caveat)) if e.kind() != ErrorKind::InvalidArgument => {
                return Err(Error::new(
                    e.kind(),
                    format!("{e}; {caveat}, and the database file alone holds none"),
                ))
            }
            (checked, _) => checked?,
        }
        Ok((store, Access::Immutable, caveat))
    }

    /// A connection that only reads the database at `path`, the way
    /// `access` says.
    pub(super) fn connect_read_only(path: &Path, access: Access) -> Result<Store> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(uri(path, access), flags)
            .map_err(|e| sql_error(path, "cannot open to read", e))?;
        keep_wal_files(&conn).map_err(|e| sql_error(path, "cannot keep the WAL", e))?;
        Store::configure(conn, path, BUSY_TIMEOUT)
    }

    /// The format rows, read: `InvalidArgument` for another format or
    /// byte order, as [`Store::open`] refuses them.
    fn check_format(&self) -> Result<()> {
        for (name, want) in [("format", FORMAT), ("byte_order", BYTE_ORDER)] {
            let got: Option<i64> = self
                .conn
                .query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(|e| self.error("cannot read the format", e))?;
            if got != Some(want) {
                return Err(self.format_refused(name, got, want));
            }
        }
        Ok(())
    }

    /// The error of a database whose `name` row is `got`, not `want`.
    pub(super) fn format_refused(&self, name: &str, got: Option<i64>, want: i64) -> Error {
        let got = got.map_or("missing".to_string(), |got| got.to_string());
        Error::invalid_argument(format!(
            "feature cache {}: its {name} is {got}, this rustfx reads {want} only: use another \
             directory, or delete this one to start over",
            self.path.display()
        ))
    }
}

/// `path` with `suffix` appended to its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// SQLite's URI of the database at `path` opened as `access` says: the
/// absolute path, every byte but the unreserved ones percent-encoded.
fn uri(path: &Path, access: Access) -> String {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut uri = String::from("file://");
    for &byte in path.as_os_str().as_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            let _ = write!(uri, "%{byte:02X}");
        }
    }
    uri.push_str(match access {
        Access::Immutable => "?mode=ro&immutable=1",
        _ => "?mode=ro",
    });
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uri_escapes_what_sqlite_would_read_as_syntax() {
        let uri = uri(Path::new("/a b/c?d#e%f"), Access::ReadOnly);
        assert_eq!(uri, "file:///a%20b/c%3Fd%23e%25f?mode=ro");
    }
}
