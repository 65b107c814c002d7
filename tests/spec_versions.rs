//! Output versions are pinned: each registry example's output on a fixed
//! corpus hashes to the digest in `tests/golden/spec_outputs.tsv`, recorded
//! with the extractor's `output_version`. A change to any output without a
//! bump of `output_version` (crates/rustfx/src/registry.rs) fails here, so specs,
//! features and models made by another build are never silently taken for
//! this one's.
//!
//! After an intended change: bump `output_version`, then re-record with
//! `RUSTFX_BLESS=1 cargo test --release --test spec_versions`.

use rustfx::extractor::Extractor;
use rustfx::output::{Batch, Values};
use rustfx::registry::EXTRACTORS;
use rustfx::spec::FeatureSpec;
use std::collections::BTreeMap;
use std::path::Path;

const GOLDEN: &str = "tests/golden/spec_outputs.tsv";

/// Fixed documents: edge cases, text (ASCII, UTF-8, invalid UTF-8),
/// pseudo-random bytes, and committed PE files.
fn corpus() -> Vec<Vec<u8>> {
    let mut docs: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"a".to_vec(),
        b"MZ".to_vec(),
        b"The quick brown Fox jumps over the lazy dog. C:\\Windows http://x.y HKEY_LOCAL"
            .repeat(40),
        "Größe café naïve déjà-vu ﬁ ǅ İstanbul ΣΑΣ 東京 ١٢٣ x²\u{2003}y\u{a0}z"
            .repeat(20)
            .into_bytes(),
        b"def f(x):\n\treturn x + 1  # comment\r\n\x00\x01\xff\xfe invalid \xc3\x28 utf8"
            .repeat(30),
        b"W\0i\0d\0e\0 \0s\0t\0r\0i\0n\0g\0\0\0ascii string here\0".repeat(10),
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for len in [1usize, 7, 64, 1000, 2047, 2048, 3073, 20000] {
        docs.push(
            (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 56) as u8
                })
                .collect(),
        );
    }
    for pe in [
        "tests/golden/pe/launchers/distlib_t32.exe",
        "tests/golden/pe/launchers/distlib_w64.exe",
        "tests/golden/pe/signed/t32_ts.exe",
        "tests/golden/pe/built/exe32_tls_callback.exe",
    ] {
        docs.push(
            std::fs::read(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(pe))
                .expect(pe),
        );
    }
    docs
}

/// FNV-1a, 64 bits.
struct Digest(u64);

impl Digest {
    fn new() -> Self {
        Digest(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn len(&mut self, n: usize) {
        self.bytes(&(n as u64).to_le_bytes());
    }
}

/// The digest of an extractor's outputs over the corpus: every value's
/// bits, and every ragged or sparse row's length.
fn digest(extractor: &Extractor, docs: &[Vec<u8>]) -> u64 {
    let mut d = Digest::new();
    for doc in docs {
        // One document per batch, as the digests were first made.
        let batch = extractor
            .extract_batch(&[doc.as_slice()])
            .expect("a built extractor extracts");
        // Values as little-endian bytes, as the digests were first made.
        let values = batch.values();
        match (&batch, values) {
            (Batch::Dense { .. }, _) => d.bytes(values.as_bytes()),
            (Batch::Ragged { .. }, Values::String(strings)) => {
                // Each string's end as a u64, as the digests were first made.
                let ends = strings.offsets.ends();
                d.len(ends.len());
                ends.iter()
                    .for_each(|&v| d.bytes(&(v as u64).to_le_bytes()));
                d.bytes(&strings.bytes);
            }
            (Batch::Ragged { .. }, _) => {
                d.len(values.len());
                d.bytes(values.as_bytes());
            }
            (Batch::Sparse { indices, .. }, _) => {
                d.len(indices.len());
                let size = values.dtype().size().expect("numeric sparse values");
                for (i, v) in indices.iter().zip(values.as_bytes().chunks_exact(size)) {
                    d.bytes(&i.to_le_bytes());
                    d.bytes(v);
                }
            }
        }
    }
    d.0
}

/// (extractor, example index) -> (output version, digest) for this build.
fn current() -> BTreeMap<(String, usize), (u32, String)> {
    let docs = corpus();
    let mut rows = BTreeMap::new();
    for entry in EXTRACTORS {
        for (i, example) in entry.examples.iter().enumerate() {
            let text = format!(r#"{{"extractor":"{}","params":{example}}}"#, entry.name);
            let extractor = FeatureSpec::from_json(&text).unwrap().build().unwrap();
            let value = (
                entry.output_version,
                format!("{:016x}", digest(&extractor, &docs)),
            );
            rows.insert((entry.name.to_string(), i), value);
        }
    }
    rows
}

#[test]
fn every_output_change_bumps_the_output_version() {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(GOLDEN);
    let now = current();
    if std::env::var_os("RUSTFX_BLESS").is_some() {
        let mut text =
            String::from("# extractor\texample\toutput_version\tdigest (tests/spec_versions.rs)\n");
        for ((name, i), (version, digest)) in &now {
            text += &format!("{name}\t{i}\t{version}\t{digest}\n");
        }
        std::fs::write(&path, text).unwrap();
        return;
    }
    let golden: BTreeMap<(String, usize), (u32, String)> = std::fs::read_to_string(&path)
        .expect("tests/golden/spec_outputs.tsv")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            (
                (f[0].to_string(), f[1].parse().unwrap()),
                (f[2].parse().unwrap(), f[3].to_string()),
            )
        })
        .collect();
    let bless = "then run RUSTFX_BLESS=1 cargo test --release --test spec_versions";
    let mut problems = Vec::new();
    for ((name, i), (version, digest)) in &now {
        match golden.get(&(name.clone(), *i)) {
            None => problems.push(format!("{name} example {i}: no golden digest; {bless}")),
            Some((v, g)) if v == version && g != digest => problems.push(format!(
                "{name} example {i}: its output changed but its output_version is still \
                 {version}: bump output_version in crates/rustfx/src/registry.rs, {bless}"
            )),
            Some((v, _)) if v != version => problems.push(format!(
                "{name} example {i}: output_version is {version}, the golden digest was \
                 recorded at {v}; {bless}"
            )),
            Some(_) => {}
        }
    }
    for key in golden.keys().filter(|k| !now.contains_key(*k)) {
        problems.push(format!(
            "{} example {}: golden row of no example; {bless}",
            key.0, key.1
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The check itself catches a changed output: one value of one document
/// differs -> another digest.
#[test]
fn a_changed_value_changes_the_digest() {
    let docs = corpus();
    let spec = FeatureSpec::from_json(r#"{"extractor":"byte_histogram"}"#).unwrap();
    let before = digest(&spec.build().unwrap(), &docs);
    let mut changed = docs.clone();
    changed[3][0] ^= 1;
    assert_ne!(before, digest(&spec.build().unwrap(), &changed));
}
