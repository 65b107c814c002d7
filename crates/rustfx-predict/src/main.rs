//! Serves a SavedModel that has rustfx FX inside, from Rust, with no
//! Python: TensorFlow's C API loads the rustfx op library
//! (`TF_LoadLibrary`), then the SavedModel (`TF_LoadSessionFromSavedModel`,
//! tag `serve`); the files are read like `read_files` (bounded, never
//! blocking) and fed, a batch at a time, as a `tf.string` vector of raw bytes
//! to one signature. Built with `--features predict` (`make predict`).
//!
//! ```text
//! rustfx-predict --model DIR [--signature NAME] [--ops LIB | --no-ops]
//!                [--max-bytes N] [--batch-size N] FILE...
//! ```
//!
//! Prints one line per file that went through, in the order given: the path
//! (escaped as `rustfx_cli::text_output::write_escaped` does: `\\`, `\t`,
//! `\n`, `\r`, and `\xHH` for any other byte outside printable ASCII, so a
//! name that is not UTF-8 reads back exactly), then for each
//! output of the signature, sorted by key, a tab, `KEY=` and the file's row
//! of that output, values separated by spaces. Floats print in shortest
//! round-trip form, so they are exact; strings print quoted, escaped. A file
//! that cannot be read is reported on stderr by path and the others still go
//! through. Exit status: 0 if every file went through, 1 if some did not, 2
//! if nothing could run (arguments, op library, model, signature).

#![deny(unsafe_code)]
// Each `unsafe` block says why it is sound, and an `unsafe fn` says what
// its caller must ensure (`# Safety`); clippy checks both.
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

// TensorFlow's C API, made safe; its `unsafe` code is in `tf_c_api::ffi`,
// which alone allows it (each block with a SAFETY comment).
mod tf_c_api;
// Protobuf's wire format, for the MetaGraphDef the C API returns as bytes.
mod wire;

