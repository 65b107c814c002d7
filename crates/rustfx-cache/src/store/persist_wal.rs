//! Every connection keeps the WAL and its index when it closes
//! (`SQLITE_FCNTL_PERSIST_WAL`), empty.
//!
//! SQLite's last connection to a database checkpoints its WAL, then
//! deletes `-wal` and `-shm` *by their paths*. A damaged database that the
//! next open moved aside (`<db>.damaged`, store/open.rs) while a handle
//! still had it open leaves that handle's connections on the moved file,
//! and its paths are the new cache's. SQLite checks that its file was not
//! moved, but once, before the checkpoint: a handle whose last close
//! checked before the move and deletes after it (its checkpoint can take
//! long) deleted the new cache's WAL and index under their live
//! connections, and the next open failed ("disk I/O error") or lost the
//! rows committed since the last checkpoint (reproduced in
//! fault_tests.rs, `a_live_handle_closing_while_its_cache_is_set_aside_…`).
//! A connection that keeps them deletes nothing by path; it still
//! checkpoints, and truncates its own WAL through its file descriptor, so
//! a closed cache is whole in its database file, beside a `-wal` of 0
//! bytes and a `-shm` (read-only opens read such a cache as immutable,
//! store/open/read_only.rs).
//!
//! rusqlite has no safe call for a file control: this module is the
//! crate's one use of `unsafe`, one FFI call.
#![allow(unsafe_code)]

use rusqlite::{ffi, Connection};
use std::ffi::c_int;

/// The WAL's size past which SQLite truncates it when it starts it again
/// after a checkpoint: a writer's usual WAL (the ~4 MiB between automatic
/// checkpoints, plus a batch of at most 16 MiB, writer.rs) is reused, a
/// larger one is cut back. Any limit (≥ 0) also makes the last close of a
/// kept WAL truncate it to 0 bytes, not leave it at its largest.
const WAL_SIZE_LIMIT: i64 = 32 << 20;

/// Makes `conn` keep the WAL and its index, truncated, when it closes
/// (module doc). Called on every connection to a cache, before its first
/// read: the last to close decides.
pub(super) fn keep_wal_files(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)?;
    let mut keep: c_int = 1;
    // SAFETY: `conn.handle()` is the open `sqlite3*` of `conn`, which this
    // borrow keeps open and which only this thread uses during the call
    // (a `Connection` is not `Sync`); we neither close it nor keep the
    // pointer. "main" is a NUL-terminated C string literal that outlives
    // the call. For SQLITE_FCNTL_PERSIST_WAL, SQLite reads and writes one
    // `int` through the argument, which points to `keep`, a live `c_int`.
    let code = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_PERSIST_WAL,
            (&raw mut keep).cast(),
        )
    };
    if code != ffi::SQLITE_OK {
        return Err(rusqlite::Error::SqliteFailure(ffi::Error::new(code), None));
    }
    Ok(())
}
