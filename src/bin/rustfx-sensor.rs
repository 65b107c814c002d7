//! Scores files with a model exported by `rustfx.sensor.export`, in pure
//! Rust: no TensorFlow, no Python, no C++ (docs/sensor.md). The features
//! come from rustfx's core, driven by `features.json`; the network is
//! `model.onnx`, run by tract. Built with `--features sensor` (`make sensor`).
//!
//! ```text
//! rustfx-sensor --model DIR [--max-bytes N] [--batch-size N] [--features] FILE...
//! ```
//!
//! Reads, prints and exits like `rustfx-predict` (docs/serving.md): files
//! are read like `read_files` (bounded, never blocking); one line per file
//! that went through, in the order given: the path (`\`, tab, newline and CR
//! escaped), then for each output, sorted by key, a tab, `KEY=` and the
//! file's row, values separated by spaces, floats in shortest round-trip
//! form. A file that cannot be read is reported on stderr by path and the
//! others still go through. Exit status: 0 if every file went through, 1 if
//! some did not, 2 if nothing could run (arguments, model directory).

#![deny(unsafe_code)]

use rustfx::read::{check_max_bytes, read_file};
use rustfx::sensor::features::FeatureRows;
use rustfx::sensor::{Model, OutputValues};
use rustfx::text_output::{push_values, write_path};
use std::ffi::{OsStr, OsString};
use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: rustfx-sensor --model DIR [--max-bytes N] [--batch-size N] \
                     [--features] FILE...";

const HELP: &str = "
Runs a model exported by rustfx.sensor.export on files, in pure Rust: each
file's raw bytes go through the model's rustfx features (features.json),
then its network (model.onnx, run by tract); prints per file its path and
the outputs.

  --model DIR       the directory rustfx.sensor.export wrote
  --max-bytes N     read at most N bytes of each file; longer files are
                    truncated, as read_files does (default: 67108864)
  --batch-size N    files run at once (default: 32)
  --features        print the features fed to the network (KEY = its ONNX
                    input) instead of the model's outputs

Exit status: 0 all files went through, 1 some failed (reported on stderr
by path), 2 nothing could run.";

/// What `read_files` reads by default: 64 MiB.
const DEFAULT_MAX_BYTES: u64 = 64 << 20;
const DEFAULT_BATCH_SIZE: usize = 32;
const MAX_BATCH_SIZE: usize = 1 << 16;

#[derive(Debug)]
struct Args {
    model: PathBuf,
    max_bytes: u64,
    batch_size: usize,
    features: bool,
    files: Vec<OsString>,
}

fn main() -> ExitCode {
    // Panics inside tract are caught and reported as errors naming the
    // model file; the default hook would print them a second time.
    std::panic::set_hook(Box::new(|_| {}));
    let args = match parse_args(std::env::args_os().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => return ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("rustfx-sensor: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(failed) => {
            eprintln!(
                "rustfx-sensor: {failed} of {} files failed",
                args.files.len()
            );
            ExitCode::from(1)
        }
        Err(message) => {
            eprintln!("rustfx-sensor: {message}");
            ExitCode::from(2)
        }
    }
}