use crate::tf_c_api::graph_specs;
use crate::tf_c_api::signature::signatures;
use crate::tf_c_api::{dtype_name, Endpoint, Library, SavedModel, Tensor, TfError, Values};
use rustfx_cli::text_output::push_values;
use rustfx_cli::{self as cli, Args, Program};
use std::ffi::OsString;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const PROGRAM: Program = Program {
    name: "rustfx-predict",
    usage: "usage: rustfx-predict --model DIR [--signature NAME] [--ops LIB | --no-ops] \
            [--max-bytes N] [--batch-size N] FILE...",
    help: "
Runs a SavedModel signature on files: each file's raw bytes are one element
of the signature's tf.string input; prints per file its path and the outputs.

  --model DIR       the SavedModel directory (tag \"serve\")
  --signature NAME  the signature to run (default: serving_default)
  --ops LIB         the rustfx op library to load first (default:
                    $RUSTFX_LIBRARY, else librustfx_ops.so beside this program,
                    where `make build` puts it)
  --no-ops          load no op library (for models without rustfx ops)
  --max-bytes N     read at most N bytes of each file; longer files are
                    truncated, as read_files does (default: 67108864)
  --batch-size N    files fed per run (default: 32)

Exit status: 0 all files went through, 1 some failed (reported on stderr
by path), 2 nothing could run. TF logs INFO lines to stderr (loader steps,
CPU features): TF_CPP_MIN_LOG_LEVEL=1 hides most of them (TF reads it
before main, so it must be set in the environment).",
    version: || {
        format!(
            "rustfx-predict {} (TF C API from TensorFlow {} headers; running TensorFlow {})",
            env!("CARGO_PKG_VERSION"),
            env!("RUSTFX_TF_C_API_VERSION"),
            tf_c_api::version()
        )
    },
};

/// The string `cpp/version.cc` compiles into the op library.
const VERSION_MARKER: &[u8] = b"rustfx-built-against-tensorflow=";
/// The initializer TF 2 stores among the signatures.
const INIT_OP_SIGNATURE: &str = "__saved_model_init_op";
/// Where `RUSTFX_LIBRARY` points, as for `import rustfx`.
const LIBRARY_ENV: &str = "RUSTFX_LIBRARY";

/// Which op library to load before the model.
#[derive(Debug, PartialEq)]
enum Ops {
    /// `$RUSTFX_LIBRARY`, else `librustfx_ops.so` beside the executable.
    Default,
    Path(PathBuf),
    None,
}

/// The options only rustfx-predict takes.
#[derive(Debug)]
struct PredictOptions {
    signature: String,
    ops: Ops,
}

impl Default for PredictOptions {
    fn default() -> Self {
        PredictOptions {
            signature: "serving_default".to_string(),
            ops: Ops::Default,
        }
    }
}

impl cli::Options for PredictOptions {
    fn flag(
        &mut self,
        flag: &str,
        value: &mut dyn FnMut() -> Result<OsString, String>,
    ) -> Result<bool, String> {
        match flag {
            "--signature" => self.signature = value()?.to_string_lossy().into_owned(),
            "--ops" => self.ops = Ops::Path(PathBuf::from(value()?)),
            "--no-ops" => self.ops = Ops::None,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

fn main() -> ExitCode {
    cli::main(&PROGRAM, run)
}

/// Loads the op library, the model and its signature, then runs every
/// batch. Returns how many files failed; `Err` if nothing could run.
fn run(args: &Args<PredictOptions>) -> Result<usize, String> {
    let options = &args.options;
    // Kept until the end: dropping it only frees the handle, but holding it
    // says the ops are needed for as long as the model runs.
    let _library = load_ops(&options.ops)?;
    let model = SavedModel::load(&args.model, &["serve"])
        .map_err(|e| model_error(&args.model, &e, &options.ops))?;
    // A spec this build refuses (another output version) fails here, before
    // any file is read: the C API's shape functions cannot read specs.
    graph_specs::check_rustfx_specs(model.meta_graph_def()).map_err(|e| {
        format!(
            "cannot serve the SavedModel in '{}': {e}",
            args.model.display()
        )
    })?;
    let served = Served::new(&model, &options.signature, &args.model)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    cli::score_files(&PROGRAM, args, &mut out, |contents| {
        served.predict(contents).map_err(|e| {
            let hint = run_hint(&e);
            e + hint
        })
    })
}

/// Loads the op library `ops` names, after checking it was built for the
/// TensorFlow this process runs.
fn load_ops(ops: &Ops) -> Result<Option<Library>, String> {
    let path = match ops {
        Ops::None => return Ok(None),
        Ops::Path(path) => path.clone(),
        Ops::Default => default_ops_path()?,
    };
    check_built_against(&path)?;
    Library::load(&path)
        .map(Some)
        .map_err(|e| format!("cannot load the op library '{}': {e}", path.display()))
}

fn default_ops_path() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(LIBRARY_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("librustfx_ops.so")));
    match beside {
        Some(path) if path.is_file() => Ok(path),
        _ => Err(format!(
            "no rustfx op library: pass --ops PATH (`make build` writes \
             python/rustfx/_rustfx_ops.so), or set {LIBRARY_ENV}, or pass --no-ops \
             for a model that uses no rustfx ops"
        )),
    }
}

/// Checks that `path` is a rustfx op library (it carries the marker of
/// `cpp/version.cc`) without loading it. Its kernels use only TF's C API,
/// so it loads into any TF from 2.16 to 2.21 (BUILD_NOTES.md).
fn check_built_against(path: &Path) -> Result<(), String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read the op library '{}': {e}", path.display()))?;
    if memchr::memmem::find(&bytes, VERSION_MARKER).is_none() {
        return Err(format!(
            "'{}' is not a rustfx op library (it has no {} string; a librustfx_ops.so \
             built without `--features tensorflow`?): build one with `make build`",
            path.display(),
            String::from_utf8_lossy(VERSION_MARKER)
        ));
    }
    Ok(())
}

/// The loader's error, plus what to do when an op is not registered.
fn model_error(dir: &Path, error: &TfError, ops: &Ops) -> String {
    let mut message = format!(
        "cannot load the SavedModel in '{}' (tag serve): {error}",
        dir.display()
    );
    if let Some(op) = unregistered_op(error.message()) {
        message +=
            &format!("\nThe model uses the op '{op}', which this process has not registered. ");
        message += if !op.starts_with("Rustfx>") {
            "It is not a rustfx op: the model needs an op library rustfx-predict does not load."
        } else if *ops == Ops::None {
            "It is a rustfx op: load the rustfx op library before the model \
             (drop --no-ops: rustfx-predict then loads $RUSTFX_LIBRARY or librustfx_ops.so \
             beside it; or pass --ops PATH/_rustfx_ops.so, built by `make build`)."
        } else {
            "It is a rustfx op the loaded op library does not define: rebuild the \
             library with `make build` from the rustfx that saved the model."
        };
    }
    message
}

/// The op named in TF's "Op type not registered 'NAME' ..." message.
fn unregistered_op(message: &str) -> Option<&str> {
    let rest = message.split_once("Op type not registered '")?.1;
    Some(rest.split_once('\'')?.0)
}

/// What to do about a run error that comes from how the model was saved.
fn run_hint(error: &str) -> &'static str {
    if error.contains("Could not find variable") {
        // keras-team/keras#20095: TF's C++ loader (this one, TF Serving's)
        // restores such a model's variables under names its functions do
        // not read; only Python's loader copes.
        "\nThe loader restored no value for that variable. A Keras 3 model saved with \
         tf.saved_model.save inside a tf.Module has this problem with every C/C++ \
         loader (TF Serving too); export it with model.export(dir) or \
         keras.export.ExportArchive instead."
    } else {
        ""
    }
}

