//! A pure-Rust feature extractor: the same features as the TensorFlow ops,
//! with no TensorFlow anywhere, for any extractor of the registry. One line
//! per file, as `rustfx-predict` and `rustfx-sensor` print: the path
//! (escaped, `rustfx_cli::text_output::write_escaped`: `\\ \t \n \r \xHH`,
//! so a file name that is not UTF-8 reads back exactly), a tab, then the values separated by
//! spaces (floats in shortest round-trip form, so they are exact; a sparse
//! value as `index:value`; a string as JSON). Files are processed in
//! parallel (rayon) and printed in order. Files are read like `read_files`
//! (at most `--max-bytes`, by default `read::DEFAULT_MAX_BYTES`); a file that
//! cannot be read is reported on stderr by path and the others still go
//! through. Arguments, the read loop and exit status are the other
//! programs' (`rustfx_cli`): 0 if every file went through, 1 if some did
//! not, 2 if nothing could run. Flags may come anywhere before `--`; a file
//! whose name starts with `--` comes after `--`.
//!
//! ```text
//! rustfx-features [FLAGS] EXTRACTOR [NAME=VALUE...] FILE...   parameters as JSON values or bare strings
//! rustfx-features [FLAGS] --spec SPEC.json FILE...            a FeatureSpec file (rustfx.FeatureSpec.to_json)
//! rustfx-features --print-spec EXTRACTOR [NAME=VALUE...]   its spec, defaults filled in
//! rustfx-features --list                               every extractor and its parameters
//! rustfx-features --registry                           the same as JSON, examples included
//!
//! FLAGS: --max-bytes N       read at most N bytes of each file
//!        --batch-size N      files read and extracted at once, in parallel (64)
//!        --explain           print each file's contributions (docs/explain.md)
//!                            instead of its row: a TSV with a header line,
//!                            path, feature, index, offset, length, value, text
//!                            (path and text escaped: \\ \t \n \r \xHH)
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
use rustfx::read::read_file;
use rustfx::registry::{self, ExtractorEntry, EXTRACTORS};
use rustfx::spec::FeatureSpec;
use rustfx_cli::text_output::{escaped, text_rows, write_escaped};
use rustfx_cli::{self as cli, output_error, Args, Program};
use serde_json::{Map, Value};
use std::ffi::{OsStr, OsString};
use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

const PROGRAM: Program = Program {
    name: "rustfx-features",
    usage: "usage: rustfx-features [FLAGS] EXTRACTOR [NAME=VALUE...] FILE... \
            | [FLAGS] --spec SPEC.json FILE... | --print-spec EXTRACTOR [NAME=VALUE...] \
            | --list | --registry\nflags: --max-bytes N, --batch-size N, --explain [--max-contributions N] \
            [--max-text-bytes N] [--byte-offsets]; --list names the extractors",
    help: "
Runs any extractor of rustfx's registry on files, with no TensorFlow; prints
per file its path (escaped: \\\\ \\t \\n \\r \\xHH), a tab, and its values.

  EXTRACTOR [NAME=VALUE...]  the extractor and its parameters (JSON values
                    or bare strings)
  --spec SPEC.json  a FeatureSpec file (rustfx.FeatureSpec.to_json)
  --print-spec      print the spec of EXTRACTOR [NAME=VALUE...], defaults in
  --list            every extractor and its parameters
  --registry        the registry as JSON: parameters with their allowed
                    names, and each extractor's examples
  --max-bytes N     read at most N bytes of each file (default: 67108864)
  --batch-size N    files read and extracted at once, in parallel (default: 64)
  --explain         each file's contributions instead of its row: a TSV with
                    a header line (docs/explain.md)
  --max-contributions N, --max-text-bytes N, --byte-offsets
                    the explanation's caps and byte histograms' offsets

Exit status: 0 all files went through, 1 some failed (reported on stderr
by path), 2 nothing could run.",
    version: || format!("rustfx-features {}", env!("CARGO_PKG_VERSION")),
};

fn main() -> ExitCode {
    cli::main(&PROGRAM, |args| run(args).map_err(|e| e.to_string()))
}

/// What the command line asks for besides extracting.
#[derive(Debug, Default, PartialEq)]
enum Command {
    #[default]
    Extract,
    List,
    /// The registry as JSON (`rustfx::registry::registry_json`), for
    /// scripts that run every extractor (tests/aarch64/parity.py).
    Registry,
    PrintSpec,
}

