//! A pure-Rust feature extractor: the same features as the TensorFlow ops,
//! with no TensorFlow anywhere, for any extractor of the registry. One line
//! per file, as `rustfx-predict` and `rustfx-sensor` print: the path
//! (escaped, `text_output::write_path`), a tab, then the values separated by
//! spaces (floats in shortest round-trip form, so they are exact; a sparse
//! value as `index:value`; a string as JSON). Files are processed in
//! parallel (rayon) and printed in order. Files are read like `read_files`
//! (at most `--max-bytes`, by default `read::DEFAULT_MAX_BYTES`); a file that
//! cannot be read is reported on stderr by path and the others still go
//! through. Exit status as the other programs (`rustfx::cli`): 0 if every
//! file went through, 1 if some did not, 2 if nothing could run.
//!
//! ```text
//! rustfx-features [FLAGS] EXTRACTOR [NAME=VALUE...] FILE...   parameters as JSON values or bare strings
//! rustfx-features [FLAGS] --spec SPEC.json FILE...            a FeatureSpec file (rustfx.FeatureSpec.to_json)
//! rustfx-features --print-spec EXTRACTOR [NAME=VALUE...]   its spec, defaults filled in
//! rustfx-features --list                               every extractor and its parameters
//!
//! FLAGS: --max-bytes N       read at most N bytes of each file
//!        --explain           print each file's contributions (docs/explain.md)
//!                            instead of its row: a TSV with a header line,
//!                            path, feature, index, offset, length, value, text
//!                            (text escaped: \\ \t \n \r \xHH)
//!        --max-contributions N, --max-text-bytes N, --byte-offsets
//!                            the explanation's caps and byte histograms' offsets
//! ```
//!
//! For example `rustfx-features hashed_ngrams num_buckets=1048576
//! ngram_widths=[1,2] tokenizer=word FILE...`. Parameters, defaults and
//! messages are the core's (`rustfx::registry`), as in Python and the ops.

#![forbid(unsafe_code)]

use rustfx::batch::map_documents;
use rustfx::explain::{ExplainOptions, Explanation};
use rustfx::extractor::Extractor;
use rustfx::read::{check_max_bytes, read_file, DEFAULT_MAX_BYTES};
use rustfx::registry::{self, EXTRACTORS};
use rustfx::spec::FeatureSpec;
use rustfx::text_output::{text_rows, write_escaped, write_path};
use serde_json::{Map, Value};
use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok((0, _)) => ExitCode::SUCCESS,
        Ok((failed, files)) => {
            eprintln!("rustfx-features: {failed} of {files} files failed");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("rustfx-features: {e}");
            ExitCode::from(2)
        }
    }
}

/// Files are read and extracted this many at a time, in parallel.
const FILES_PER_BATCH: usize = 64;

/// Runs the command: how many files failed, of how many.
fn run(mut args: &[String]) -> rustfx::Result<(usize, usize)> {
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut options = Options {
        max_bytes: DEFAULT_MAX_BYTES,
        explain: false,
        explain_options: ExplainOptions::default(),
    };
    let mut explain_flags = Vec::new();
    // Leading flags, in any order; --list, --spec and --print-spec are
    // commands, below.
    while let Some(flag) = args.first().filter(|a| a.starts_with("--")) {
        let (name, inline) = match flag.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (flag.as_str(), None),
        };
        let takes_value = matches!(
            name,
            "--max-bytes" | "--max-contributions" | "--max-text-bytes"
        );
        if !takes_value && !matches!(name, "--explain" | "--byte-offsets") {
            break;
        }
        let number = if takes_value {
            let text = match inline {
                Some(text) => text,
                None => args.get(1).ok_or_else(usage)?.as_str(),
            };
            args = &args[if inline.is_some() { 1 } else { 2 }..];
            text.parse::<i64>().map_err(|_| {
                rustfx::Error::invalid_argument(format!(
                    "{name} needs a whole number, got '{text}'"
                ))
            })?
        } else {
            args = &args[1..];
            0
        };
        // Negative counts: the explain options' range message.
        let n = usize::try_from(number.max(0)).unwrap_or(usize::MAX);
        let e = options.explain_options;
        match name {
            "--max-bytes" => options.max_bytes = check_max_bytes(number)?,
            "--explain" => options.explain = true,
            "--max-contributions" => {
                options.explain_options = ExplainOptions::new(n, e.max_text_bytes, e.byte_offsets)?
            }
            "--max-text-bytes" => {
                options.explain_options =
                    ExplainOptions::new(e.max_contributions, n, e.byte_offsets)?
            }
            _ => options.explain_options.byte_offsets = true,
        }
        if name != "--max-bytes" && name != "--explain" {
            explain_flags.push(name.to_string());
        }
    }
    if let Some(flag) = explain_flags.first().filter(|_| !options.explain) {
        return Err(rustfx::Error::invalid_argument(format!(
            "{flag} is an option of --explain"
        )));
    }
    let mut outcome = (0, 0);
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
            outcome = extract(spec.extractor(), &extractor, &args[2..], &options, &mut out)?;
        }
        Some(_) => {
            let (spec, files) = spec_from_args(args)?;
            outcome = extract(spec.extractor(), &spec.build()?, files, &options, &mut out)?;
        }
    }
    out.flush().map_err(io_error)?;
    Ok(outcome)
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