/// A signature ready to run: its string input and its outputs by key.
struct Served<'m> {
    model: &'m SavedModel,
    input: Endpoint<'m>,
    outputs: Vec<(String, Endpoint<'m>)>,
}

impl<'m> Served<'m> {
    fn new(model: &'m SavedModel, name: &str, dir: &Path) -> Result<Self, String> {
        let dir = dir.display();
        let mut all = signatures(model.meta_graph_def())
            .map_err(|e| format!("cannot read the signatures of the SavedModel in '{dir}': {e}"))?;
        // TF 2 stores its initializer as a pseudo-signature; Python hides it.
        if name != INIT_OP_SIGNATURE {
            all.remove(INIT_OP_SIGNATURE);
        }
        let Some(signature) = all.get(name) else {
            return Err(if all.is_empty() {
                format!(
                    "the SavedModel in '{dir}' has no signatures (save it with \
                     `tf.saved_model.save(module, dir, signatures=...)`)"
                )
            } else {
                let names: Vec<&str> = all.keys().map(String::as_str).collect();
                format!(
                    "the SavedModel in '{dir}' has no signature '{name}'; it has: {} \
                     (choose one with --signature)",
                    names.join(", ")
                )
            });
        };
        let need = "rustfx-predict feeds each batch of files as one tf.string vector of \
                    raw bytes, so the signature must take exactly one input, \
                    tf.TensorSpec([None], tf.string)";
        let mut inputs = signature.inputs.iter();
        let (key, info) = match (inputs.next(), inputs.next()) {
            (Some(input), None) => input,
            _ => {
                let keys: Vec<&str> = signature.inputs.keys().map(String::as_str).collect();
                return Err(format!(
                    "signature '{name}' takes {} inputs ({}); {need}",
                    keys.len(),
                    keys.join(", ")
                ));
            }
        };
        if info.dtype != tf_c_api::DT_STRING {
            return Err(format!(
                "signature '{name}' input '{key}' is {}, not string; {need}",
                dtype_name(info.dtype)
            ));
        }
        if let Some(dims) = &info.shape {
            if dims.as_slice() != [-1] {
                return Err(format!(
                    "signature '{name}' input '{key}' has shape {dims:?} (-1 = None); {need}"
                ));
            }
        }
        let endpoint = |key: &str, info: &tf_c_api::signature::TensorInfo| {
            let tensor = info.name.as_deref().ok_or_else(|| {
                format!("signature '{name}' tensor '{key}' is sparse or composite, not a tensor")
            })?;
            model
                .endpoint(tensor)
                .map_err(|e| format!("signature '{name}' tensor '{key}': {e}"))
        };
        let input = endpoint(key, info)?;
        if signature.outputs.is_empty() {
            return Err(format!("signature '{name}' has no outputs"));
        }
        let outputs = signature
            .outputs
            .iter()
            .map(|(key, info)| Ok((key.clone(), endpoint(key, info)?)))
            .collect::<Result<_, String>>()?;
        Ok(Served {
            model,
            input,
            outputs,
        })
    }

    /// Runs the signature on a batch; returns per file its outputs as text,
    /// each `\tKEY=values`.
    fn predict(&self, contents: &[Vec<u8>]) -> Result<Vec<String>, String> {
        let items: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
        let batch = Tensor::strings(&items).map_err(|e| e.to_string())?;
        let fetches: Vec<Endpoint<'_>> = self.outputs.iter().map(|(_, e)| *e).collect();
        let tensors = self
            .model
            .run(&[(self.input, &batch)], &fetches)
            .map_err(|e| e.to_string())?;
        let n = contents.len();
        let mut rows = vec![String::new(); n];
        for ((key, _), tensor) in self.outputs.iter().zip(&tensors) {
            let shape = tensor.shape();
            if shape.first().copied() != i64::try_from(n).ok() {
                return Err(format!(
                    "output '{key}' has shape {shape:?}; every output needs one row per \
                     file, so its first dimension must be the batch size {n}"
                ));
            }
            let values = tensor
                .values()
                .map_err(|e| format!("output '{key}': {e}"))?;
            let width = tensor.element_count() / n;
            for (i, row) in rows.iter_mut().enumerate() {
                row.push('\t');
                row.push_str(key);
                row.push('=');
                format_values(&values, i * width..(i + 1) * width, row);
            }
        }
        Ok(rows)
    }
}

