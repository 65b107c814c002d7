//! The SQLite database of a feature cache: its schema, and the one read and
//! one write of each operation.
//!
//! ```sql
//! meta(name TEXT PRIMARY KEY, value INTEGER)    -- format, byte_order, clock, bytes
//! entries(id INTEGER PRIMARY KEY,
//!         spec BLOB, doc BLOB,                   -- the key: two SHA-256 digests
//!         layout TEXT, dtype TEXT, width INTEGER,
//!         checksum INTEGER, bytes INTEGER, last_used INTEGER, UNIQUE (spec, doc))
//! row_data(id INTEGER PRIMARY KEY,               -- an entry's id
//!          row_values BLOB, aux BLOB)
//! ```
//!
//! - The row's bytes are in a table of their own, so that marking a hit
//!   used rewrites a small record, not the row's kilobytes (SQLite
//!   rewrites a whole record on UPDATE: with the bytes in `entries`, a
//!   cached epoch wrote every row it read to the WAL again). A trigger
//!   deletes an entry's bytes with it, whatever deletes it.
//! - WAL mode (`journal_mode=WAL`, persistent in the file): readers never
//!   wait for a writer, and a lookup only reads: a hit's "used" mark is
//!   queued to the cache's writer thread (writer.rs), which applies it with
//!   the puts, so hits never take the write lock. Writers of every process
//!   take turns, waiting up to [`BUSY_TIMEOUT`]. `synchronous=NORMAL`: a
//!   commit is atomic and survives a killed process (the WAL is in the OS's
//!   page cache); a power cut may lose the last commits, never corrupt the
//!   file.
//! - Writes are `BEGIN IMMEDIATE` (the write lock taken first), so two
//!   writers never deadlock upgrading a read lock.
//! - `clock` orders uses across processes: every put takes the next value
//!   as the entry's `last_used`, and a hit marked used takes the current
//!   one (hits are marked only when stale, [`Store::get_many`]). `bytes` is the
//!   entries' total, kept in the same transactions as the entries.
//! - A handle has one writing connection (its writer thread's) and a few
//!   reading ones, one per thread that looks up at the same time.

