//! Files through the cache on any threads (src/files.rs): however a call's
//! files are shared between threads and grouped for lookups (alone when
//! large, by eight when small), its rows are the core's extraction of the
//! contents read, bit for bit and in order, and each unreadable path is an
//! empty document with its error at its own index.

use super::*;
use crate::files::{GROUP_BYTES, GROUP_FILES};
use crate::tests::{spec, temp_dir};
use std::os::unix::ffi::OsStrExt;

/// `threads` OS threads, each running the call's loop: a host's pool.
struct OsThreads(usize);

impl FileThreads for OsThreads {
    fn run(&self, work: &(dyn Fn() + Sync)) {
        std::thread::scope(|scope| {
            for _ in 1..self.0 {
                scope.spawn(work);
            }
            work();
        });
    }
}

/// Contents of `len` bytes that differ with `seed`.
fn contents(seed: u32, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            // Mostly text, with runs of one byte: strings and n-grams
            // to find.
            match x % 7 {
                0 => 0,
                1..=4 => b'a' + (x >> 8) as u8 % 26,
                _ => b' ',
            }
        })
        .collect()
}

/// Files in `dir`: large ones (each a group of its own), small ones (in
/// groups of eight), an empty one and a duplicate; then paths that cannot
/// be read (missing, a directory). Each path, and what reading it gives
/// (`None`: an error).
fn files(dir: &Path, first_seed: u32) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut sizes: Vec<usize> = vec![GROUP_BYTES as usize * 3 / 2, 0, 100];
    sizes.extend((0..GROUP_FILES * 2 + 3).map(|i| 1000 + 3000 * i));
    sizes.insert(9, GROUP_BYTES as usize + 1);
    sizes.push(GROUP_BYTES as usize / 2 + 7);
    let mut found = Vec::new();
    for (i, &len) in sizes.iter().enumerate() {
        let path = dir.join(format!("f{first_seed}-{i}"));
        let body = contents(first_seed + i as u32, len);
        std::fs::write(&path, &body).unwrap();
        found.push((path.as_os_str().as_bytes().to_vec(), Some(body)));
    }
    found.push(found[4].clone());
    found.insert(
        6,
        (dir.join("missing").as_os_str().as_bytes().to_vec(), None),
    );
    found.insert(13, (dir.as_os_str().as_bytes().to_vec(), None));
    found
}

/// The core's rows of `files`' contents (an empty document where unread).
fn extracted(spec: &FeatureSpec, files: &[(Vec<u8>, Option<Vec<u8>>)]) -> Batch {
    let docs: Vec<&[u8]> = files
        .iter()
        .map(|(_, body)| body.as_deref().unwrap_or(&[]))
        .collect();
    spec.build().unwrap().extract_batch(&docs).unwrap()
}

fn check(got: &FilesBatch, files: &[(Vec<u8>, Option<Vec<u8>>)], want: &Batch, what: &str) {
    assert!(got.batch.same_bits(want), "{what}");
    let failed: Vec<bool> = got.errors.iter().map(Option::is_some).collect();
    let unread: Vec<bool> = files.iter().map(|(_, body)| body.is_none()).collect();
    assert_eq!(failed, unread, "{what}");
}

#[test]
fn files_on_any_threads_equal_extraction_whatever_their_groups() {
    let specs = [
        spec(r#"{"extractor": "byte_histogram"}"#),
        spec(r#"{"extractor": "printable_strings"}"#),
    ];
    let threads: [(&str, &dyn FileThreads); 3] = [
        ("the calling thread", &CallingThread),
        ("rayon", &RayonThreads),
        ("3 OS threads", &OsThreads(3)),
    ];
    for key in [CacheKey::Content, CacheKey::Stat] {
        for (name, threads) in threads {
            let dir = temp_dir("files-on-threads");
            let options = CacheOptions {
                key,
                ..CacheOptions::default()
            };
            let cache = FeatureCache::open(&dir, options).unwrap();
            let old = files(&dir, 1);
            let new = files(&dir, 1000);
            // The old files again, among new ones: hits and misses mixed in
            // a group.
            let mixed: Vec<_> = old
                .iter()
                .zip(&new)
                .flat_map(|(a, b)| [a.clone(), b.clone()])
                .collect();
            let readable = old.iter().filter(|(_, body)| body.is_some()).count() as u64;
            for spec in &specs {
                let what = format!("{} by {key:?} on {name}", spec.extractor());
                let run = |files: &[(Vec<u8>, Option<Vec<u8>>)]| {
                    let paths: Vec<&[u8]> = files.iter().map(|(p, _)| p.as_slice()).collect();
                    let prepared = PreparedSpec::new(spec.clone());
                    cache
                        .extract_files_on(&prepared, &paths, 1 << 31, threads)
                        .unwrap()
                };
                check(&run(&old), &old, &extracted(spec, &old), &what);
                cache.flush().unwrap();
                // (The first call may hit: a duplicate found queued.)
                let hits = cache.stats().unwrap().hits;
                check(&run(&old), &old, &extracted(spec, &old), &what);
                assert_eq!(cache.stats().unwrap().hits - hits, readable, "{what}");
                check(&run(&mixed), &mixed, &extracted(spec, &mixed), &what);
                // Every old file hits (and a new file whose contents or
                // path was seen: the empty file by content, a duplicate).
                assert!(cache.stats().unwrap().hits - hits >= 2 * readable, "{what}");
            }
            drop(cache);
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}
