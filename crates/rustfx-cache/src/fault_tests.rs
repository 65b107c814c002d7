//! The cache under faults: a damaged or hostile database file (also set
//! aside under a live handle), another connection holding the write lock
//! (for a while, and past the busy timeout), a full queue, the database
//! replaced under an open handle.
//! Each gives the extraction's rows, a miss or a clear error, never other
//! rows, and never blocks extraction.

use super::*;
use crate::tests::{one_entry, spec, temp_dir};
use rusqlite::Connection;
use std::time::Duration;

#[test]
fn hostile_database_files_give_an_error_or_a_miss() {
    let spec = spec(r#"{"extractor": "byte_histogram"}"#);
    let doc: &[u8] = b"some document";
    let fresh = spec.build().unwrap().extract_batch(&[doc]).unwrap();
    // Garbage (a damaged header): moved aside, a new cache started and
    // counted as an error; the garbage kept beside it.
    let dir = temp_dir("garbage");
    std::fs::write(dir.join(DB_FILE), vec![0x5a; 10000]).unwrap();
    let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    assert!(cache.extract(&spec, &[doc]).unwrap().same_bits(&fresh));
    let stats = cache.stats().unwrap();
    assert_eq!((stats.errors, stats.misses, stats.entries), (1, 1, 1));
    drop(cache);
    let aside = dir.join(format!("{DB_FILE}.damaged"));
    assert_eq!(std::fs::read(&aside).unwrap(), vec![0x5a; 10000]);
    let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    assert!(cache
        .get(&spec, &DocKey::of_content(doc))
        .unwrap()
        .is_some());
    assert_eq!(cache.stats().unwrap().errors, 0);
    drop(cache);
    // A database that is not a feature cache: refused, not replaced.
    std::fs::remove_file(dir.join(DB_FILE)).unwrap();
    Connection::open(dir.join(DB_FILE))
        .unwrap()
        .execute_batch("CREATE TABLE entries (x); INSERT INTO entries VALUES (1);")
        .unwrap();
    assert!(FeatureCache::open(&dir, CacheOptions::default()).is_err());
    assert!(Connection::open(dir.join(DB_FILE))
        .unwrap()
        .query_row("SELECT x FROM entries", [], |r| r.get::<_, i64>(0))
        .is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
    // Another format.
    let (dir, ..) = one_entry("format");
    Connection::open(dir.join(DB_FILE))
        .unwrap()
        .execute_batch("UPDATE meta SET value = 99 WHERE name = 'format'")
        .unwrap();
    let err = FeatureCache::open(&dir, CacheOptions::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
    // Garbage beside it, in the WAL and the shared-memory index (as a
    // crash or a copy might leave them): SQLite checks the WAL's frames and
    // rebuilds the index, so the entry is still found, and exact.
    let (dir, spec_one, key, doc_one) = one_entry("wal");
    for suffix in ["-wal", "-shm"] {
        let mut name = DB_FILE.to_string();
        name.push_str(suffix);
        std::fs::write(dir.join(name), vec![0xa5; 40000]).unwrap();
    }
    match FeatureCache::open(&dir, CacheOptions::default()) {
        Ok(cache) => match cache.get(&spec_one, &key) {
            Ok(Some(row)) => assert!(row.same_bits(
                &spec_one
                    .build()
                    .unwrap()
                    .extract_batch(&[&doc_one])
                    .unwrap()
            )),
            Ok(None) => panic!("the committed entry was lost"),
            Err(e) => eprintln!("garbage WAL: {e}"),
        },
        Err(e) => eprintln!("garbage WAL: {e}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
    // Truncated at every 1/8 of its length: opens or not, and then gives
    // an error, a miss or the exact row.
    let (dir, full_spec, _, _) = one_entry("truncated");
    let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    let docs: Vec<Vec<u8>> = (0..200u32)
        .map(|i| format!("document {i}").into_bytes())
        .collect();
    let refs: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
    cache.extract(&full_spec, &refs).unwrap();
    drop(cache);
    let whole = std::fs::read(dir.join(DB_FILE)).unwrap();
    for eighth in 1..8 {
        std::fs::write(dir.join(DB_FILE), &whole[..whole.len() * eighth / 8]).unwrap();
        if let Ok(cache) = FeatureCache::open(&dir, CacheOptions::default()) {
            for d in &refs {
                if let Ok(Some(row)) = cache.get(&full_spec, &DocKey::of_content(d)) {
                    assert!(row.same_bits(&full_spec.build().unwrap().extract_batch(&[d]).unwrap()));
                }
            }
            if let Ok(Some(row)) = cache.get(&spec, &DocKey::of_content(doc)) {
                assert!(row.same_bits(&fresh));
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A cache in a new directory whose database was damaged under a live
/// handle (`old`, which stored 20 rows) and set aside by the next open
/// (`new`, which committed 20 other rows to its WAL, not checkpointed):
/// the directory, the two handles, the spec, `new`'s keys and their rows.
fn set_aside_under_a_live_handle(
    name: &str,
) -> (
    PathBuf,
    FeatureCache,
    FeatureCache,
    FeatureSpec,
    Vec<DocKey>,
    Batch,
) {
    let dir = temp_dir(name);
    let spec = spec(r#"{"extractor": "byte_histogram"}"#);
    let docs: Vec<Vec<u8>> = (0..40u32)
        .map(|i| format!("document {i}").into_bytes())
        .collect();
    let refs: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
    let (old_docs, new_docs) = refs.split_at(20);
    let old = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    old.extract(&spec, old_docs).unwrap();
    // All in the database file, so that the header damaged below is what
    // the next open reads (not a copy of page 1 in the WAL).
    assert!(old.checkpoint().unwrap());
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join(DB_FILE))
        .unwrap();
    std::io::Write::write_all(&mut file, &[0x5a; 100]).unwrap();
    drop(file);
    let new = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    assert_eq!(new.stats().unwrap().errors, 1);
    assert!(dir.join(format!("{DB_FILE}.damaged")).is_file());
    let expected = spec.build().unwrap().extract_batch(new_docs).unwrap();
    assert!(new.extract(&spec, new_docs).unwrap().same_bits(&expected));
    new.flush().unwrap();
    assert!(
        std::fs::metadata(dir.join(format!("{DB_FILE}-wal")))
            .unwrap()
            .len()
            > 0
    );
    let keys = new_docs.iter().map(|d| DocKey::of_content(d)).collect();
    (dir, old, new, spec, keys, expected)
}

/// The new cache's WAL (`wal`, as it was) and index are in place, another
/// handle (as another process would) reads every row `new` committed, and,
/// all closed, the database is sound and holds them.
fn assert_the_new_cache_kept_its_rows(
    dir: &Path,
    wal: std::fs::Metadata,
    new: FeatureCache,
    spec: &FeatureSpec,
    keys: &[DocKey],
    expected: &Batch,
) {
    use std::os::unix::fs::MetadataExt;
    let now = std::fs::metadata(dir.join(format!("{DB_FILE}-wal")));
    assert!(
        now.is_ok_and(|now| now.ino() == wal.ino() && now.len() == wal.len()),
        "the new cache's WAL was deleted or changed"
    );
    assert!(dir.join(format!("{DB_FILE}-shm")).is_file());
    let other = FeatureCache::open(dir, CacheOptions::default()).unwrap();
    let (found, rows) = other.get_found(spec, keys).unwrap();
    assert!(found.iter().all(|&hit| hit), "{found:?}");
    assert!(rows.same_bits(expected));
    assert_eq!(other.stats().unwrap().errors, 0);
    drop((new, other));
    let check: String = Connection::open(dir.join(DB_FILE))
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let cache = FeatureCache::open(dir, CacheOptions::default()).unwrap();
    assert_eq!(cache.stats().unwrap().entries, keys.len() as u64);
}

#[test]
fn a_live_handle_closing_after_its_cache_was_set_aside_keeps_the_new_wal() {
    let (dir, old, new, spec, keys, expected) = set_aside_under_a_live_handle("aside-after");
    let wal = std::fs::metadata(dir.join(format!("{DB_FILE}-wal"))).unwrap();
    // Its last connection closes: SQLite sees its file moved (another
    // file at its path) and neither checkpoints nor deletes anything.
    drop(old);
    assert_the_new_cache_kept_its_rows(&dir, wal, new, &spec, &keys, &expected);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_live_handle_closing_while_its_cache_is_set_aside_keeps_the_new_wal() {
    let (dir, old, new, spec, keys, expected) = set_aside_under_a_live_handle("aside-while");
    let wal = std::fs::metadata(dir.join(format!("{DB_FILE}-wal"))).unwrap();
    // Its last connection closes as if it had looked at its path before the
    // move (SQLite checks once, then checkpoints, then deletes the WAL and
    // its index by their paths, the new cache's by then): the old file is
    // at the path while it closes, the new one back after.
    let path = dir.join(DB_FILE);
    let new_file = dir.join("new.sqlite3");
    std::fs::rename(&path, &new_file).unwrap();
    std::fs::hard_link(dir.join(format!("{DB_FILE}.damaged")), &path).unwrap();
    drop(old);
    std::fs::rename(&new_file, &path).unwrap();
    assert_the_new_cache_kept_its_rows(&dir, wal, new, &spec, &keys, &expected);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Holds SQLite's write lock on the cache in `dir` from another
/// connection until dropped (as another process's long write would).
struct WriteLock(Connection);

impl WriteLock {
    fn take(dir: &Path) -> WriteLock {
        let conn = Connection::open(dir.join(DB_FILE)).unwrap();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        WriteLock(conn)
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        let _ = self.0.execute_batch("ROLLBACK");
    }
}

/// `f` on another thread; panics if it has not returned within a minute
/// (the writer's busy timeout: what a lookup that waited for the write
/// lock would take).
fn returns<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(f()).unwrap());
    result
        .recv_timeout(std::time::Duration::from_secs(50))
        .expect("waited for the write lock")
}

#[test]
fn hits_and_misses_never_wait_for_the_write_lock() {
    let dir = temp_dir("no-wait");
    let cache = Arc::new(FeatureCache::open(&dir, CacheOptions::default()).unwrap());
    let spec = spec(r#"{"extractor": "byte_histogram"}"#);
    let docs: Vec<Vec<u8>> = (0..40u32)
        .map(|i| format!("doc {i}").into_bytes())
        .collect();
    let expected = {
        let refs: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
        cache.extract(&spec, &refs[..20]).unwrap();
        cache.flush().unwrap();
        spec.build().unwrap().extract_batch(&refs).unwrap()
    };
    // Another connection holds the write lock: the first 20 are hits (some
    // stale, to be marked used), the next 20 misses, and neither waits.
    let lock = WriteLock::take(&dir);
    let (c, s) = (cache.clone(), spec.clone());
    let rows = returns(move || {
        let refs: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
        c.extract(&s, &refs).unwrap()
    });
    assert!(rows.same_bits(&expected));
    drop(lock);
    let stats = cache.stats().unwrap();
    assert_eq!((stats.hits, stats.misses, stats.entries), (20, 40, 40));
    drop(cache);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_full_queue_drops_rows_and_never_blocks() {
    let dir = temp_dir("full-queue");
    let cache = Arc::new(FeatureCache::open(&dir, CacheOptions::default()).unwrap());
    let spec = spec(r#"{"extractor": "byte_sequence", "params": {"max_len": 1048576}}"#);
    // 1 MiB rows, more than the queue holds while the writer is stuck.
    let count = (QUEUE_BYTES >> 20) as usize + 16;
    let docs: Vec<Vec<u8>> = (0..count).map(|i| vec![(i % 251) as u8; 1 << 20]).collect();
    let lock = WriteLock::take(&dir);
    let (c, s, d) = (cache.clone(), spec.clone(), docs.clone());
    let ok = returns(move || {
        let extractor = s.build().unwrap();
        d.iter().all(|doc| {
            let rows = c.extract(&s, &[doc.as_slice()]).unwrap();
            rows.same_bits(&extractor.extract_batch(&[doc.as_slice()]).unwrap())
        })
    });
    assert!(ok, "rows other than the extraction's");
    drop(lock);
    let stats = cache.stats().unwrap();
    assert!(stats.dropped > 0, "{stats:?}");
    assert_eq!(stats.entries + stats.dropped, count as u64, "{stats:?}");
    assert_eq!(stats.errors, 0, "{stats:?}");
    drop(cache);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_cache_that_fails_is_a_miss_and_extraction_goes_on() {
    let dir = temp_dir("fails");
    let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    let spec = spec(r#"{"extractor": "byte_entropy_histogram"}"#);
    let docs: Vec<&[u8]> = vec![b"one document", b"another one", b""];
    let expected = spec.build().unwrap().extract_batch(&docs).unwrap();
    assert!(cache.extract(&spec, &docs).unwrap().same_bits(&expected));
    cache.flush().unwrap();
    // The database replaced by garbage under the open handle: every lookup
    // and write fails, each counted; the rows are the extraction's.
    drop(cache.readers.lock().unwrap().drain(..));
    for name in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.join(format!("{DB_FILE}{name}")));
    }
    std::fs::write(dir.join(DB_FILE), vec![0x5a; 65536]).unwrap();
    for _ in 0..2 {
        assert!(cache.extract(&spec, &docs).unwrap().same_bits(&expected));
    }
    let _ = cache.flush();
    let errors = cache.writer.counters.errors.load(Ordering::Relaxed);
    assert!(errors >= 2, "{errors}");
    assert!(cache.writer.counters.first_error.lock().unwrap().is_some());
    drop(cache);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_lock_held_past_the_busy_timeout_fails_writes_and_nothing_else() {
    let dir = temp_dir("past-busy");
    let busy = Duration::from_millis(300);
    let cache = Arc::new(FeatureCache::open_waiting(&dir, CacheOptions::default(), busy).unwrap());
    let spec = spec(r#"{"extractor": "byte_histogram"}"#);
    let docs: Vec<Vec<u8>> = (0..30u32)
        .map(|i| format!("doc {i}").into_bytes())
        .collect();
    let refs: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
    let expected = spec.build().unwrap().extract_batch(&refs).unwrap();
    cache.extract(&spec, &refs[..10]).unwrap();
    cache.flush().unwrap();
    // Held for 3 busy timeouts: the writes of the 20 misses fail (counted,
    // not stored), the 10 hits are still read (and the 20 queued rows, until
    // their write fails), every row is exact.
    let lock = WriteLock::take(&dir);
    for _ in 0..2 {
        assert!(cache.extract(&spec, &refs).unwrap().same_bits(&expected));
    }
    assert!(cache.flush().is_err());
    std::thread::sleep(busy * 3);
    drop(lock);
    let stats = cache.stats().unwrap();
    assert!(stats.errors >= 1, "{stats:?}");
    assert_eq!(stats.hits + stats.misses, 10 + 2 * 30, "{stats:?}");
    assert!(stats.hits >= 2 * 10, "{stats:?}");
    assert_eq!(stats.entries, 10, "{stats:?}");
    // With the lock gone, the next misses are stored again.
    assert!(cache.extract(&spec, &refs).unwrap().same_bits(&expected));
    cache.flush().unwrap();
    assert_eq!(cache.stats().unwrap().entries, 30);
    drop(cache);
    std::fs::remove_dir_all(dir).unwrap();
}