use crate::row::{dtype_named, layout_named, StoredRow};
use crate::DocKey;
use rusqlite::{params, Connection, ErrorCode, OptionalExtension, TransactionBehavior};
use rustfx::output::OutputSpec;
use rustfx::{Error, ErrorKind, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

mod open;
mod persist_wal;

pub(crate) use open::{Access, Opened};

/// How long a writer waits for another process's transaction.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// The most memory SQLite's page cache takes per open cache, in KiB.
const PAGE_CACHE_KIB: i64 = 64 << 10;

/// The layout of the tables; a database of another is refused.
const FORMAT: i64 = 1;
/// Rows are stored in native byte order: a cache moved to a machine of the
/// other order is refused.
const BYTE_ORDER: i64 = if cfg!(target_endian = "little") { 1 } else { 2 };

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY,
    spec BLOB NOT NULL,
    doc BLOB NOT NULL,
    layout TEXT NOT NULL,
    dtype TEXT NOT NULL,
    width INTEGER NOT NULL,
    checksum INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    last_used INTEGER NOT NULL,
    UNIQUE (spec, doc)
);
CREATE TABLE IF NOT EXISTS row_data (
    id INTEGER PRIMARY KEY,
    row_values BLOB NOT NULL,
    aux BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_by_last_used ON entries (last_used);
CREATE TRIGGER IF NOT EXISTS entries_delete_row_data AFTER DELETE ON entries
BEGIN
    DELETE FROM row_data WHERE id = old.id;
END;
INSERT OR IGNORE INTO meta VALUES ('clock', 0), ('bytes', 0);
";

/// An open database.
pub(crate) struct Store {
    conn: Connection,
    path: PathBuf,
    /// How long a write waits for another's lock ([`BUSY_TIMEOUT`]).
    busy: Duration,
}

/// What [`Store::get_many`] found.
pub(crate) struct Found {
    /// Each key's row, if stored and sound.
    pub rows: Vec<Option<StoredRow>>,
    /// Entries that failed their checksum, with the checksum read (a value
    /// of the wrong SQL type: `i64::MIN`), for the writer to delete.
    pub bad: Vec<(DocKey, i64)>,
    /// Hits whose "used" mark is stale ([`Store::get_many`]), for the
    /// writer to mark.
    pub stale: Vec<DocKey>,
}

/// One change of the database, queued to the writer (writer.rs) and
/// applied in order in one transaction with the others queued.
pub(crate) enum Write {
    /// Store `row` under (`spec`, `key`), replacing what was there.
    Put {
        spec: [u8; 32],
        key: DocKey,
        row: Arc<StoredRow>,
    },
    /// Mark the entry used (a hit).
    Touch { spec: [u8; 32], key: DocKey },
    /// Delete the entry if it still holds what was read (its checksum; a
    /// value of the wrong type: any).
    Drop {
        spec: [u8; 32],
        key: DocKey,
        checksum: i64,
    },
}

impl Write {
    /// What it holds in memory while queued, roughly.
    pub fn bytes(&self) -> u64 {
        match self {
            Write::Put { row, .. } => row.size(),
            _ => 96,
        }
    }
}

impl Store {
    pub(crate) fn write(&self) -> Result<rusqlite::Transaction<'_>> {
        // `&self`: an IMMEDIATE transaction on the writer's connection,
        // which only its thread uses.
        rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.error("cannot begin a write", e))
    }

    pub(crate) fn error(&self, what: &str, e: rusqlite::Error) -> Error {
        sql_error(&self.path, what, e)
    }

    /// The stored rows of `keys` under `spec`, each checked (checksum, and
    /// the shape of `output`), in one read transaction: nothing written.
    ///
    /// A hit is stale when more puts than an eighth of the entries came
    /// after its last use: only those are marked used again (by the
    /// writer). So the order of eviction stays least recently used to
    /// within an eighth of the entries (an eviction frees a tenth), and an
    /// epoch of hits writes nothing after its entries' first use since the
    /// last puts (a mark each hit cost the writer a third of a core at
    /// 30,000 hits/s).
    pub fn get_many(&self, spec: &[u8; 32], output: OutputSpec, keys: &[DocKey]) -> Result<Found> {
        // BEGIN and COMMIT as cached statements: parsed once per
        // connection, not at every lookup.
        let run = |sql: &str| {
            self.conn
                .prepare_cached(sql)
                .and_then(|mut st| st.execute([]))
        };
        run("BEGIN").map_err(|e| self.error("cannot begin a read", e))?;
        let found = self.read_rows(spec, output, keys);
        let end = run(if found.is_ok() { "COMMIT" } else { "ROLLBACK" });
        let found = found?;
        end.map_err(|e| self.error("cannot end a read", e))?;
        Ok(found)
    }

    /// [`get_many`](Self::get_many)'s reads, inside its transaction.
    fn read_rows(&self, spec: &[u8; 32], output: OutputSpec, keys: &[DocKey]) -> Result<Found> {
        let mut rows = Vec::with_capacity(keys.len());
        let mut bad: Vec<(DocKey, i64)> = Vec::new();
        let mut stale = Vec::new();
        let tx = &self.conn;
        let (clock, total): (i64, i64) = tx
            .prepare_cached(
                "SELECT (SELECT value FROM meta WHERE name = 'clock'), \
                 (SELECT value FROM meta WHERE name = 'bytes')",
            )
            .and_then(|mut clock| clock.query_row([], |r| Ok((r.get(0)?, r.get(1)?))))
            .map_err(|e| self.error("cannot read the clock", e))?;
        let mut select = tx
            .prepare_cached(
                "SELECT layout, dtype, width, row_values, aux, checksum, last_used \
                 FROM entries LEFT JOIN row_data USING (id) WHERE spec = ?1 AND doc = ?2",
            )
            .map_err(|e| self.error("cannot read", e))?;
        for key in keys {
            let found = select
                .query_row(params![&spec[..], &key.0[..]], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, Vec<u8>>(3)?,
                        r.get::<_, Vec<u8>>(4)?,
                        r.get::<_, i64>(5)?,
                        r.get::<_, i64>(6)?,
                    ))
                })
                .optional();
            // A value of the wrong SQL type is damage, like a bad checksum.
            let found = match found {
                Err(rusqlite::Error::InvalidColumnType(..)) => {
                    bad.push((*key, i64::MIN));
                    rows.push(None);
                    continue;
                }
                other => other.map_err(|e| self.error("cannot read", e))?,
            };
            let Some((layout, dtype, width, values, aux, checksum, last_used)) = found else {
                rows.push(None);
                continue;
            };
            let row = match (layout_named(&layout), dtype_named(&dtype)) {
                (Some(layout), Some(dtype)) => Some(StoredRow {
                    layout,
                    dtype,
                    width,
                    values,
                    aux,
                }),
                _ => None,
            };
            match row {
                Some(row) if row.checksum(spec, &key.0) == checksum && row.fits(output) => {
                    let entries = total / (row.size().max(1) as i64);
                    if last_used < clock.saturating_sub(entries / 8) {
                        stale.push(*key);
                    }
                    rows.push(Some(row))
                }
                _ => {
                    bad.push((*key, checksum));
                    rows.push(None);
                }
            }
        }
        Ok(Found { rows, bad, stale })
    }

    /// Applies `writes` in order in one transaction, then evicts the least
    /// recently used down to 90% of `max_bytes` if the total passed it.
    /// Returns how many were evicted. A row larger than `max_bytes` is not
    /// stored.
    pub fn apply(&mut self, writes: &[Write], max_bytes: u64) -> Result<u64> {
        let tx = self.write()?;
        let e = |what, err| sql_error(&self.path, what, err);
        let mut clock = clock(&tx).map_err(|err| e("cannot read the clock", err))?;
        let mut added = 0i64;
        {
            let mut touch = tx
                .prepare_cached(
                    "UPDATE entries SET last_used = max(last_used, ?3) WHERE spec = ?1 AND doc = ?2",
                )
                .map_err(|err| e("cannot mark a hit", err))?;
            let mut drop_damaged = tx
                .prepare_cached(
                    "DELETE FROM entries WHERE spec = ?1 AND doc = ?2 \
                     AND (checksum = ?3 OR ?3 = -9223372036854775808) RETURNING bytes",
                )
                .map_err(|err| e("cannot delete a damaged entry", err))?;
            let mut replace = tx
                .prepare_cached("DELETE FROM entries WHERE spec = ?1 AND doc = ?2 RETURNING bytes")
                .map_err(|err| e("cannot replace an entry", err))?;
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO entries (spec, doc, layout, dtype, width, checksum, bytes, \
                     last_used) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id",
                )
                .map_err(|err| e("cannot store an entry", err))?;
            let mut insert_data = tx
                .prepare_cached("INSERT INTO row_data (id, row_values, aux) VALUES (?1, ?2, ?3)")
                .map_err(|err| e("cannot store an entry", err))?;
            let freed = |value: Option<rusqlite::types::Value>| match value {
                Some(rusqlite::types::Value::Integer(bytes)) => bytes,
                _ => 0,
            };
            for write in writes {
                match write {
                    // A use takes the clock's value; only puts advance it.
                    Write::Touch { spec, key } => {
                        touch
                            .execute(params![&spec[..], &key.0[..], clock])
                            .map_err(|err| e("cannot mark a hit", err))?;
                    }
                    Write::Drop {
                        spec,
                        key,
                        checksum,
                    } => {
                        let old = drop_damaged
                            .query_row(params![&spec[..], &key.0[..], checksum], |r| r.get(0))
                            .optional()
                            .map_err(|err| e("cannot delete a damaged entry", err))?;
                        added -= freed(old);
                    }
                    Write::Put { spec, key, row } => {
                        let size = row.size();
                        if size > max_bytes {
                            continue;
                        }
                        let old = replace
                            .query_row(params![&spec[..], &key.0[..]], |r| r.get(0))
                            .optional()
                            .map_err(|err| e("cannot replace an entry", err))?;
                        added -= freed(old);
                        clock += 1;
                        let id: i64 = insert
                            .query_row(
                                params![
                                    &spec[..],
                                    &key.0[..],
                                    row.layout.name(),
                                    row.dtype.name(),
                                    row.width,
                                    row.checksum(spec, &key.0),
                                    size as i64,
                                    clock
                                ],
                                |r| r.get(0),
                            )
                            .map_err(|err| e("cannot store an entry", err))?;
                        insert_data
                            .execute(params![id, &row.values, &row.aux])
                            .map_err(|err| e("cannot store an entry", err))?;
                        added += size as i64;
                    }
                }
            }
        }
        set_clock(&tx, clock).map_err(|err| e("cannot write the clock", err))?;
        let total = add_bytes(&tx, added).map_err(|err| e("cannot count bytes", err))?;
        let evicted = if total > max_bytes as i64 {
            evict(&tx, total, (max_bytes / 10 * 9) as i64).map_err(|err| e("cannot evict", err))?
        } else {
            0
        };
        tx.commit().map_err(|err| e("cannot commit", err))?;
        Ok(evicted)
    }

    /// The entries' count and bytes.
    pub fn totals(&self) -> Result<(u64, u64)> {
        let e = |err| sql_error(&self.path, "cannot count the entries", err);
        let entries: i64 = self
            .conn
            .query_row("SELECT count(*) FROM entries", [], |r| r.get(0))
            .map_err(e)?;
        let bytes: i64 = self
            .conn
            .query_row("SELECT value FROM meta WHERE name = 'bytes'", [], |r| {
                r.get(0)
            })
            .map_err(e)?;
        Ok((entries.max(0) as u64, bytes.max(0) as u64))
    }
}

