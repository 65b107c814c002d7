//! What the feature cache's keys cost (docs/feature_cache.md): EMBER2024 vectors (`ember_features`) of the files under
//! tests/golden/pe (or of the files in `$FEATURE_CACHE_FILES`, a
//! directory), in batches of 32, files/s per epoch, best of 15:
//!
//! - extract: read each file and extract (no cache);
//! - cached, content key: `extract_files` on a warm cache (read, hash,
//!   look up);
//! - floor of the content key: read and hash (BLAKE3) each file, nothing
//!   else (on rayon's threads, as `extract_files` does);
//! - read only: the part of that floor that is not hashing;
//! - cached, stat key: `extract_files` on a warm cache (stat, look up);
//! - floor of the stat key: stat each file, nothing else.
//!
//! Every epoch runs its batches on rayon's pool, several at once, as a
//! tf.data map with `num_parallel_calls` runs an op's batches (one batch at
//! a time, a batch holding one 20 MB file kept the other core idle while
//! that file was hashed or extracted), on one cache handle, as the ops of
//! a process share one (`rustfx_cache::shared`). Then the hashes alone,
//! on one thread: BLAKE3 (the content key) and SHA-256 (rustfx.sha256,
//! with the SHA extensions where the CPU has them). The same figures
//! through TensorFlow: benches/cache_tf.py.
//!
//! The files are in the page cache (a warm-up epoch reads them first).
//! Run: `nice -n 10 cargo bench -p rustfx-cache --bench feature_cache`.

use rayon::prelude::*;
use rustfx::read::read_file;
use rustfx::spec::FeatureSpec;
use rustfx_cache::{CacheKey, CacheOptions, DocKey, FeatureCache};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

const BATCH: usize = 32;
const MAX_BYTES: u64 = 1 << 31;
const REPEATS: usize = 15;

fn files() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let root = std::env::var_os("FEATURE_CACHE_FILES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/pe"));
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.is_file() {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Files per second of the best of [`REPEATS`] epochs of `epoch`.
fn rate(n: usize, mut epoch: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..REPEATS {
        let start = Instant::now();
        epoch();
        best = best.min(start.elapsed().as_secs_f64());
    }
    n as f64 / best
}

/// Whether this CPU has the SHA extensions (the SHA-256 figure depends on it).
fn sha_extensions() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sha") {
        return "yes";
    }
    "no"
}

fn main() {
    let paths = files();
    let raw: Vec<&[u8]> = paths.iter().map(|p| p.as_os_str().as_bytes()).collect();
    let bytes: u64 = paths.iter().map(|p| p.metadata().unwrap().len()).sum();
    let spec = FeatureSpec::from_json(r#"{"extractor": "ember_features"}"#).unwrap();
    let extractor = spec.build().unwrap();
    let dir = std::env::temp_dir().join(format!("rustfx-cache-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let open = |key| {
        FeatureCache::open(
            dir.join(format!("{key:?}")),
            CacheOptions {
                max_bytes: 1 << 34,
                key,
                read_only: false,
            },
        )
        .unwrap()
    };
    let by_content = open(CacheKey::Content);
    let by_stat = open(CacheKey::Stat);

    // Warm-up: the page cache, and both caches filled.
    for batch in raw.chunks(BATCH) {
        by_content.extract_files(&spec, batch, MAX_BYTES).unwrap();
        by_stat.extract_files(&spec, batch, MAX_BYTES).unwrap();
    }
    by_content.flush().unwrap();
    by_stat.flush().unwrap();
    let n = raw.len();
    // Each epoch: its batches on rayon's pool, several at once (and each
    // batch's files in parallel within it, as the core and the cache do).
    let epoch = |per_batch: &(dyn Fn(&[&[u8]]) + Sync)| {
        raw.par_chunks(BATCH).for_each(per_batch);
    };
    let extract = rate(n, || {
        epoch(&|batch| {
            let docs: Vec<Vec<u8>> = batch
                .par_iter()
                .map(|p| read_file(p, MAX_BYTES).unwrap())
                .collect();
            let refs: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
            std::hint::black_box(extractor.extract_batch(&refs).unwrap());
        })
    });
    let content = rate(n, || {
        epoch(&|batch| {
            std::hint::black_box(by_content.extract_files(&spec, batch, MAX_BYTES).unwrap());
        })
    });
    let content_floor = rate(n, || {
        epoch(&|batch| {
            let keys: Vec<DocKey> = batch
                .par_iter()
                .map(|p| DocKey::of_content(&read_file(p, MAX_BYTES).unwrap()))
                .collect();
            std::hint::black_box(keys);
        })
    });
    let read_only = rate(n, || {
        epoch(&|batch| {
            let sizes: Vec<usize> = batch
                .par_iter()
                .map(|p| read_file(p, MAX_BYTES).unwrap().len())
                .collect();
            std::hint::black_box(sizes);
        })
    });
    let stat = rate(n, || {
        epoch(&|batch| {
            std::hint::black_box(by_stat.extract_files(&spec, batch, MAX_BYTES).unwrap());
        })
    });
    let stat_floor = rate(n, || {
        epoch(&|batch| {
            for p in batch {
                std::hint::black_box(DocKey::of_file_stat(p, MAX_BYTES).unwrap());
            }
        })
    });
    // Hits on 1 thread, then 2: lookups share nothing but the database
    // (a reading connection each, no write lock).
    let on_threads = |threads: usize, cache: &FeatureCache| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            rate(n, || {
                epoch(&|batch| {
                    std::hint::black_box(cache.extract_files(&spec, batch, MAX_BYTES).unwrap());
                })
            })
        })
    };
    let scaling: Vec<(&str, f64, f64)> = [("content", &by_content), ("stat", &by_stat)]
        .into_iter()
        .map(|(name, cache)| (name, on_threads(1, cache), on_threads(2, cache)))
        .collect();
    // What bounds the content key's floor: the hash, on one thread (and
    // SHA-256, the content key before BLAKE3).
    let block = vec![0x5au8; 64 << 20];
    let blake3_rate = rate(block.len(), || {
        std::hint::black_box(DocKey::of_content(&block));
    });
    let sha256_rate = rate(block.len(), || {
        std::hint::black_box(rustfx::sha256::sha256(&block));
    });
    let stats = by_content.stats().unwrap();
    println!(
        "{n} files, {:.1} KB on average; ember_features, batches of {BATCH} (several at once), best of {REPEATS}",
        bytes as f64 / n as f64 / 1e3
    );
    println!("| epoch | files/s | vs extract |");
    println!("|---|---:|---:|");
    for (what, r) in [
        ("extract (read + FX, no cache)", extract),
        ("cached, content key", content),
        ("floor: read + BLAKE3 only", content_floor),
        ("(of which: read only)", read_only),
        ("cached, stat key", stat),
        ("floor: stat only", stat_floor),
    ] {
        println!("| {what} | {r:.0} | {:.1}x |", r / extract);
    }
    println!(
        "content key: {:.0}% of its floor; one thread: BLAKE3 {:.0} MB/s, SHA-256 {:.0} MB/s \
         (SHA extensions: {}); cache: {} entries, {:.1} MB",
        100.0 * content / content_floor,
        blake3_rate / 1e6,
        sha256_rate / 1e6,
        sha_extensions(),
        stats.entries,
        stats.bytes as f64 / 1e6
    );
    for (name, one, two) in scaling {
        println!(
            "{name} key hits: {one:.0} files/s on 1 thread, {two:.0} on 2 ({:.2}x)",
            two / one
        );
    }
    drop((by_content, by_stat));
    let _ = std::fs::remove_dir_all(&dir);
}