/// The options only rustfx-features takes: its command, its extractor
/// (`EXTRACTOR [NAME=VALUE...]` or `--spec FILE`) and `--explain`'s.
#[derive(Debug, Default)]
struct FeatureOptions {
    command: Command,
    spec_file: Option<OsString>,
    extractor: Option<&'static ExtractorEntry>,
    params: Map<String, Value>,
    explain: bool,
    explain_options: ExplainOptions,
    /// The options of --explain given, to refuse them without it.
    explain_flags: Vec<String>,
}

impl cli::Options for FeatureOptions {
    const MODEL: bool = false;
    /// Files are large, and rayon spreads a batch's files over the cores.
    const BATCH_SIZE: usize = 64;

    fn flag(
        &mut self,
        flag: &str,
        value: &mut dyn FnMut() -> Result<OsString, String>,
    ) -> Result<bool, String> {
        let mut count = || -> Result<usize, String> {
            // Negative counts: the explain options' range message.
            let n = cli::number(&value()?, flag)?;
            Ok(usize::try_from(n.max(0)).unwrap_or(usize::MAX))
        };
        let e = self.explain_options;
        let options = match flag {
            "--list" => {
                self.command = Command::List;
                return Ok(true);
            }
            "--registry" => {
                self.command = Command::Registry;
                return Ok(true);
            }
            "--print-spec" => {
                self.command = Command::PrintSpec;
                return Ok(true);
            }
            "--spec" => {
                self.spec_file = Some(value()?);
                return Ok(true);
            }
            "--explain" => {
                self.explain = true;
                return Ok(true);
            }
            "--max-contributions" => {
                ExplainOptions::new(count()?, e.max_text_bytes, e.byte_offsets)
            }
            "--max-text-bytes" => {
                ExplainOptions::new(e.max_contributions, count()?, e.byte_offsets)
            }
            "--byte-offsets" => ExplainOptions::new(e.max_contributions, e.max_text_bytes, true),
            _ => return Ok(false),
        };
        self.explain_options = options.map_err(|e| e.to_string())?;
        self.explain_flags.push(flag.to_string());
        Ok(true)
    }