fn clock(tx: &Connection) -> rusqlite::Result<i64> {
    tx.query_row("SELECT value FROM meta WHERE name = 'clock'", [], |r| {
        r.get(0)
    })
}

fn set_clock(tx: &Connection, clock: i64) -> rusqlite::Result<()> {
    tx.execute("UPDATE meta SET value = ?1 WHERE name = 'clock'", [clock])
        .map(|_| ())
}

/// Adds `delta` to the total bytes; the new total.
fn add_bytes(tx: &Connection, delta: i64) -> rusqlite::Result<i64> {
    tx.query_row(
        "UPDATE meta SET value = max(0, value + ?1) WHERE name = 'bytes' RETURNING value",
        [delta],
        |r| r.get(0),
    )
}

/// Deletes the least recently used entries (smallest `last_used`, then
/// `id`) until the total is at most `target`; how many.
fn evict(tx: &Connection, mut total: i64, target: i64) -> rusqlite::Result<u64> {
    let mut victims = Vec::new();
    {
        let mut oldest =
            tx.prepare_cached("SELECT id, bytes FROM entries ORDER BY last_used, id")?;
        let mut rows = oldest.query([])?;
        while total > target {
            let Some(row) = rows.next()? else { break };
            victims.push(row.get::<_, i64>(0)?);
            total -= row.get::<_, i64>(1)?;
        }
    }
    let mut delete = tx.prepare_cached("DELETE FROM entries WHERE id = ?1")?;
    for rowid in &victims {
        delete.execute([rowid])?;
    }
    tx.execute(
        "UPDATE meta SET value = ?1 WHERE name = 'bytes'",
        [total.max(0)],
    )?;
    Ok(victims.len() as u64)
}

pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// A SQLite error as rustfx's: `Io`, naming the database; damage says so.
pub(crate) fn sql_error(path: &Path, what: &str, e: rusqlite::Error) -> Error {
    let hint = match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            " (the file is damaged or not a feature cache: delete the directory to start over)"
        }
        _ => "",
    };
    Error::new(
        ErrorKind::Io,
        format!("feature cache {}: {what}: {e}{hint}", path.display()),
    )
}