/// Appends `values[range]`, space-separated, as `rustfx-sensor` does
/// (`rustfx_cli::text_output`): floats in shortest round-trip form; strings
/// quoted, with `\xNN` escapes.
fn format_values(values: &Values, range: std::ops::Range<usize>, out: &mut String) {
    use std::fmt::Write as _;
    match values {
        Values::F32(v) => push_values(&v[range], out),
        Values::F64(v) => push_values(&v[range], out),
        Values::I8(v) => push_values(&v[range], out),
        Values::I16(v) => push_values(&v[range], out),
        Values::I32(v) => push_values(&v[range], out),
        Values::I64(v) => push_values(&v[range], out),
        Values::U8(v) => push_values(&v[range], out),
        Values::U16(v) => push_values(&v[range], out),
        Values::U32(v) => push_values(&v[range], out),
        Values::U64(v) => push_values(&v[range], out),
        Values::Bool(v) => push_values(&v[range], out),
        Values::Bytes(v) => {
            for (i, s) in v[range].iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                let _ = write!(out, "\"{}\"", s.escape_ascii());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Args<PredictOptions>>, String> {
        cli::parse_args(&PROGRAM, args.iter().map(OsString::from))
    }

    #[test]
    fn arguments() {
        let args = parse(&[
            "--model",
            "m",
            "--ops=lib.so",
            "--batch-size",
            "2",
            "a",
            "b",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(args.model, PathBuf::from("m"));
        assert_eq!(args.options.signature, "serving_default");
        assert_eq!(args.options.ops, Ops::Path("lib.so".into()));
        assert_eq!(
            (args.batch_size, args.max_bytes),
            (2, cli::DEFAULT_MAX_BYTES)
        );
        assert_eq!(args.files, ["a", "b"]);

        let args = parse(&[
            "--no-ops",
            "--signature",
            "s",
            "--model",
            "m",
            "--",
            "--x",
            "y",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(args.options.ops, Ops::None);
        assert_eq!(args.options.signature, "s");
        assert_eq!(args.files, ["--x", "y"]);
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        for (args, message) in [
            (&["a"][..], "--model DIR is required"),
            (&["--model", "m", "--ops"], "--ops needs a value"),
            (
                &["--model", "m", "--frobnicate", "a"],
                "unknown option --frobnicate",
            ),
        ] {
            let error = parse(args).unwrap_err();
            assert!(error.contains(message), "{args:?}: {error}");
        }
    }

    #[test]
    fn floats_print_exactly() {
        let mut out = String::new();
        let values = Values::F32(vec![0.1, -0.0, 1e-45, f32::MAX, f32::NAN, f32::INFINITY]);
        format_values(&values, 0..6, &mut out);
        assert_eq!(out, "0.1 -0 0.000000000000000000000000000000000000000000001 340282350000000000000000000000000000000 NaN inf");
        for text in out.split(' ').take(4) {
            let back: f32 = text.parse().unwrap();
            assert!(values_contain_bits(&values, back.to_bits()), "{text}");
        }
        let mut out = String::new();
        format_values(&Values::Bytes(vec![b"a b\"\xff".to_vec()]), 0..1, &mut out);
        assert_eq!(out, r#""a b\"\xff""#);
    }

    fn values_contain_bits(values: &Values, bits: u32) -> bool {
        matches!(values, Values::F32(v) if v.iter().any(|x| x.to_bits() == bits))
    }

    #[test]
    fn unregistered_op_is_found_in_tf_message() {
        let message = "Op type not registered 'Rustfx>DenseRows' in binary running on h.";
        assert_eq!(unregistered_op(message), Some("Rustfx>DenseRows"));
        assert_eq!(unregistered_op("NOT_FOUND: nothing"), None);
        let text = model_error(
            Path::new("m"),
            &TfError::new("NOT_FOUND", message),
            &Ops::None,
        );
        assert!(text.contains("drop --no-ops"), "{text}");
    }
}
