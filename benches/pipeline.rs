//! The pure-Rust ceiling of `benches/pipeline.py`: the same read + FX as the
//! TensorFlow pipeline (`read_files` + `hashed_ngrams(output="sequence")`),
//! in a plain Rust loop over the crate on rayon's pool, with no TensorFlow.
//!
//!     cargo bench --bench pipeline -- FILE_LIST ROWS_OUT [REPEAT]
//!
//! FILE_LIST has one path per line. Prints one line of JSON: the best-of-
//! REPEAT seconds, the files and bytes read; then writes the int64 rows
//! (native endian, one row of `MAX_TOKENS` per file, in list order) to
//! ROWS_OUT so the Python side can check they equal the TF pipelines'.

use rayon::prelude::*;
use rustfx::extractor::RowExtractor;
use rustfx::ngrams::{HashFamily, NgramConfig, NgramHasher, NgramSequence, Tokenizer};
use rustfx::read::read_file_into;
use std::io::Write;
use std::time::Instant;

/// Must match benches/pipeline.py.
const MAX_TOKENS: usize = 1024;
const NUM_BUCKETS: u64 = 1 << 20;
const MAX_BYTES: u64 = 1 << 20;

fn main() {
    // `cargo bench` appends `--bench`; positional arguments are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let (Some(list), Some(out)) = (args.first(), args.get(1)) else {
        eprintln!("usage: cargo bench --bench pipeline -- FILE_LIST ROWS_OUT [REPEAT]");
        std::process::exit(2);
    };
    let repeat: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(3);
    let paths: Vec<String> = std::fs::read_to_string(list)
        .expect("readable file list")
        .lines()
        .map(str::to_owned)
        .collect();
    let sequence = NgramSequence::new(
        NgramHasher::new(NgramConfig {
            tokenizer: Tokenizer::Whitespace,
            widths: vec![1, 2],
            lowercase: false,
            hash: HashFamily::Fingerprint64,
            num_buckets: NUM_BUCKETS,
        })
        .expect("valid config"),
        MAX_TOKENS,
        -1,
    )
    .expect("valid sequence");

    let mut rows = vec![0i64; paths.len() * MAX_TOKENS];
    let mut best = f64::INFINITY;
    let mut bytes = 0usize;
    for _ in 0..repeat {
        let start = Instant::now();
        bytes = rows
            .par_chunks_mut(MAX_TOKENS)
            .zip(&paths)
            .map_init(Vec::new, |buffer, (row, path)| {
                // One buffer per thread, as the op reading files itself has.
                // Like on_error="empty": a failing file is b"" (the buffer
                // is left empty).
                let _ = read_file_into(path.as_bytes(), MAX_BYTES, buffer);
                sequence.write_row(buffer, row).expect("row of MAX_TOKENS");
                buffer.len()
            })
            .sum();
        best = best.min(start.elapsed().as_secs_f64());
    }
    let mut file = std::io::BufWriter::new(std::fs::File::create(out).expect("writable"));
    for id in &rows {
        file.write_all(&id.to_ne_bytes()).expect("write rows");
    }
    file.flush().expect("write rows");
    println!(
        "{{\"seconds\": {best}, \"files\": {}, \"bytes\": {bytes}, \"threads\": {}}}",
        paths.len(),
        rayon::current_num_threads()
    );
}
