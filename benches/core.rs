//! Throughput of the pure-Rust core on real files from this machine, one
//! thread vs `batch::map_documents` (rayon), in one run on the same data:
//! every example of the registry (`rustfx::registry`), and the usual
//! hashed n-gram settings on text.
//!
//!     cargo bench --bench core
//!     cargo bench --bench core -- explain   # explanation against extraction
//!
//! No criterion: a best-of-N wall-clock loop is enough for MB/s ratios and
//! keeps the dependency list to the design card.

use rustfx::batch::map_documents;
use rustfx::registry::EXTRACTORS;
use rustfx::spec::FeatureSpec;
use std::hint::black_box;
use std::time::Instant;

fn corpus() -> Vec<Vec<u8>> {
    let mut files = Vec::new();
    for dir in ["/usr/bin", "/usr/lib/python3.11", "/usr/include"] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths.into_iter().filter(|p| p.is_file()).take(150) {
            if let Ok(data) = std::fs::read(&path) {
                if data.len() <= 8 << 20 {
                    files.push(data);
                }
            }
        }
    }
    files
}

fn best_of<T>(repeat: usize, mut f: impl FnMut() -> T) -> f64 {
    (0..repeat)
        .map(|_| {
            let start = Instant::now();
            black_box(f());
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn bench<T: Send>(name: &str, docs: &[Vec<u8>], extract: impl Fn(&[u8]) -> T + Sync) {
    let mb = docs.iter().map(Vec::len).sum::<usize>() as f64 / 1e6;
    let serial = best_of(3, || docs.iter().map(|d| extract(d)).collect::<Vec<_>>());
    let parallel = best_of(3, || map_documents(docs, &extract));
    println!(
        "{name:<40} {:>8.1} MB/s serial {:>8.1} MB/s rayon ({:.2}x)",
        mb / serial,
        mb / parallel,
        serial / parallel
    );
}

/// hashed_ngrams settings timed on the text files (the README's figures),
/// beside the registry's examples timed on every file.
const TEXT_SPECS: &[&str] = &[
    r#"{"extractor":"hashed_ngrams","params":{"num_buckets":1048576,"ngram_widths":[1,2]}}"#,
    r#"{"extractor":"hashed_ngrams","params":{"num_buckets":1048576,"ngram_widths":[1,2],"tokenizer":"word","lowercase":true}}"#,
    r#"{"extractor":"hashed_ngrams","params":{"num_buckets":1048576,"ngram_widths":[1,2],"output":"sparse"}}"#,
    r#"{"extractor":"hashed_ngrams","params":{"num_buckets":1048576,"ngram_widths":[1,2],"tokenizer":"sklearn_word","lowercase":true,"hash":"murmur3","alternate_sign":true,"norm":"l2","output":"sparse"}}"#,
];

fn bench_spec(label: &str, docs: &[Vec<u8>], spec: &FeatureSpec) {
    let extractor = spec.build().expect("a checked spec builds");
    let params = serde_json::to_string(&spec.to_value()["params"]).unwrap_or_default();
    let name = format!("{} {params} ({label})", spec.extractor());
    bench(&name, docs, |d| {
        extractor.extract_batch(&[d]).map(|b| b.rows())
    });
}

/// Each registry example's explanation (default caps) against its
/// extraction, one thread, on the same files: what `--explain` costs.
fn bench_explain(docs: &[Vec<u8>]) {
    let mb = docs.iter().map(Vec::len).sum::<usize>() as f64 / 1e6;
    for entry in EXTRACTORS {
        for example in entry.examples {
            let text = format!(r#"{{"extractor":"{}","params":{example}}}"#, entry.name);
            let extractor = FeatureSpec::from_json(&text).and_then(|s| s.build());
            let extractor = extractor.expect("registry examples are valid");
            let extract = best_of(3, || {
                docs.iter()
                    .map(|d| extractor.extract_batch(&[d]).map(|b| b.rows()))
                    .collect::<Vec<_>>()
            });
            let explain = best_of(3, || {
                docs.iter()
                    .map(|d| extractor.explain(d).map(|e| e.contributions.len()))
                    .collect::<Vec<_>>()
            });
            println!(
                "{:<60} extract {:>8.1} MB/s explain {:>8.1} MB/s ({:.1}x the time)",
                format!("{} {example}", entry.name).replace(char::is_whitespace, ""),
                mb / extract,
                mb / explain,
                explain / extract
            );
        }
    }
}

fn main() {
    let docs = corpus();
    if std::env::args().any(|a| a == "explain") {
        return bench_explain(&docs);
    }
    let text: Vec<Vec<u8>> = docs.iter().filter(|d| !d.contains(&0)).cloned().collect();
    println!(
        "corpus: {} files, {:.1} MB ({} text files, {:.1} MB); {} threads",
        docs.len(),
        docs.iter().map(Vec::len).sum::<usize>() as f64 / 1e6,
        text.len(),
        text.iter().map(Vec::len).sum::<usize>() as f64 / 1e6,
        rayon::current_num_threads()
    );
    // Every extractor of the registry, on each of its examples.
    for entry in EXTRACTORS {
        for example in entry.examples {
            let text = format!(r#"{{"extractor":"{}","params":{example}}}"#, entry.name);
            let spec = FeatureSpec::from_json(&text).expect("registry examples are valid");
            bench_spec("all", &docs, &spec);
        }
    }
    for text_spec in TEXT_SPECS {
        let spec = FeatureSpec::from_json(text_spec).expect("valid spec");
        bench_spec("text", &text, &spec);
    }
}
