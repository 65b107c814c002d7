//! A pure-Rust feature extractor: the same features as the TensorFlow ops,
//! with no TensorFlow anywhere. One line per file, values separated by
//! spaces (floats print in shortest round-trip form, so they are exact).
//! Files are processed in parallel (rayon) and printed in order.
//!
//! ```text
//! rustfx-features byte_histogram FILE...
//! rustfx-features byte_entropy_histogram WINDOW STEP FILE...
//! rustfx-features string_features FILE...
//! rustfx-features general_file_info FILE...
//! rustfx-features ember2024_string_features FILE...
//! rustfx-features byte_sequence MAX_LEN SHIFT PAD_VALUE head|head_tail FILE...
//! rustfx-features hashed_ngrams TOKENIZER HASH NUM_BUCKETS WIDTH[,WIDTH...] LOWERCASE FILE...
//! ```

use rustfx::batch::map_documents;
use rustfx::byte_features::{ByteEntropyHistogram, ByteHistogram, EmptyInput, StringFeatures};
use rustfx::byte_sequence::{ByteSequence, Sampling};
use rustfx::ember2024::general::GeneralFileInfo;
use rustfx::ember2024::strings::Ember2024Strings;
use rustfx::ember2024::{parse_groups, EmberFeatures};
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

/// One subcommand: its name, its parameters (in the usage line) and how
/// its extractor is built from exactly those parameters. A new extractor is
/// one more entry.
struct Command {
    name: &'static str,
    params: &'static [&'static str],
    build: fn(&[String]) -> rustfx::Result<Extract>,
}

const COMMANDS: &[Command] = &[
    Command {
        name: "byte_histogram",
        params: &[],
        build: |_| Ok(rows(ByteHistogram::new(EmptyInput::Zeros))),
    },
    Command {
        name: "byte_entropy_histogram",
        params: &["WINDOW", "STEP"],
        build: |p| {
            let (window, step) = (number(&p[0])?, number(&p[1])?);
            Ok(rows(ByteEntropyHistogram::new(
                window,
                step,
                EmptyInput::Zeros,
            )?))
        },
    },
    Command {
        name: "string_features",
        params: &[],
        build: |_| Ok(rows(StringFeatures)),
    },
    Command {
        name: "general_file_info",
        params: &[],
        build: |_| Ok(rows(GeneralFileInfo)),
    },
    Command {
        name: "ember2024_string_features",
        params: &[],
        build: |_| Ok(rows(Ember2024Strings::new()?)),
    },
    Command {
        name: "ember_features",
        params: &["FEATURE_VERSION", "GROUPS"],
        build: |p| {
            // GROUPS: comma-separated group names, or "all".
            let groups = if p[1] == "all" {
                Vec::new()
            } else {
                parse_groups(&p[1])?
            };
            Ok(rows(EmberFeatures::new(number(&p[0])?, &groups)?))
        },
    },
    Command {
        name: "byte_sequence",
        params: &["MAX_LEN", "SHIFT", "PAD_VALUE", "head|head_tail"],
        build: |p| {
            let sampling = Sampling::from_name(&p[3])?;
            let sequence =
                ByteSequence::new(number(&p[0])?, number(&p[1])?, number(&p[2])?, sampling)?;
            Ok(rows(sequence))
        },
    },
    Command {
        name: "hashed_ngrams",
        params: &[
            "TOKENIZER",
            "HASH",
            "NUM_BUCKETS",
            "WIDTH[,WIDTH...]",
            "LOWERCASE",
        ],
        build: |p| {
            let hasher = NgramHasher::new(NgramConfig {
                tokenizer: Tokenizer::from_name(&p[0])?,
                hash: HashFamily::from_name(&p[1])?,
                num_buckets: number(&p[2])?,
                widths: p[3].split(',').map(number).collect::<rustfx::Result<_>>()?,
                lowercase: number(&p[4])?,
            })?;
            Ok(Box::new(move |d: &[u8]| {
                let mut ids = Vec::new();
                hasher.ids(d, &mut ids);
                Ok(ids.iter().map(i64::to_string).collect())
            }))
        },
    },
];

fn usage() -> rustfx::Error {
    let commands: Vec<String> = COMMANDS
        .iter()
        .map(|c| {
            [c.name]
                .iter()
                .chain(c.params)
                .copied()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    rustfx::Error::invalid_argument(format!(
        "usage: rustfx-features ({}) FILE...",
        commands.join(" | ")
    ))
}

fn number<T: std::str::FromStr>(arg: &str) -> rustfx::Result<T> {
    arg.parse().map_err(|_| usage())
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
    let command = COMMANDS.iter().find(|c| c.name == name).ok_or_else(usage)?;
    let params = args.get(1..1 + command.params.len()).ok_or_else(usage)?;
    let files = &args[1 + command.params.len()..];
    Ok(((command.build)(params)?, files))
}