    /// `EXTRACTOR`, then each `NAME=VALUE` whose NAME is one of its
    /// parameters: VALUE as JSON (`[1,2]`, `true`, `null`, `7`), else as a
    /// string. The first other argument is the first file.
    fn operand(&mut self, arg: &OsStr) -> Result<bool, String> {
        if matches!(self.command, Command::List | Command::Registry) || self.spec_file.is_some() {
            return Ok(false);
        }
        let Some(entry) = self.extractor else {
            let name = arg.to_str().unwrap_or_default();
            let entry = registry::find(name).map_err(|e| e.to_string())?;
            self.extractor = Some(entry);
            return Ok(true);
        };
        let param = arg.to_str().and_then(|a| a.split_once('='));
        match param.filter(|(key, _)| entry.params.iter().any(|p| p.name == *key)) {
            Some((key, value)) => {
                let value = serde_json::from_str(value).unwrap_or_else(|_| Value::from(value));
                self.params.insert(key.to_string(), value);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn needs_files(&self) -> bool {
        self.command == Command::Extract
    }
}

/// Runs the command: how many files failed.
fn run(args: &Args<FeatureOptions>) -> rustfx::Result<usize> {
    let options = &args.options;
    if let Some(flag) = options.explain_flags.first().filter(|_| !options.explain) {
        return Err(invalid(format!("{flag} is an option of --explain")));
    }
    if options.command != Command::Extract {
        if let Some(file) = args.files.first() {
            return Err(invalid(format!(
                "unexpected argument '{}' (not a parameter of the extractor)",
                escaped(file.as_bytes())
            )));
        }
    }
    let mut out = BufWriter::new(std::io::stdout().lock());
    let failed = match options.command {
        Command::List => list(&mut out).map(|()| 0)?,
        Command::Registry => {
            writeln!(out, "{}", registry::registry_json()).map_err(io_error)?;
            0
        }
        Command::PrintSpec => {
            writeln!(out, "{}", spec_from_args(options)?.to_json()).map_err(io_error)?;
            0
        }
        Command::Extract => match (&options.spec_file, options.extractor) {
            (Some(path), None) => {
                let (spec, extractor) = load_spec(path)?;
                extract(spec.extractor(), &extractor, args, &mut out)?
            }
            (None, Some(_)) => {
                let spec = spec_from_args(options)?;
                extract(spec.extractor(), &spec.build()?, args, &mut out)?
            }
            _ => return Err(invalid("give an EXTRACTOR or --spec SPEC.json, not both")),
        },
    };
    out.flush().map_err(io_error)?;
    Ok(failed)
}

/// `--list`: every extractor and its parameters.
fn list(out: &mut impl Write) -> rustfx::Result<()> {
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
    Ok(())
}

/// The spec of `EXTRACTOR [NAME=VALUE...]`.
fn spec_from_args(options: &FeatureOptions) -> rustfx::Result<FeatureSpec> {
    let entry = options.extractor.ok_or_else(|| invalid(PROGRAM.usage))?;
    FeatureSpec::from_value(&serde_json::json!({"extractor": entry.name, "params": options.params}))
}

/// The spec in the file `path`, and its extractor.
fn load_spec(path: &OsStr) -> rustfx::Result<(FeatureSpec, Extractor)> {
    let shown = escaped(path.as_bytes());
    let text = read_file(path.as_bytes(), rustfx::spec::MAX_SPEC_BYTES as u64 + 1)?;
    let text = String::from_utf8(text)
        .map_err(|_| invalid(format!("{shown}: a feature spec must be UTF-8 JSON")))?;
    rustfx::spec::load(&text).map_err(|e| rustfx::Error::new(e.kind(), format!("{shown}: {e}")))
}

/// The header line of `--explain`'s TSV.
const EXPLAIN_COLUMNS: &str = "path\tfeature\tindex\toffset\tlength\tvalue\ttext";

/// Extracts and prints each file's row (or, with `--explain`, its
/// contributions); how many files failed.
fn extract(
    name: &str,
    extractor: &Extractor,
    args: &Args<FeatureOptions>,
    out: &mut impl Write,
) -> rustfx::Result<usize> {
    let options = &args.options;
    let failed = if options.explain {
        writeln!(out, "{EXPLAIN_COLUMNS}").map_err(io_error)?;
        let names = extractor.feature_names();
        let feature = |index: u64| {
            let named = names.as_ref().and_then(|n| n.get(index as usize));
            named.map_or(name, String::as_str)
        };
        cli::read_batches(&PROGRAM, args, |paths, contents| {
            let explanations = map_documents(&contents, |doc| {
                extractor.explain_with(doc, &options.explain_options)
            });
            let mut failed = 0;
            for (path, explanation) in paths.iter().zip(explanations) {
                let path = path.as_bytes();
                match explanation {
                    Ok(explanation) => {
                        write_explanation(out, path, &explanation, feature)
                            .map_err(output_error)?;
                        if explanation.truncated {
                            eprintln!(
                                "rustfx-features: {}: explanation cut at {} contributions \
                                 (--max-contributions)",
                                escaped(path),
                                explanation.contributions.len()
                            );
                        }
                    }
                    Err(e) => {
                        eprintln!("rustfx-features: {}: {e}", escaped(path));
                        failed += 1;
                    }
                }
            }
            out.flush().map_err(output_error)?;
            Ok(failed)
        })
    } else {
        cli::score_files(&PROGRAM, args, out, |contents| {
            // A batch per file: files are large, and rayon spreads them.
            map_documents(contents, |doc| extractor.extract_batch(&[doc]))
                .into_iter()
                .map(|batch| {
                    let row = text_rows(&batch.map_err(|e| e.to_string())?).remove(0);
                    Ok(format!("\t{}", row.join(" ")))
                })
                .collect()
        })
    };
    failed.map_err(|e| rustfx::Error::new(rustfx::ErrorKind::Io, e))
}

/// One TSV line per contribution: path, feature, index, offset, length,
/// value (shortest round-trip form) and the text, path and text escaped.
fn write_explanation<'a>(
    out: &mut impl Write,
    path: &[u8],
    explanation: &Explanation,
    feature: impl Fn(u64) -> &'a str,
) -> std::io::Result<()> {
    for c in &explanation.contributions {
        write_escaped(out, path)?;
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

fn invalid(message: impl Into<String>) -> rustfx::Error {
    rustfx::Error::invalid_argument(message.into())
}

fn io_error(e: std::io::Error) -> rustfx::Error {
    rustfx::Error::new(rustfx::ErrorKind::Io, e.to_string())
}
