//! The cache across processes: two writers at once lose nothing and
//! corrupt nothing; a writer killed with SIGKILL mid-write leaves a cache
//! that opens and whose every entry equals a fresh extraction.
//!
//! The writers are this test binary run again with `RUSTFX_CACHE_CHILD`
//! set, which makes `child_process` write instead of returning.

use rustfx::spec::FeatureSpec;
use rustfx_cache::{CacheKey, CacheOptions, DocKey, FeatureCache, DB_FILE};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

const CHILD: &str = "RUSTFX_CACHE_CHILD";
/// How many documents a writer that runs until killed cycles through.
const CYCLE: u64 = 2_000;

/// The specs the writers store: a dense, a ragged and a sparse output.
fn specs() -> Vec<FeatureSpec> {
    [
        r#"{"extractor": "byte_histogram"}"#,
        r#"{"extractor": "printable_strings"}"#,
        r#"{"extractor": "hashed_ngrams", "params": {"num_buckets": 4096, "ngram_widths": [1, 2], "output": "sparse"}}"#,
    ]
    .iter()
    .map(|text| FeatureSpec::from_json(text).unwrap())
    .collect()
}

/// Document `i`: different lengths and bytes for every `i`.
fn doc(i: u64) -> Vec<u8> {
    let words = [
        "alpha",
        "beta",
        "http://example.com/x",
        "C:\\Windows",
        "\u{e9}t\u{e9}",
    ];
    let mut text = format!("document {i}:");
    for j in 0..(i % 97 + 1) {
        text.push(' ');
        text.push_str(words[((i * 31 + j * 7) % 5) as usize]);
    }
    let mut bytes = text.into_bytes();
    bytes.extend((0..(i % 300)).map(|j| (i * 13 + j * 101) as u8));
    bytes
}

fn options(max_bytes: u64) -> CacheOptions {
    CacheOptions {
        max_bytes,
        key: CacheKey::Content,
        read_only: false,
    }
}

/// In a child: writes documents `from..to` in batches of 8 for every spec,
/// then exits; `to` 0: documents `from..from + CYCLE` over and over (each
/// pass replaces the last one's entries), until killed.
#[test]
fn child_process() {
    let Ok(job) = std::env::var(CHILD) else {
        return;
    };
    let parts: Vec<&str> = job.split(':').collect();
    let (dir, from, to, max_bytes): (&str, u64, u64, u64) = (
        parts[0],
        parts[1].parse().unwrap(),
        parts[2].parse().unwrap(),
        parts[3].parse().unwrap(),
    );
    let cache = FeatureCache::open(dir, options(max_bytes)).unwrap();
    let specs = specs();
    let mut i = from;
    while to == 0 || i < to {
        if to == 0 && i >= from + CYCLE {
            i = from;
        }
        let end = if to == 0 { i + 8 } else { (i + 8).min(to) };
        let docs: Vec<Vec<u8>> = (i..end).map(doc).collect();
        let refs: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
        for spec in &specs {
            cache.extract(spec, &refs).unwrap();
        }
        i = end;
    }
}

fn spawn(dir: &Path, from: u64, to: u64, max_bytes: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, format!("{}:{from}:{to}:{max_bytes}", dir.display()))
        .spawn()
        .unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rustfx-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn two_writers_at_once_lose_nothing() {
    let dir = temp_dir("two-writers");
    // Overlapping ranges: 0-299 and 150-449, every spec, batches of 8.
    let mut a = spawn(&dir, 0, 300, 1 << 30);
    let mut b = spawn(&dir, 150, 450, 1 << 30);
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    let found = check_range(&dir, 0, 450);
    assert_eq!(found, 450 * specs().len(), "lost entries");
    let entries = FeatureCache::open(&dir, options(1 << 40))
        .unwrap()
        .stats()
        .unwrap()
        .entries;
    assert_eq!(entries, found as u64, "entries of unknown documents");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn kill_9_during_writes_leaves_exact_features() {
    let dir = temp_dir("kill-9");
    // A cap of 1 MiB, so that evictions run too when the writer is killed.
    let max_bytes = 1 << 20;
    let mut written = 0;
    for round in 0..4u64 {
        let mut child = spawn(&dir, round * 100_000, 0, max_bytes);
        let db = dir.join(DB_FILE);
        let start = Instant::now();
        // Until it has written something, then a little more (the kill
        // lands at a random point of a transaction).
        while !db.exists() && start.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(700 + 173 * round));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let cache = FeatureCache::open(&dir, options(max_bytes)).unwrap();
        written = cache.stats().unwrap().entries;
        eprintln!("kill -9 round {round}: {written} entries");
        assert!(written > 0, "round {round}: nothing written");
    }
    // What survived of every round equals a fresh extraction.
    let mut found = 0;
    for round in 0..4u64 {
        found += check_range(&dir, round * 100_000, CYCLE);
    }
    assert_eq!(found as u64, written, "entries of unknown documents");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Every entry of documents `from..from + len` equals a fresh extraction
/// (and SQLite's integrity check passes); how many were found.
fn check_range(dir: &Path, from: u64, len: u64) -> usize {
    let conn = rusqlite::Connection::open(dir.join(DB_FILE)).unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let cache = FeatureCache::open(dir, options(1 << 40)).unwrap();
    let docs: Vec<Vec<u8>> = (from..from + len).map(doc).collect();
    let keys: Vec<DocKey> = docs.iter().map(|d| DocKey::of_content(d)).collect();
    let mut found = 0;
    for spec in specs() {
        let extractor = spec.build().unwrap();
        for (chunk, rows) in keys.chunks(500).zip(docs.chunks(500)) {
            for (row, d) in cache.get_many(&spec, chunk).unwrap().iter().zip(rows) {
                if let Some(row) = row {
                    let fresh = extractor.extract_batch(&[d]).unwrap();
                    assert!(row.same_bits(&fresh), "{}", spec.extractor());
                    found += 1;
                }
            }
        }
    }
    assert_eq!(cache.stats().unwrap().corrupt, 0);
    found
}
