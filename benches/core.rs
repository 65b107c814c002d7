//! Throughput of the pure-Rust core on real files from this machine, one
//! thread vs `batch::map_documents` (rayon), in one run on the same data.
//!
//!     cargo bench --bench core
//!
//! No criterion: a best-of-N wall-clock loop is enough for MB/s ratios and
//! keeps the dependency list to the design card.

use rustfx::batch::map_documents;
use rustfx::byte_features::{
    ByteEntropyHistogram, ByteHistogram, EmptyInput, StringFeatures, EMBER_STEP, EMBER_WINDOW,
};
use rustfx::byte_sequence::ByteSequence;
use rustfx::ember2024::general::GeneralFileInfo;
use rustfx::ember2024::strings::Ember2024Strings;
use rustfx::ember2024::EmberFeatures;
use rustfx::extractor::RowExtractor;
use rustfx::ngrams::{
    CountOptions, HashFamily, NgramConfig, NgramCounter, NgramHasher, Norm, SparseRow, Tokenizer,
};
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

/// Any fixed-width extractor, one row per document.
fn bench_rows<E: RowExtractor>(name: &str, docs: &[Vec<u8>], extractor: &E) {
    bench(name, docs, |d| extractor.row(d));
}

fn hasher(
    tokenizer: Tokenizer,
    hash: HashFamily,
    widths: Vec<usize>,
    lowercase: bool,
) -> NgramHasher {
    NgramHasher::new(NgramConfig {
        tokenizer,
        widths,
        lowercase,
        hash,
        num_buckets: 1 << 20,
    })
    .expect("valid config")
}

fn main() {
    let docs = corpus();
    let text: Vec<Vec<u8>> = docs.iter().filter(|d| !d.contains(&0)).cloned().collect();
    println!(
        "corpus: {} files, {:.1} MB ({} text files, {:.1} MB); {} threads",
        docs.len(),
        docs.iter().map(Vec::len).sum::<usize>() as f64 / 1e6,
        text.len(),
        text.iter().map(Vec::len).sum::<usize>() as f64 / 1e6,
        rayon::current_num_threads()
    );
    bench_rows(
        "byte_histogram (all)",
        &docs,
        &ByteHistogram::new(EmptyInput::Zeros),
    );
    bench_rows(
        "byte_entropy_histogram 2048/1024 (all)",
        &docs,
        &ByteEntropyHistogram::new(EMBER_WINDOW, EMBER_STEP, EmptyInput::Zeros).expect("valid"),
    );
    bench_rows("string_features (all)", &docs, &StringFeatures);
    bench_rows("general_file_info (all)", &docs, &GeneralFileInfo);
    bench_rows(
        "ember2024_string_features (all)",
        &docs,
        &Ember2024Strings::new().expect("patterns compile"),
    );
    bench_rows(
        "ember_features, EMBER2024 2568 values (all)",
        &docs,
        &EmberFeatures::new(3, &[]).expect("valid"),
    );
    bench_rows(
        "byte_sequence malconv2 64 KiB (all)",
        &docs,
        &ByteSequence::malconv2(1 << 16).expect("valid"),
    );
    let ids = |h: NgramHasher| {
        move |d: &[u8]| {
            let mut out = Vec::new();
            h.ids(d, &mut out);
            out
        }
    };
    bench(
        "ngrams whitespace 1-2 ids (text)",
        &text,
        ids(hasher(
            Tokenizer::Whitespace,
            HashFamily::Fingerprint64,
            vec![1, 2],
            false,
        )),
    );
    bench(
        "ngrams word 1-2 ids (text)",
        &text,
        ids(hasher(
            Tokenizer::Word,
            HashFamily::Fingerprint64,
            vec![1, 2],
            true,
        )),
    );
    bench(
        "ngrams byte 4 ids (all)",
        &docs,
        ids(hasher(Tokenizer::Byte, HashFamily::Murmur3, vec![4], false)),
    );
    let plain = CountOptions {
        binary: false,
        alternate_sign: false,
        norm: Norm::None,
    };
    let sparse = |h: NgramHasher| {
        let counter = NgramCounter::new(h, plain).expect("valid");
        move |d: &[u8]| {
            let mut row = SparseRow::default();
            counter.counts(d, &mut row);
            row
        }
    };
    bench(
        "ngrams whitespace 1-2 sparse (text)",
        &text,
        sparse(hasher(
            Tokenizer::Whitespace,
            HashFamily::Fingerprint64,
            vec![1, 2],
            false,
        )),
    );
    bench(
        "ngrams word 1-2 sparse (text)",
        &text,
        sparse(hasher(
            Tokenizer::Word,
            HashFamily::Fingerprint64,
            vec![1, 2],
            true,
        )),
    );
    let sk = hasher(
        Tokenizer::SklearnWord,
        HashFamily::Murmur3,
        vec![1, 2],
        true,
    );
    let l2 = CountOptions {
        binary: false,
        alternate_sign: true,
        norm: Norm::L2,
    };
    let counter = NgramCounter::new(sk, l2).expect("valid");
    bench("ngrams sklearn_word 1-2 counts l2 (text)", &text, |d| {
        let mut row = SparseRow::default();
        counter.counts(d, &mut row);
        row
    });
}
