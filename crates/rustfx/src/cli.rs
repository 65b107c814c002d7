//! What the command-line programs that score files (`rustfx-predict`,
//! `rustfx-sensor`) share: their common arguments, the loop that reads the
//! files a batch at a time and prints one line per file, and their exit
//! statuses (docs/serving.md, docs/sensor.md). Each program brings only its
//! own options ([`Options`]) and the call that turns a batch of file
//! contents into output rows.
//!
//! ```text
//! PROGRAM --model DIR [--max-bytes N] [--batch-size N] [its own options] FILE...
//! ```
//!
//! Files are read like `read_files` (bounded, never blocking). A file that
//! cannot be read is reported on stderr by path and the others still go
//! through. Exit status: 0 if every file went through, 1 if some did not, 2
//! if nothing could run (arguments, or the program's `run` failing).

pub use crate::read::DEFAULT_MAX_BYTES;
use crate::read::{check_max_bytes, read_file};
use crate::text_output::write_path;
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::ExitCode;

/// Files run at once unless `--batch-size` says otherwise.
pub const DEFAULT_BATCH_SIZE: usize = 32;
/// The largest `--batch-size` accepted.
pub const MAX_BATCH_SIZE: usize = 1 << 16;

/// A program's name and texts.
#[derive(Debug)]
pub struct Program {
    /// What its messages start with (`rustfx-sensor`).
    pub name: &'static str,
    /// The usage line, printed with `--help` and after a bad argument.
    pub usage: &'static str,
    /// Printed after the usage line by `--help`.
    pub help: &'static str,
    /// What `--version` prints.
    pub version: fn() -> String,
}

/// The options only one program takes.
pub trait Options: Default {
    /// Takes `flag` if it is one of this program's own (`Ok(true)`);
    /// `Ok(false)` if the program does not know it. `value` gives the flag's
    /// value (`--flag=VALUE` or the next argument); a flag without a value
    /// does not call it.
    fn flag(
        &mut self,
        flag: &str,
        value: &mut dyn FnMut() -> Result<OsString, String>,
    ) -> Result<bool, String>;
}

/// The parsed command line.
#[derive(Debug)]
pub struct Args<O> {
    /// `--model DIR`, required.
    pub model: PathBuf,
    /// `--max-bytes N`: read at most this much of each file.
    pub max_bytes: u64,
    /// `--batch-size N`: files run at once.
    pub batch_size: usize,
    /// The files, in the order given.
    pub files: Vec<OsString>,
    /// The program's own options.
    pub options: O,
}

/// Parses the arguments (without the program name), calls `run` and turns
/// its result into the exit status: `run` returns how many files failed, or
/// `Err` if nothing could run.
pub fn main<O: Options>(
    program: &Program,
    run: impl FnOnce(&Args<O>) -> Result<usize, String>,
) -> ExitCode {
    let name = program.name;
    let args = match parse_args(program, std::env::args_os().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => return ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{name}: {message}\n{}", program.usage);
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(failed) => {
            eprintln!("{name}: {failed} of {} files failed", args.files.len());
            ExitCode::from(1)
        }
        Err(message) => {
            eprintln!("{name}: {message}");
            ExitCode::from(2)
        }
    }
}

/// The arguments, or `None` if help or the version was printed.
pub fn parse_args<O: Options>(
    program: &Program,
    mut args: impl Iterator<Item = OsString>,
) -> Result<Option<Args<O>>, String> {
    let (mut model, mut options) = (None, O::default());
    let (mut max_bytes, mut batch_size) = (DEFAULT_MAX_BYTES, DEFAULT_BATCH_SIZE);
    let (mut files, mut only_files) = (Vec::new(), false);
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
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--help" | "-h" => {
                println!("{}\n{}", program.usage, program.help);
                return Ok(None);
            }
            "--version" => {
                println!("{}", (program.version)());
                return Ok(None);
            }
            "--model" => model = Some(PathBuf::from(value()?)),
            "--max-bytes" => {
                let n = number(&value()?, "--max-bytes")?;
                max_bytes = check_max_bytes(n).map_err(|e| format!("--max-bytes: {e}"))?;
            }
            "--batch-size" => {
                let n = number(&value()?, "--batch-size")?;
                batch_size = usize::try_from(n)
                    .ok()
                    .filter(|n| (1..=MAX_BATCH_SIZE).contains(n))
                    .ok_or_else(|| {
                        format!("--batch-size must be in [1, {MAX_BATCH_SIZE}], got {n}")
                    })?;
            }
            _ => {
                if !options.flag(&flag, &mut value)? {
                    return Err(format!("unknown option {flag}"));
                }
            }
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
        files,
        options,
    }))
}

