//! A cache opened to read only serves every hit exactly (the extraction's
//! rows), stores nothing and writes no file; and a cache damaged under a
//! live handle never makes `stats` fail. A real read-only file system is
//! tested from Python (tests/python/test_cache_read_only.py): here the
//! read-only open is asked for.

use super::*;
use crate::tests::{documents, spec, temp_dir};
use std::time::SystemTime;

/// Every file of `dir`: its name, length and modification time.
fn snapshot(dir: &Path) -> Vec<(String, u64, SystemTime)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            (name, meta.len(), meta.modified().unwrap())
        })
        .collect();
    files.sort();
    files
}

fn read_only() -> CacheOptions {
    CacheOptions {
        read_only: true,
        ..CacheOptions::default()
    }
}

/// The specs the tests store: a dense row, ragged strings.
fn specs() -> [FeatureSpec; 2] {
    [
        spec(r#"{"extractor": "byte_histogram"}"#),
        spec(r#"{"extractor": "printable_strings", "params": {"min_len": 4}}"#),
    ]
}

#[test]
fn a_read_only_cache_serves_every_hit_exactly_and_stores_nothing() {
    let dir = temp_dir("read-only");
    let docs = documents();
    let (stored, fresh) = docs.split_at(30);
    let stored: Vec<&[u8]> = stored.iter().map(Vec::as_slice).collect();
    let fresh: Vec<&[u8]> = fresh[..8].iter().map(Vec::as_slice).collect();
    let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    for spec in specs() {
        cache.extract(&spec, &stored).unwrap();
    }
    drop(cache); // the last handle: its WAL checkpointed and truncated, kept
    let before = snapshot(&dir);
    let wal = std::fs::metadata(dir.join(format!("{DB_FILE}-wal"))).unwrap();
    assert_eq!(wal.len(), 0, "{before:?}");
    assert!(dir.join(format!("{DB_FILE}-shm")).is_file(), "{before:?}");

    let cache = FeatureCache::open(&dir, read_only()).unwrap();
    // The empty WAL holds nothing: the database file is read alone.
    assert_eq!(cache.access, Access::Immutable);
    let mixed: Vec<&[u8]> = stored.iter().chain(&fresh).copied().collect();
    for spec in specs() {
        let want = spec.build().unwrap().extract_batch(&mixed).unwrap();
        for _ in 0..2 {
            assert!(cache.extract(&spec, &mixed).unwrap().same_bits(&want));
        }
        let key = DocKey::of_content(fresh[0]);
        let one = spec.build().unwrap().extract_batch(&fresh[..1]).unwrap();
        let err = cache.put(&spec, &key, &one).unwrap_err();
        assert!(err.to_string().contains("read-only"), "{err}");
    }
    cache.flush().unwrap();
    let stats = cache.stats().unwrap();
    // Each epoch: every stored document a hit, the new ones missed again
    // (never stored).
    let epochs = 2 * specs().len() as u64;
    let distinct = stored
        .iter()
        .collect::<std::collections::HashSet<_>>()
        .len() as u64;
    assert_eq!(
        (stats.hits, stats.misses, stats.entries, stats.errors),
        (epochs * 30, epochs * 8, 2 * distinct, 0),
        "{stats:?}"
    );
    assert!(stats.read_only && stats.figures()[8] == 1);
    drop(cache);
    assert_eq!(snapshot(&dir), before, "a read-only handle wrote");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_read_only_handle_reads_what_a_live_writer_committed() {
    let dir = temp_dir("read-only-live");
    let docs = documents();
    let docs: Vec<&[u8]> = docs[..20].iter().map(Vec::as_slice).collect();
    let [spec, _] = specs();
    let want = spec.build().unwrap().extract_batch(&docs).unwrap();
    let writer = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    writer.extract(&spec, &docs[..10]).unwrap();
    writer.flush().unwrap(); // in the WAL, not checkpointed
    let reader = FeatureCache::open(&dir, read_only()).unwrap();
    assert!(reader.extract(&spec, &docs).unwrap().same_bits(&want));
    writer.extract(&spec, &docs[10..]).unwrap();
    writer.flush().unwrap();
    assert!(reader.extract(&spec, &docs).unwrap().same_bits(&want));
    let stats = reader.stats().unwrap();
    assert_eq!((stats.hits, stats.misses), (30, 10), "{stats:?}");
    drop((reader, writer));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_checkpoint_under_a_live_handle_makes_the_database_file_whole() {
    let dir = temp_dir("checkpoint");
    let docs = documents();
    let docs: Vec<&[u8]> = docs[..20].iter().map(Vec::as_slice).collect();
    let [spec, _] = specs();
    let want = spec.build().unwrap().extract_batch(&docs).unwrap();
    let writer = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    writer.extract(&spec, &docs).unwrap();
    assert!(writer.checkpoint().unwrap());
    let wal = dir.join(format!("{DB_FILE}-wal"));
    assert_eq!(std::fs::metadata(&wal).unwrap().len(), 0);
    // The database file alone (a copy of it, read as immutable) holds every
    // row; so does a copy with the empty WAL and its index beside it (as a
    // process that ends with the cache open leaves them), read the same way.
    for (name, suffixes) in [
        ("checkpoint-copy", &[""][..]),
        ("checkpoint-all", &["", "-wal", "-shm"]),
    ] {
        let copy = temp_dir(name);
        for suffix in suffixes {
            let file = format!("{DB_FILE}{suffix}");
            std::fs::copy(dir.join(&file), copy.join(&file)).unwrap();
        }
        let reader = FeatureCache::open(&copy, read_only()).unwrap();
        assert_eq!(reader.access, Access::Immutable);
        assert!(reader.extract(&spec, &docs).unwrap().same_bits(&want));
        assert_eq!(reader.stats().unwrap().hits, 20);
        drop(reader);
        std::fs::remove_dir_all(&copy).unwrap();
    }
    drop(writer);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_read_only_open_of_no_cache_is_not_found_and_makes_nothing() {
    let dir = temp_dir("read-only-none");
    let missing = dir.join("missing");
    for path in [&dir, &missing] {
        let err = FeatureCache::open(path, read_only()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    }
    assert!(!missing.exists());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Flips `count` bytes of `path` from `at` (clamped into the file).
fn flip(path: &Path, at: usize, count: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    if bytes.is_empty() {
        return;
    }
    let end = bytes.len();
    let at = at.min(end - 1);
    for byte in &mut bytes[at..at.saturating_add(count).min(end)] {
        *byte ^= 0x5a;
    }
    std::fs::write(path, &bytes).unwrap();
}

#[test]
fn stats_never_fail_for_a_cache_damaged_under_its_handle() {
    let docs = documents();
    let docs: Vec<&[u8]> = docs[..40].iter().map(Vec::as_slice).collect();
    let [spec, _] = specs();
    let want = spec.build().unwrap().extract_batch(&docs).unwrap();
    // The header, its page size and counts, the first pages, the middle
    // and the end of the file; the WAL's header and frames.
    let places: [(&str, usize, usize); 9] = [
        ("", 0, 16),
        ("", 16, 8),
        ("", 24, 76),
        ("", 4096, 4096),
        ("", 2 * 4096 + 100, 2000),
        ("", usize::MAX / 2, 4096),
        ("", usize::MAX, 1),
        ("-wal", 0, 32),
        ("-wal", 32 + 24 + 100, 8192),
    ];
    for (suffix, at, count) in places {
        let dir = temp_dir("damaged-live");
        let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
        cache.extract(&spec, &docs[..20]).unwrap();
        cache.flush().unwrap();
        let at = if at == usize::MAX / 2 {
            std::fs::metadata(dir.join(DB_FILE)).unwrap().len() as usize / 2
        } else {
            at
        };
        flip(&dir.join(format!("{DB_FILE}{suffix}")), at, count);
        // Whatever the damage: the figures, and the extraction's rows.
        let stats = cache
            .stats()
            .unwrap_or_else(|e| panic!("{suffix} {at}: {e}"));
        assert!(cache.extract(&spec, &docs).unwrap().same_bits(&want));
        assert!(cache.stats().is_ok(), "{suffix} {at}: {stats:?}");
        drop(cache);
        // Opened again: set aside if SQLite finds it damaged, else served
        // (a damaged entry is a miss); the rows are the extraction's.
        if let Ok(again) = FeatureCache::open(&dir, CacheOptions::default()) {
            assert!(again.extract(&spec, &docs).unwrap().same_bits(&want));
            assert!(again.stats().is_ok());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
