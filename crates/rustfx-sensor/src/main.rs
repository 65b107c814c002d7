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
//! that went through, in the order given: the path (escaped as
//! `rustfx_cli::text_output::write_escaped` does: `\\ \t \n \r \xHH`),
//! then for each output, sorted by key, a tab, `KEY=` and the file's row,
//! values separated by spaces, floats in shortest round-trip form. A file that cannot be read is reported on stderr by path and the
//! others still go through. Exit status: 0 if every file went through, 1 if
//! some did not, 2 if nothing could run (arguments, model directory).

#![forbid(unsafe_code)]

use rustfx::output::Batch;
use rustfx_cli::text_output::push_values;
use rustfx_cli::{self as cli, Args, Program};
use rustfx_sensor::{Model, OutputValues};
use std::ffi::OsString;
use std::io::BufWriter;
use std::process::ExitCode;

const PROGRAM: Program = Program {
    name: "rustfx-sensor",
    usage: "usage: rustfx-sensor --model DIR [--max-bytes N] [--batch-size N] \
            [--features] FILE...",
    help: "
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
by path), 2 nothing could run.",
    version: || format!("rustfx-sensor {}", env!("CARGO_PKG_VERSION")),
};

/// The options only rustfx-sensor takes.
#[derive(Debug, Default)]
struct SensorOptions {
    /// `--features`: print the features instead of the outputs.
    features: bool,
}

impl cli::Options for SensorOptions {
    fn flag(
        &mut self,
        flag: &str,
        _value: &mut dyn FnMut() -> Result<OsString, String>,
    ) -> Result<bool, String> {
        match flag {
            "--features" => self.features = true,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

fn main() -> ExitCode {
    // Panics inside tract are caught and reported as errors naming the
    // model file; the default hook would print them a second time.
    std::panic::set_hook(Box::new(|_| {}));
    cli::main(&PROGRAM, run)
}

/// Loads the model, then runs every batch. Returns how many files failed;
/// `Err` if nothing could run.
fn run(args: &Args<SensorOptions>) -> Result<usize, String> {
    let model = Model::load(&args.model).map_err(|e| format!("cannot load the model: {e}"))?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    cli::score_files(&PROGRAM, args, &mut out, |contents| {
        let docs: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
        if args.options.features {
            feature_rows(&model, &docs)
        } else {
            output_rows(&model, &docs)
        }
    })
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
fn feature_rows(model: &Model, docs: &[&[u8]]) -> Result<Vec<String>, String> {
    let features = &model.features().features;
    let extracted = model.extract(docs).map_err(|e| e.to_string())?;
    let mut batches: Vec<_> = features.iter().zip(extracted).collect();
    batches.sort_by(|a, b| a.0.onnx_input.cmp(&b.0.onnx_input));
    let mut rows = vec![String::new(); docs.len()];
    for (feature, batch) in &batches {
        for (i, row) in rows.iter_mut().enumerate() {
            push_key(row, &feature.onnx_input);
            // features.json has dense features only (`dense_width`).
            let Batch::Dense { width, values, .. } = batch else {
                return Err("a feature that is not dense rows (a bug in rustfx)".into());
            };
            values.push_display(i * width..(i + 1) * width, row);
        }
    }
    Ok(rows)
}

fn push_key(row: &mut String, key: &str) {
    row.push('\t');
    row.push_str(key);
    row.push('=');
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn parse(args: &[&str]) -> Result<Option<Args<SensorOptions>>, String> {
        cli::parse_args(&PROGRAM, args.iter().map(OsString::from))
    }

    #[test]
    fn arguments() {
        let args = parse(&["--model", "m", "--batch-size=2", "--features", "a", "b"])
            .unwrap()
            .unwrap();
        assert_eq!(args.model, PathBuf::from("m"));
        assert_eq!(
            (args.batch_size, args.max_bytes),
            (2, cli::DEFAULT_MAX_BYTES)
        );
        assert!(args.options.features);
        assert_eq!(args.files, ["a", "b"]);
        let args = parse(&["--model", "m", "--", "--x"]).unwrap().unwrap();
        assert!(!args.options.features);
        assert_eq!(args.files, ["--x"]);
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        for (args, message) in [
            (&["a"][..], "--model DIR is required"),
            (&["--model", "m"], "no files given"),
            (
                &["--model", "m", "--batch-size", "0", "a"],
                "--batch-size must be in",
            ),
            (&["--model", "m", "--ops", "a"], "unknown option --ops"),
        ] {
            let error = parse(args).unwrap_err();
            assert!(error.contains(message), "{args:?}: {error}");
        }
    }
}