/// What the leading flags ask for.
struct Options {
    max_bytes: u64,
    explain: bool,
    explain_options: ExplainOptions,
}

/// The header line of `--explain`'s TSV.
const EXPLAIN_COLUMNS: &str = "path\tfeature\tindex\toffset\tlength\tvalue\ttext";

/// Extracts and prints each file's row (or, with `--explain`, its
/// contributions); how many files could not be read, and of how many.
fn extract(
    name: &str,
    extractor: &Extractor,
    files: &[String],
    options: &Options,
    out: &mut impl Write,
) -> rustfx::Result<(usize, usize)> {
    if files.is_empty() {
        return Err(rustfx::Error::invalid_argument("no files given"));
    }
    let names = extractor.feature_names();
    if options.explain {
        writeln!(out, "{EXPLAIN_COLUMNS}").map_err(io_error)?;
    }
    let mut failed = 0;
    for batch in files.chunks(FILES_PER_BATCH) {
        let (mut paths, mut contents) = (Vec::new(), Vec::new());
        for file in batch {
            match read_file(std::ffi::OsStr::new(file).as_bytes(), options.max_bytes) {
                Ok(bytes) => {
                    paths.push(file);
                    contents.push(bytes);
                }
                Err(e) => {
                    // read_file's messages name the path.
                    eprintln!("rustfx-features: {e}");
                    failed += 1;
                }
            }
        }
        if options.explain {
            let explanations = map_documents(&contents, |doc| {
                extractor.explain_with(doc, &options.explain_options)
            });
            for (path, explanation) in paths.iter().zip(explanations) {
                let feature = |index: u64| {
                    let named = names.as_ref().and_then(|n| n.get(index as usize));
                    named.map_or(name, String::as_str)
                };
                let explanation = explanation?;
                write_explanation(out, path.as_bytes(), &explanation, feature).map_err(io_error)?;
                if explanation.truncated {
                    eprintln!(
                        "rustfx-features: {path}: explanation cut at {} contributions \
                         (--max-contributions)",
                        explanation.contributions.len()
                    );
                }
            }
        } else {
            // A batch per file: files are large, and rayon spreads them.
            let rows = map_documents(&contents, |doc| extractor.extract_batch(&[doc]));
            for (path, batch) in paths.iter().zip(rows) {
                let row = text_rows(&batch?).remove(0);
                write_path(out, path.as_bytes())
                    .and_then(|()| writeln!(out, "\t{}", row.join(" ")))
                    .map_err(io_error)?;
            }
        }
        out.flush().map_err(io_error)?;
    }
    Ok((failed, files.len()))
}

/// One TSV line per contribution: path, feature, index, offset, length,
/// value (shortest round-trip form) and the escaped text.
fn write_explanation<'a>(
    out: &mut impl Write,
    path: &[u8],
    explanation: &Explanation,
    feature: impl Fn(u64) -> &'a str,
) -> std::io::Result<()> {
    for c in &explanation.contributions {
        write_path(out, path)?;
        out.write_all(b"\t")?;
        write_escaped(out, feature(c.index).as_bytes())?;
        write!(
            out,
            "\t{}\t{}\t{}\t{}\t",
            c.index, c.offset, c.length, c.value
        )?;
        write_escaped(out, &c.text)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

fn io_error(e: std::io::Error) -> rustfx::Error {
    rustfx::Error::new(rustfx::ErrorKind::Io, e.to_string())
}

fn usage() -> rustfx::Error {
    let names: Vec<_> = EXTRACTORS.iter().map(|e| e.name).collect();
    rustfx::Error::invalid_argument(format!(
        "usage: rustfx-features [FLAGS] EXTRACTOR [NAME=VALUE...] FILE... \
         | [FLAGS] --spec SPEC.json FILE... | --print-spec EXTRACTOR [NAME=VALUE...] \
         | --list\nflags: --max-bytes N, --explain [--max-contributions N] \
         [--max-text-bytes N] [--byte-offsets]\nextractors: {}",
        names.join(", ")
    ))
}