/// The arguments, or `None` if help or the version was printed.
fn parse_args(mut args: impl Iterator<Item = OsString>) -> Result<Option<Args>, String> {
    let mut model = None;
    let (mut max_bytes, mut batch_size) = (DEFAULT_MAX_BYTES, DEFAULT_BATCH_SIZE);
    let (mut files, mut only_files, mut features) = (Vec::new(), false, false);
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy().into_owned();
        if only_files || !(text.starts_with("--") || text == "-h") {
            files.push(arg);
            continue;
        }
        // Everything after `--` is a file, even if it starts with `--`.
        if text == "--" {
            only_files = true;
            continue;
        }
        // --flag VALUE or --flag=VALUE (the value's bytes kept as they are).
        let bytes = arg.as_bytes();
        let (flag, inline) = match bytes.iter().position(|&b| b == b'=') {
            Some(i) => (
                &bytes[..i],
                Some(OsStr::from_bytes(&bytes[i + 1..]).to_owned()),
            ),
            None => (bytes, None),
        };
        let flag = String::from_utf8_lossy(flag).into_owned();
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "--help" | "-h" => {
                println!("{USAGE}\n{HELP}");
                return Ok(None);
            }
            "--version" => {
                println!("rustfx-sensor {}", env!("CARGO_PKG_VERSION"));
                return Ok(None);
            }
            "--model" => model = Some(PathBuf::from(value("--model")?)),
            "--features" => features = true,
            "--max-bytes" => {
                let n = number(&value("--max-bytes")?, "--max-bytes")?;
                max_bytes = check_max_bytes(n).map_err(|e| format!("--max-bytes: {e}"))?;
            }
            "--batch-size" => {
                let n = number(&value("--batch-size")?, "--batch-size")?;
                batch_size = usize::try_from(n)
                    .ok()
                    .filter(|n| (1..=MAX_BATCH_SIZE).contains(n))
                    .ok_or_else(|| {
                        format!("--batch-size must be in [1, {MAX_BATCH_SIZE}], got {n}")
                    })?;
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    let model = model.ok_or("--model DIR is required")?;
    if files.is_empty() {
        return Err("no files given".to_string());
    }
    Ok(Some(Args {
        model,
        max_bytes,
        batch_size,
        features,
        files,
    }))
}

fn number(value: &OsString, flag: &str) -> Result<i64, String> {
    let text = value.to_string_lossy();
    text.parse()
        .map_err(|_| format!("{flag} needs a whole number, got '{text}'"))
}

/// Loads the model, then runs every batch. Returns how many files failed;
/// `Err` if nothing could run.
fn run(args: &Args) -> Result<usize, String> {
    let model = Model::load(&args.model).map_err(|e| format!("cannot load the model: {e}"))?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut failed = 0;
    for batch in args.files.chunks(args.batch_size) {
        let (mut paths, mut contents) = (Vec::new(), Vec::new());
        for file in batch {
            match read_file(file.as_bytes(), args.max_bytes) {
                Ok(bytes) => {
                    paths.push(file);
                    contents.push(bytes);
                }
                Err(e) => {
                    // read_file's messages name the path.
                    eprintln!("rustfx-sensor: {e}");
                    failed += 1;
                }
            }
        }
        if paths.is_empty() {
            continue;
        }
        let docs: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
        let rows = if args.features {
            Ok(feature_rows(&model, &docs))
        } else {
            output_rows(&model, &docs)
        };
        match rows {
            Ok(rows) => {
                for (path, row) in paths.iter().zip(rows) {
                    write_path(&mut out, path.as_bytes())
                        .and_then(|()| writeln!(out, "{row}"))
                        .map_err(|e| format!("cannot write the output: {e}"))?;
                }
            }
            Err(e) => {
                let named: Vec<String> = paths
                    .iter()
                    .map(|p| format!("'{}'", p.to_string_lossy()))
                    .collect();
                eprintln!(
                    "rustfx-sensor: the model failed on a batch of {} files ({}): {e}",
                    paths.len(),
                    named.join(", ")
                );
                failed += paths.len();
            }
        }
        // Each batch's lines as soon as they are known.
        out.flush()
            .map_err(|e| format!("cannot write the output: {e}"))?;
    }
    Ok(failed)
}

/// Per file, `\tKEY=values` for each output, sorted by key.
fn output_rows(model: &Model, docs: &[&[u8]]) -> Result<Vec<String>, String> {
    let mut outputs = model.predict(docs).map_err(|e| e.to_string())?;
    outputs.sort_by(|a, b| a.key.cmp(&b.key));
    let n = docs.len();
    let mut rows = vec![String::new(); n];
    for output in &outputs {
        let width = output.values.len() / n;
        for (i, row) in rows.iter_mut().enumerate() {
            let range = i * width..(i + 1) * width;
            push_key(row, &output.key);
            match &output.values {
                OutputValues::F32(v) => push_values(&v[range], row),
                OutputValues::F64(v) => push_values(&v[range], row),
                OutputValues::I32(v) => push_values(&v[range], row),
                OutputValues::I64(v) => push_values(&v[range], row),
                OutputValues::Bool(v) => push_values(&v[range], row),
            }
        }
    }
    Ok(rows)
}

/// Per file, `\tKEY=values` for each feature (KEY its ONNX input), sorted.
fn feature_rows(model: &Model, docs: &[&[u8]]) -> Vec<String> {
    let features = &model.features().features;
    let mut batches: Vec<_> = features.iter().zip(model.extract(docs)).collect();
    batches.sort_by(|a, b| a.0.onnx_input.cmp(&b.0.onnx_input));
    let mut rows = vec![String::new(); docs.len()];
    for (feature, batch) in &batches {
        let width = feature.width;
        for (i, row) in rows.iter_mut().enumerate() {
            let range = i * width..(i + 1) * width;
            push_key(row, &feature.onnx_input);
            match batch {
                FeatureRows::F32(v) => push_values(&v[range], row),
                FeatureRows::I32(v) => push_values(&v[range], row),
                FeatureRows::I64(v) => push_values(&v[range], row),
            }
        }
    }
    rows
}

fn push_key(row: &mut String, key: &str) {
    row.push('\t');
    row.push_str(key);
    row.push('=');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Args>, String> {
        parse_args(args.iter().map(OsString::from))
    }

    #[test]
    fn arguments() {
        let args = parse(&["--model", "m", "--batch-size=2", "--features", "a", "b"])
            .unwrap()
            .unwrap();
        assert_eq!(args.model, PathBuf::from("m"));
        assert_eq!((args.batch_size, args.max_bytes), (2, DEFAULT_MAX_BYTES));
        assert!(args.features);
        assert_eq!(args.files, ["a", "b"]);
        let args = parse(&["--model", "m", "--", "--x"]).unwrap().unwrap();
        assert_eq!(args.files, ["--x"]);
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        for (args, message) in [
            (&["a"][..], "--model DIR is required"),
            (&["--model", "m"], "no files given"),
            (&["--model"], "--model needs a value"),
            (
                &["--model", "m", "--batch-size", "0", "a"],
                "--batch-size must be in",
            ),
            (
                &["--model", "m", "--max-bytes", "-1", "a"],
                "max_bytes must be in",
            ),
            (
                &["--model", "m", "--max-bytes", "x", "a"],
                "needs a whole number",
            ),
            (&["--model", "m", "--ops", "a"], "unknown option --ops"),
        ] {
            let error = parse(args).unwrap_err();
            assert!(error.contains(message), "{args:?}: {error}");
        }
    }
}
