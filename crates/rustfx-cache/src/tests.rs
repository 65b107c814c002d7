//! The cache's properties, each against a fresh extraction by the core:
//! hits equal `extract_batch` bit for bit; another spec or another content
//! misses; damage is found, deleted and missed; the cap evicts the least
//! recently used. The multi-process properties (two writers, `kill -9`)
//! are in tests/processes.rs.

use super::*;
use rusqlite::Connection;
use rustfx::registry::EXTRACTORS;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::AtomicUsize;

/// A new, empty directory under the system's temp dir.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("rustfx-cache-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub(crate) fn spec(text: &str) -> FeatureSpec {
    FeatureSpec::from_json(text).unwrap()
}

/// Every registry example's spec.
fn example_specs() -> Vec<FeatureSpec> {
    EXTRACTORS
        .iter()
        .flat_map(|entry| {
            entry.examples.iter().map(move |params| {
                spec(&format!(
                    r#"{{"extractor": "{}", "params": {params}}}"#,
                    entry.name
                ))
            })
        })
        .collect()
}

/// The PE files of tests/golden/pe.
fn pe_files() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/pe");
    let mut files = Vec::new();
    for group in std::fs::read_dir(&root).unwrap() {
        for file in std::fs::read_dir(group.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            if path.is_file() {
                files.push(std::fs::read(path).unwrap());
            }
        }
    }
    assert!(files.len() > 100, "{}", root.display());
    files.sort();
    files
}

pub(crate) fn documents() -> Vec<Vec<u8>> {
    let mut docs: Vec<Vec<u8>> = vec![
        b"MZ\x90\x00 hello world C:\\x http://a.b HKEY_X".to_vec(),
        b"".to_vec(),
        "Gr\u{f6}\u{df}e caf\u{e9} x\u{b2}".as_bytes().to_vec(),
        b"aaaa bbbb aaaa \xff\xfe w\0i\0d\0e\0".to_vec(),
    ];
    docs.extend(pe_files());
    docs
}

#[test]
fn hits_equal_extraction_for_every_registry_example() {
    let dir = temp_dir("parity");
    let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    let docs = documents();
    let refs: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
    for spec in example_specs() {
        let text = spec.to_json();
        let fresh = spec.build().unwrap().extract_batch(&refs).unwrap();
        let before = cache.stats().unwrap();
        let first = cache.extract(&spec, &refs).unwrap();
        assert!(first.same_bits(&fresh), "{text}: first epoch");
        let second = cache.extract(&spec, &refs).unwrap();
        assert!(second.same_bits(&fresh), "{text}: cached epoch");
        // A batch that mixes hits and misses.
        let mixed_docs = [refs[0], b"a document never seen" as &[u8], refs[5]];
        let mixed = cache.extract(&spec, &mixed_docs).unwrap();
        let mixed_fresh = spec.build().unwrap().extract_batch(&mixed_docs).unwrap();
        assert!(mixed.same_bits(&mixed_fresh), "{text}: mixed");
        // One row at a time.
        for i in [0, 1, 7] {
            let row = cache
                .get(&spec, &DocKey::of_content(refs[i]))
                .unwrap()
                .unwrap();
            let alone = spec
                .build()
                .unwrap()
                .extract_batch(&refs[i..i + 1])
                .unwrap();
            assert!(row.same_bits(&alone), "{text}: get {i}");
        }
        let after = cache.stats().unwrap();
        // Duplicate documents (the empty one twice among the PE files?) do
        // not matter: the second epoch and the gets are all hits.
        assert!(
            after.hits - before.hits >= docs.len() as u64 + 2 + 3,
            "{text}"
        );
    }
    drop(cache);
    std::fs::remove_dir_all(dir).unwrap();
}

/// The BLAKE3 of `scheme`, a zero byte and `json`.
fn scheme_digest(scheme: &str, json: &str) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(scheme.as_bytes());
    h.update(b"\0");
    h.update(json.as_bytes());
    *h.finalize().as_bytes()
}

/// Stores `row` under raw digests, as another rustfx could have.
fn put_raw(cache: &FeatureCache, spec: [u8; 32], key: DocKey, row: StoredRow) {
    let row = Arc::new(row);
    cache
        .writer
        .write_now(vec![Write::Put { spec, key, row }])
        .unwrap();
}