fn number(value: &OsString, flag: &str) -> Result<i64, String> {
    let text = value.to_string_lossy();
    text.parse()
        .map_err(|_| format!("{flag} needs a whole number, got '{text}'"))
}

/// Reads the files a batch at a time and writes to `out`, per file that
/// went through, its path and its row from `predict` (`\tKEY=values` per
/// output), flushing after each batch. `predict` gets the contents of the
/// batch's readable files and returns one row per file. A file that cannot
/// be read, or a batch `predict` fails on, is reported on stderr by path.
/// Returns how many files failed; `Err` only if `out` cannot be written.
pub fn score_files<O>(
    program: &Program,
    args: &Args<O>,
    out: &mut impl Write,
    mut predict: impl FnMut(&[Vec<u8>]) -> Result<Vec<String>, String>,
) -> Result<usize, String> {
    let name = program.name;
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
                    eprintln!("{name}: {e}");
                    failed += 1;
                }
            }
        }
        if paths.is_empty() {
            continue;
        }
        match predict(&contents) {
            Ok(rows) => {
                for (path, row) in paths.iter().zip(rows) {
                    write_path(out, path.as_bytes())
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
                    "{name}: the model failed on a batch of {} files ({}): {e}",
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

#[cfg(test)]
mod tests {
    use super::*;

    const PROGRAM: Program = Program {
        name: "test",
        usage: "usage: test",
        help: "",
        version: String::new,
    };

    /// `--signature NAME` and `--quiet`, as a program's own options.
    #[derive(Debug, Default)]
    struct Own {
        signature: Option<OsString>,
        quiet: bool,
    }

    impl Options for Own {
        fn flag(
            &mut self,
            flag: &str,
            value: &mut dyn FnMut() -> Result<OsString, String>,
        ) -> Result<bool, String> {
            match flag {
                "--signature" => self.signature = Some(value()?),
                "--quiet" => self.quiet = true,
                _ => return Ok(false),
            }
            Ok(true)
        }
    }

    fn parse(args: &[&str]) -> Result<Option<Args<Own>>, String> {
        parse_args(&PROGRAM, args.iter().map(OsString::from))
    }

    #[test]
    fn arguments() {
        let args = parse(&["--model", "m", "--batch-size=2", "--quiet", "a", "b"])
            .unwrap()
            .unwrap();
        assert_eq!(args.model, PathBuf::from("m"));
        assert_eq!((args.batch_size, args.max_bytes), (2, DEFAULT_MAX_BYTES));
        assert!(args.options.quiet && args.options.signature.is_none());
        assert_eq!(args.files, ["a", "b"]);

        let args = parse(&["--signature=s=t", "--model", "m", "--", "--x", "y"])
            .unwrap()
            .unwrap();
        assert_eq!(args.options.signature.as_deref(), Some(OsStr::new("s=t")));
        assert_eq!(args.files, ["--x", "y"]);
        assert!(parse(&["--help"]).unwrap().is_none());
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        for (args, message) in [
            (&["a"][..], "--model DIR is required"),
            (&["--model", "m"], "no files given"),
            (&["--model"], "--model needs a value"),
            (
                &["--model", "m", "--signature"],
                "--signature needs a value",
            ),
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

    #[test]
    fn unreadable_files_and_failed_batches_are_counted_the_rest_printed() {
        let dir = std::env::temp_dir().join(format!("rustfx-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |name: &str, contents: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, contents).unwrap();
            path.into_os_string()
        };
        let (a, b, c) = (file("a\tb", b"12345"), file("b", b"x"), file("c", b"fail"));
        let missing = dir.join("missing").into_os_string();
        let args = Args {
            model: PathBuf::new(),
            max_bytes: 3,
            batch_size: 2,
            files: vec![a.clone(), missing, b.clone(), c],
            options: Own::default(),
        };
        let mut out = Vec::new();
        let failed = score_files(&PROGRAM, &args, &mut out, |contents| {
            if contents.iter().any(|c| c == b"fai") {
                return Err("no".to_string());
            }
            Ok(contents
                .iter()
                .map(|c| format!("\tn={}", c.len()))
                .collect())
        })
        .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        // The missing file, and c's batch (b, c) that failed.
        assert_eq!(failed, 3);
        let a_line = a.to_string_lossy().replace('\t', "\\t");
        assert_eq!(String::from_utf8(out).unwrap(), format!("{a_line}\tn=3\n"));
    }
}
