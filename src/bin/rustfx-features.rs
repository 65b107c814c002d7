//! A pure-Rust feature extractor: the same features as the TensorFlow ops,
//! with no TensorFlow anywhere. One line per file, values separated by
//! spaces (floats print in shortest round-trip form, so they are exact).
//! Files are processed in parallel (rayon) and printed in order.
//!
//! ```text
//! rustfx-features byte_histogram FILE...
//! rustfx-features byte_entropy_histogram WINDOW STEP FILE...
//! rustfx-features string_features FILE...
//! rustfx-features byte_sequence MAX_LEN SHIFT PAD_VALUE head|head_tail FILE...
//! rustfx-features hashed_ngrams TOKENIZER HASH NUM_BUCKETS WIDTH[,WIDTH...] LOWERCASE FILE...
//! ```

use rustfx::batch::map_documents;
use rustfx::byte_features::{ByteEntropyHistogram, ByteHistogram, EmptyInput, StringFeatures};
use rustfx::byte_sequence::{ByteSequence, Sampling};
use rustfx::extractor::RowExtractor;
use rustfx::ngrams::{HashFamily, NgramConfig, NgramHasher, Tokenizer};
use rustfx::read::{read_file, MAX_READ_BYTES};
use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

type Extract = Box<dyn Fn(&[u8]) -> rustfx::Result<Vec<String>> + Sync>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rustfx-features: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Files are read and extracted this many at a time, in parallel.
const FILES_PER_BATCH: usize = 64;

fn run(args: &[String]) -> rustfx::Result<()> {
    let (extract, files) = parse(args)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    for batch in files.chunks(FILES_PER_BATCH) {
        let contents = batch
            .iter()
            .map(|file| read_file(std::ffi::OsStr::new(file).as_bytes(), MAX_READ_BYTES))
            .collect::<rustfx::Result<Vec<_>>>()?;
        for row in map_documents(&contents, &extract) {
            writeln!(out, "{}", row?.join(" ")).map_err(io_error)?;
        }
    }
    out.flush().map_err(io_error)
}

fn io_error(e: std::io::Error) -> rustfx::Error {
    rustfx::Error::new(rustfx::ErrorKind::Io, e.to_string())
}

fn usage() -> rustfx::Error {
    rustfx::Error::invalid_argument(
        "usage: rustfx-features (byte_histogram | byte_entropy_histogram WINDOW STEP | \
         string_features | byte_sequence MAX_LEN SHIFT PAD head|head_tail | \
         hashed_ngrams TOKENIZER HASH NUM_BUCKETS WIDTHS LOWERCASE) FILE...",
    )
}

fn number<T: std::str::FromStr>(arg: Option<&String>) -> rustfx::Result<T> {
    arg.and_then(|a| a.parse().ok()).ok_or_else(usage)
}

/// Any fixed-width extractor as a CLI extractor: one row per file, each
/// value in shortest round-trip form.
fn rows<E: RowExtractor + 'static>(extractor: E) -> Extract
where
    E::Value: std::fmt::Debug,
{
    Box::new(move |d: &[u8]| Ok(extractor.row(d).iter().map(|v| format!("{v:?}")).collect()))
}

fn parse(args: &[String]) -> rustfx::Result<(Extract, &[String])> {
    let name = args.first().ok_or_else(usage)?;
    let rest = &args[1..];
    Ok(match name.as_str() {
        "byte_histogram" => (rows(ByteHistogram::new(EmptyInput::Zeros)), rest),
        "string_features" => (rows(StringFeatures), rest),
        "byte_entropy_histogram" => (
            rows(ByteEntropyHistogram::new(
                number(rest.first())?,
                number(rest.get(1))?,
                EmptyInput::Zeros,
            )?),
            rest.get(2..).unwrap_or_default(),
        ),
        "byte_sequence" => (
            rows(ByteSequence::new(
                number(rest.first())?,
                number(rest.get(1))?,
                number(rest.get(2))?,
                Sampling::from_name(rest.get(3).ok_or_else(usage)?)?,
            )?),
            rest.get(4..).unwrap_or_default(),
        ),
        "hashed_ngrams" => {
            let widths = rest
                .get(3)
                .ok_or_else(usage)?
                .split(',')
                .map(|w| w.parse().map_err(|_| usage()))
                .collect::<rustfx::Result<Vec<usize>>>()?;
            let hasher = NgramHasher::new(NgramConfig {
                tokenizer: Tokenizer::from_name(rest.first().ok_or_else(usage)?)?,
                hash: HashFamily::from_name(rest.get(1).ok_or_else(usage)?)?,
                num_buckets: number(rest.get(2))?,
                widths,
                lowercase: number(rest.get(4))?,
            })?;
            (
                Box::new(move |d: &[u8]| {
                    let mut ids = Vec::new();
                    hasher.ids(d, &mut ids);
                    Ok(ids.iter().map(i64::to_string).collect())
                }),
                rest.get(5..).unwrap_or_default(),
            )
        }
        _ => return Err(usage()),
    })
}