#[test]
fn entries_of_the_sha256_keys_before_blake3_are_never_read() {
    // rustfx before KEY_SCHEME stored rows under the SHA-256 of the spec's
    // JSON and of the content: such an entry, even holding other values,
    // is a miss, and the rows are the extraction's.
    let dir = temp_dir("scheme");
    let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    let spec = spec(r#"{"extractor": "byte_histogram"}"#);
    let docs: [&[u8]; 2] = [b"old scheme", b"another"];
    let wrong = spec.build().unwrap().extract_batch(&[b"zzz"]).unwrap();
    let old_spec = rustfx::sha256::sha256(spec.to_json().as_bytes());
    for doc in docs {
        let old_key = DocKey(rustfx::sha256::sha256(doc));
        put_raw(&cache, old_spec, old_key, StoredRow::of(&wrong, 0));
    }
    let rows = cache.extract(&spec, &docs).unwrap();
    assert!(rows.same_bits(&spec.build().unwrap().extract_batch(&docs).unwrap()));
    let stats = cache.stats().unwrap();
    assert_eq!((stats.hits, stats.misses, stats.entries), (0, 2, 4));
    // The content key is the file's plain BLAKE3 (b3sum's).
    assert_eq!(
        DocKey::of_content(b"abc").0.to_vec(),
        hex("6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85")
    );
    drop(cache);
    std::fs::remove_dir_all(dir).unwrap();
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn another_spec_never_reads_an_entry() {
    let dir = temp_dir("specs");
    let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    let doc: &[u8] = b"MZ some text http://x.y \xff\x00 words words";
    let key = DocKey::of_content(doc);
    let specs = example_specs();
    // Specs that differ in one parameter (the registry's examples of one
    // extractor), in the extractor, or in the output have other digests.
    let mut digests: Vec<[u8; 32]> = specs.iter().map(spec_digest).collect();
    digests.sort();
    digests.dedup();
    assert_eq!(digests.len(), specs.len(), "two examples share a spec");
    let base = spec(r#"{"extractor": "byte_entropy_histogram"}"#);
    let other = spec(r#"{"extractor": "byte_entropy_histogram", "params": {"step": 512}}"#);
    let row = base.build().unwrap().extract_batch(&[doc]).unwrap();
    cache.put(&base, &key, &row).unwrap();
    assert!(cache.get(&base, &key).unwrap().is_some());
    assert!(cache.get(&other, &key).unwrap().is_none());
    for spec in &specs {
        if spec != &base {
            assert!(
                cache.get(spec, &key).unwrap().is_none(),
                "{}",
                spec.to_json()
            );
        }
    }
    // Another output version: the same spec but for the version, as an
    // older rustfx would have stored it, is another digest and never read.
    let mut older = base.to_value();
    older["output_version"] = (base.output_version() + 1).into();
    let older_digest = scheme_digest(KEY_SCHEME, &older.to_string());
    assert_ne!(older_digest, spec_digest(&base));
    let key2 = DocKey::of_content(b"another");
    put_raw(&cache, older_digest, key2, StoredRow::of(&row, 0));
    assert!(cache.get(&base, &key2).unwrap().is_none());
    // The digest is of the scheme and the canonical JSON, which holds the
    // version.
    assert!(base.to_json().contains("\"output_version\""));
    assert_eq!(
        spec_digest(&base),
        scheme_digest(KEY_SCHEME, &base.to_json())
    );
    drop(cache);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_changed_file_misses() {
    let dir = temp_dir("content");
    let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    let spec = spec(r#"{"extractor": "byte_histogram"}"#);
    let path = dir.join("doc.bin");
    let path_bytes = path.as_os_str().as_bytes();
    for (i, contents) in [&b"first contents"[..], b"other contents", b"other contentz"]
        .into_iter()
        .enumerate()
    {
        std::fs::write(&path, contents).unwrap();
        let got = cache.extract_files(&spec, &[path_bytes], 1 << 20).unwrap();
        let fresh = spec.build().unwrap().extract_batch(&[contents]).unwrap();
        assert!(got.batch.same_bits(&fresh), "version {i}");
        assert_eq!(cache.stats().unwrap().hits, 0);
    }
    let again = cache.extract_files(&spec, &[path_bytes], 1 << 20).unwrap();
    assert_eq!(cache.stats().unwrap().hits, 1);
    assert!(again.batch.same_bits(
        &spec
            .build()
            .unwrap()
            .extract_batch(&[b"other contentz"])
            .unwrap()
    ));
    // A file that cannot be read is an empty document, not stored.
    let missing = dir.join("missing");
    let got = cache
        .extract_files(
            &spec,
            &[path_bytes, missing.as_os_str().as_bytes()],
            1 << 20,
        )
        .unwrap();
    assert!(got.errors[0].is_none());
    assert_eq!(got.errors[1].as_ref().unwrap().kind(), ErrorKind::NotFound);
    let fresh = spec
        .build()
        .unwrap()
        .extract_batch(&[b"other contentz", b""])
        .unwrap();
    assert!(got.batch.same_bits(&fresh));
    drop(cache);
    std::fs::remove_dir_all(dir).unwrap();
}

/// One stored entry, for the damage tests: the cache, its spec, key and
/// document.
pub(crate) fn one_entry(name: &str) -> (PathBuf, FeatureSpec, DocKey, Vec<u8>) {
    let dir = temp_dir(name);
    let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    let spec = spec(r#"{"extractor": "byte_histogram"}"#);
    let doc: Vec<u8> = (0..=255u8).cycle().take(3000).chain([7; 1000]).collect();
    cache.extract(&spec, &[&doc]).unwrap();
    (dir, spec, DocKey::of_content(&doc), doc)
}

#[test]
fn a_damaged_entry_is_deleted_and_missed() {
    let edits = [
        "UPDATE row_data SET row_values = substr(row_values, 1, 40) || x'01' || substr(row_values, 42)",
        "UPDATE entries SET checksum = checksum + 1",
        "UPDATE entries SET width = 255",
        "UPDATE entries SET dtype = 'int32'",
        "UPDATE entries SET layout = 'nonsense'",
        "UPDATE entries SET doc = x'00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff'",
        "UPDATE row_data SET row_values = 'text, not a blob'",
        "DELETE FROM row_data",
        "UPDATE entries SET checksum = 'text'",
        "UPDATE row_data SET aux = x'0100000000000000'",
    ];
    for edit in edits {
        let (dir, spec, key, doc) = one_entry("damage");
        Connection::open(dir.join(DB_FILE))
            .unwrap()
            .execute_batch(edit)
            .unwrap();
        let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
        let moved = DocKey([
            0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
            0xee, 0xff, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
            0xcc, 0xdd, 0xee, 0xff,
        ]);
        assert!(cache.get(&spec, &key).unwrap().is_none(), "{edit}");
        assert!(cache.get(&spec, &moved).unwrap().is_none(), "{edit}");
        let stats = cache.stats().unwrap();
        assert_eq!((stats.corrupt, stats.entries), (1, 0), "{edit}");
        // Recomputed and stored again.
        let row = cache.extract(&spec, &[&doc]).unwrap();
        assert!(row.same_bits(&spec.build().unwrap().extract_batch(&[&doc]).unwrap()));
        assert!(cache.get(&spec, &key).unwrap().is_some(), "{edit}");
        drop(cache);
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn a_flipped_byte_in_the_database_file_is_never_served() {
    let (dir, spec, key, doc) = one_entry("flip");
    let stored = StoredRow::of(&spec.build().unwrap().extract_batch(&[&doc]).unwrap(), 0);
    // The cache was closed: the WAL is checkpointed into the file.
    let db = dir.join(DB_FILE);
    let mut bytes = std::fs::read(&db).unwrap();
    let at = bytes
        .windows(64)
        .position(|w| w == &stored.values[512..576])
        .expect("the row's values in the file");
    bytes[at + 10] ^= 0x40;
    std::fs::write(&db, &bytes).unwrap();
    let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    assert!(cache.get(&spec, &key).unwrap().is_none());
    assert_eq!(cache.stats().unwrap().corrupt, 1);
    drop(cache);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_options_are_refused_saying_what_is_allowed() {
    let dir = temp_dir("options");
    for max_bytes in [0, MIN_MAX_BYTES - 1, MAX_MAX_BYTES + 1] {
        let err = FeatureCache::open(
            &dir,
            CacheOptions {
                max_bytes,
                ..CacheOptions::default()
            },
        )
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(
            err.message().contains(&format!("from {MIN_MAX_BYTES}")),
            "{err}"
        );
    }
    let err = CacheKey::from_name("mtime").unwrap_err();
    assert!(err.message().contains("content, stat"), "{err}");
    // A row of another spec's output.
    let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    let hist = spec(r#"{"extractor": "byte_histogram"}"#);
    let other = spec(r#"{"extractor": "byte_entropy_histogram"}"#);
    let row = other.build().unwrap().extract_batch(&[b"x"]).unwrap();
    let err = cache.put(&hist, &DocKey::of_content(b"x"), &row);
    assert!(err.is_ok() || err.unwrap_err().kind() == ErrorKind::InvalidArgument);
    let two = hist.build().unwrap().extract_batch(&[b"x", b"y"]).unwrap();
    let err = cache
        .put(&hist, &DocKey::of_content(b"x"), &two)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    drop(cache);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_cap_evicts_the_least_recently_used_down_to_90_percent() {
    let dir = temp_dir("cap");
    let options = CacheOptions {
        max_bytes: MIN_MAX_BYTES,
        ..CacheOptions::default()
    };
    let cache = FeatureCache::open(&dir, options).unwrap();
    let spec = spec(r#"{"extractor": "byte_histogram"}"#);
    let docs: Vec<Vec<u8>> = (0..60u32)
        .map(|i| format!("doc {i}").into_bytes())
        .collect();
    let refs: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
    let entry = 256 * 4 + ENTRY_OVERHEAD;
    // 40 entries (clock 1-40), fit: 47,360 bytes.
    cache.extract(&spec, &refs[..40]).unwrap();
    assert_eq!(cache.stats().unwrap().bytes, 40 * entry);
    // Docs 0-4 used again (clock 41-45).
    cache.extract(&spec, &refs[..5]).unwrap();
    // 20 more in one batch (clock 46-65): 71,040 bytes > 65,536, so the
    // least recently used go until at most 58,977 (90%): 11 of them, the
    // docs 5-15.
    cache.extract(&spec, &refs[40..]).unwrap();
    let stats = cache.stats().unwrap();
    assert_eq!(
        (stats.evicted, stats.entries, stats.bytes),
        (11, 49, 49 * entry)
    );
    assert!(stats.bytes <= MIN_MAX_BYTES / 10 * 9);
    for (i, d) in refs.iter().enumerate() {
        let present = cache.get(&spec, &DocKey::of_content(d)).unwrap().is_some();
        assert_eq!(present, !(5..=15).contains(&i), "doc {i}");
    }
    // An entry larger than the cap is not stored (and evicts nothing).
    let big = self::spec(r#"{"extractor": "byte_sequence", "params": {"max_len": 100000}}"#);
    cache.extract(&big, &[b"x"]).unwrap();
    assert!(cache
        .get(&big, &DocKey::of_content(b"x"))
        .unwrap()
        .is_none());
    assert_eq!(cache.stats().unwrap().entries, 49);
    drop(cache);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_stat_key_trusts_the_metadata() {
    let dir = temp_dir("stat");
    let options = CacheOptions {
        key: CacheKey::Stat,
        ..CacheOptions::default()
    };
    let cache = FeatureCache::open(&dir, options).unwrap();
    let spec = spec(r#"{"extractor": "byte_histogram"}"#);
    let extractor = spec.build().unwrap();
    let path = dir.join("doc.bin");
    let p = path.as_os_str().as_bytes();
    let (a, b): (&[u8], &[u8]) = (b"contents A, 24 bytes....", b"contents B, 24 bytes....");
    std::fs::write(&path, a).unwrap();
    let key = DocKey::of_file_stat(p, 1 << 20).unwrap();
    assert_ne!(key, DocKey::of_content(a));
    assert_ne!(
        key,
        DocKey::of_file_stat(p, 10).unwrap(),
        "max_bytes is in the key"
    );
    let first = cache.extract_files(&spec, &[p], 1 << 20).unwrap();
    assert!(first
        .batch
        .same_bits(&extractor.extract_batch(&[a]).unwrap()));
    let hit = cache.extract_files(&spec, &[p], 1 << 20).unwrap();
    assert!(hit.batch.same_bits(&extractor.extract_batch(&[a]).unwrap()));
    assert_eq!(cache.stats().unwrap().hits, 1);
    // Same size, mtime set back: the ctime still changed, so a miss.
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::fs::write(&path, b).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let got = cache.extract_files(&spec, &[p], 1 << 20).unwrap();
    assert!(got.batch.same_bits(&extractor.extract_batch(&[b]).unwrap()));
    // The risk: whatever is stored under the file's metadata is served,
    // the content never looked at. A rewrite that keeps every field (the
    // same size within one timestamp tick) is exactly this: A's row
    // stored under the metadata of the file that now holds B.
    let now = DocKey::of_file_stat(p, 1 << 20).unwrap();
    cache
        .put(&spec, &now, &extractor.extract_batch(&[a]).unwrap())
        .unwrap();
    let stale = cache.extract_files(&spec, &[p], 1 << 20).unwrap();
    assert!(stale
        .batch
        .same_bits(&extractor.extract_batch(&[a]).unwrap()));
    // The content key on the same file is never stale.
    let by_content = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    let exact = by_content.extract_files(&spec, &[p], 1 << 20).unwrap();
    assert!(exact
        .batch
        .same_bits(&extractor.extract_batch(&[b]).unwrap()));
    // Rewrites at the same size as fast as possible: served stale exactly
    // when the metadata did not change (how often depends on the file
    // system's timestamps: Linux 6.13+ gives a file whose times were just
    // read fine-grained ones on its next change).
    let mut same_metadata = 0;
    for round in 0..200u32 {
        let old = format!("round {round:05} old").into_bytes();
        let new = format!("round {round:05} new").into_bytes();
        std::fs::write(&path, &old).unwrap();
        cache.extract_files(&spec, &[p], 1 << 20).unwrap();
        let before = DocKey::of_file_stat(p, 1 << 20).unwrap();
        let stored = cache.get(&spec, &before).unwrap();
        std::fs::write(&path, &new).unwrap();
        let unchanged = DocKey::of_file_stat(p, 1 << 20).unwrap() == before;
        let got = cache.extract_files(&spec, &[p], 1 << 20).unwrap();
        same_metadata += usize::from(unchanged);
        let expected = match (unchanged, stored) {
            (true, Some(stored)) => stored,
            _ => extractor.extract_batch(&[&new]).unwrap(),
        };
        assert!(got.batch.same_bits(&expected), "round {round}");
    }
    eprintln!("stat key: {same_metadata} of 200 same-size rewrites kept the metadata");
    drop((cache, by_content));
    std::fs::remove_dir_all(dir).unwrap();
}

/// A file whose entry is found damaged after the probe that let its
/// contents go: read again, extracted, stored again.
#[test]
fn a_damaged_entry_of_a_file_is_read_again() {
    let (dir, spec, key, doc) = one_entry("damaged-file");
    let path = dir.join("doc.bin");
    std::fs::write(&path, &doc).unwrap();
    Connection::open(dir.join(DB_FILE))
        .unwrap()
        .execute_batch("UPDATE entries SET checksum = checksum + 1")
        .unwrap();
    let cache = FeatureCache::open(&dir, CacheOptions::default()).unwrap();
    let p = path.as_os_str().as_bytes();
    let got = cache.extract_files(&spec, &[p], 1 << 20).unwrap();
    let fresh = spec.build().unwrap().extract_batch(&[&doc]).unwrap();
    assert!(got.batch.same_bits(&fresh));
    assert!(got.errors[0].is_none());
    let stats = cache.stats().unwrap();
    assert_eq!((stats.corrupt, stats.misses, stats.entries), (1, 1, 1));
    assert!(cache.get(&spec, &key).unwrap().unwrap().same_bits(&fresh));
    drop(cache);
    std::fs::remove_dir_all(dir).unwrap();
}
