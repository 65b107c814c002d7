//! A pure-Rust feature extractor: the same features as the TensorFlow ops,
//! with no TensorFlow anywhere, for any extractor of the registry. One line
//! per file: values separated by spaces (floats in shortest round-trip
//! form, so they are exact; a sparse value as `index:value`; a string as
//! JSON). Files are processed in parallel (rayon) and printed in order.
//!
//! ```text
//! rustfx-features EXTRACTOR [NAME=VALUE...] FILE...    parameters as JSON values or bare strings
//! rustfx-features --spec SPEC.json FILE...             a FeatureSpec file (rustfx.FeatureSpec.to_json)
//! rustfx-features --print-spec EXTRACTOR [NAME=VALUE...]   its spec, defaults filled in
//! rustfx-features --list                               every extractor and its parameters
//! ```
//!
//! For example `rustfx-features hashed_ngrams num_buckets=1048576
//! ngram_widths=[1,2] tokenizer=word FILE...`. Parameters, defaults and
//! messages are the core's (`rustfx::registry`), as in Python and the ops.

use rustfx::batch::map_documents;
use rustfx::extractor::Extractor;
use rustfx::read::{read_file, MAX_READ_BYTES};
use rustfx::registry::{self, EXTRACTORS};
use rustfx::spec::FeatureSpec;
use serde_json::{Map, Value};
use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

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
    let mut out = BufWriter::new(std::io::stdout().lock());
    match args.first().map(String::as_str) {
        None | Some("-h" | "--help") => return Err(usage()),
        Some("--list") => {
            for entry in EXTRACTORS {
                writeln!(
                    out,
                    "{} (output version {}): {}",
                    entry.name, entry.output_version, entry.doc
                )
                .map_err(io_error)?;
                for p in entry.params {
                    let default = p
                        .default
                        .value()
                        .map_or("required".into(), |v| v.to_json().to_string());
                    writeln!(
                        out,
                        "    {}={} ({}): {}",
                        p.name,
                        default,
                        p.ty.name(),
                        p.doc
                    )
                    .map_err(io_error)?;
                }
            }
        }
        Some("--print-spec") => {
            let (spec, _) = spec_from_args(&args[1..])?;
            writeln!(out, "{}", spec.to_json()).map_err(io_error)?;
        }
        Some("--spec") => {
            let path = args.get(1).ok_or_else(usage)?;
            let text = read_file(path.as_bytes(), rustfx::spec::MAX_SPEC_BYTES as u64 + 1)?;
            let text = String::from_utf8(text).map_err(|_| {
                rustfx::Error::invalid_argument(format!(
                    "{path}: a feature spec must be UTF-8 JSON"
                ))
            })?;
            let (spec, extractor) = rustfx::spec::load(&text)
                .map_err(|e| rustfx::Error::new(e.kind(), format!("{path}: {e}")))?;
            extract(&extractor, &args[2..], &mut out)?;
            drop(spec);
        }
        Some(_) => {
            let (spec, files) = spec_from_args(args)?;
            extract(&spec.build()?, files, &mut out)?;
        }
    }
    out.flush().map_err(io_error)
}

/// `EXTRACTOR [NAME=VALUE...]` and the arguments after them (the files).
/// A `NAME=VALUE` is a parameter when NAME is one of the extractor's; its
/// VALUE is read as JSON (`[1,2]`, `true`, `null`, `7`), else as a string.
fn spec_from_args(args: &[String]) -> rustfx::Result<(FeatureSpec, &[String])> {
    let name = args.first().ok_or_else(usage)?;
    let entry = registry::find(name)?;
    let mut params = Map::new();
    let mut rest = &args[1..];
    while let Some((key, value)) = rest.first().and_then(|a| a.split_once('=')) {
        if !entry.params.iter().any(|p| p.name == key) {
            break;
        }
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::from(value));
        params.insert(key.to_string(), value);
        rest = &rest[1..];
    }
    let spec = FeatureSpec::from_value(&serde_json::json!({"extractor": name, "params": params}))?;
    Ok((spec, rest))
}

fn extract(extractor: &Extractor, files: &[String], out: &mut impl Write) -> rustfx::Result<()> {
    for batch in files.chunks(FILES_PER_BATCH) {
        let contents = batch
            .iter()
            .map(|file| read_file(std::ffi::OsStr::new(file).as_bytes(), MAX_READ_BYTES))
            .collect::<rustfx::Result<Vec<_>>>()?;
        for row in map_documents(&contents, |doc| extractor.text_row(doc)) {
            writeln!(out, "{}", row.join(" ")).map_err(io_error)?;
        }
    }
    Ok(())
}

fn io_error(e: std::io::Error) -> rustfx::Error {
    rustfx::Error::new(rustfx::ErrorKind::Io, e.to_string())
}

fn usage() -> rustfx::Error {
    let names: Vec<_> = EXTRACTORS.iter().map(|e| e.name).collect();
    rustfx::Error::invalid_argument(format!(
        "usage: rustfx-features EXTRACTOR [NAME=VALUE...] FILE... | --spec SPEC.json FILE... \
         | --print-spec EXTRACTOR [NAME=VALUE...] | --list\nextractors: {}",
        names.join(", ")
    ))
}
