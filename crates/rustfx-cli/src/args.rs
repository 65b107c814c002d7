//! The command line the programs share: their common flags, each
//! program's own ([`Options`]), and their exit statuses.
//!
//! ```text
//! rustfx-predict  --model DIR [--max-bytes N] [--batch-size N] [its own options] FILE...
//! rustfx-sensor   --model DIR [--max-bytes N] [--batch-size N] [its own options] FILE...
//! rustfx-features [--max-bytes N] [--batch-size N] [its own options] EXTRACTOR [NAME=VALUE...] FILE...
//! ```
//!
//! Arguments are `OsString`s from `std::env::args_os()` and files keep their
//! bytes: a file name that is not UTF-8 (`bad\xffname`) is read and printed
//! (escaped, [`text_output::write_escaped`](crate::text_output::write_escaped))
//! like any other. Exit status: 0 if every file went through, 1 if some did
//! not, 2 if nothing could run (arguments, or the program's `run` failing).

use rustfx::read::check_max_bytes;
pub use rustfx::read::DEFAULT_MAX_BYTES;
use std::ffi::{OsStr, OsString};
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

/// The options only one program takes, and what it needs of the rest.
pub trait Options: Default {
    /// Whether the program runs a model: `--model DIR`, required
    /// (rustfx-predict, rustfx-sensor). Without one, `--model` is an unknown
    /// option and [`Args::model`] is empty (rustfx-features).
    const MODEL: bool = true;
    /// Files run at once unless `--batch-size` says otherwise.
    const BATCH_SIZE: usize = DEFAULT_BATCH_SIZE;

    /// Takes `flag` if it is one of this program's own (`Ok(true)`);
    /// `Ok(false)` if the program does not know it. `value` gives the flag's
    /// value (`--flag=VALUE` or the next argument); a flag without a value
    /// does not call it.
    fn flag(
        &mut self,
        flag: &str,
        value: &mut dyn FnMut() -> Result<OsString, String>,
    ) -> Result<bool, String>;

    /// Takes `arg`, an argument that is not a flag and comes before the
    /// first file, if it is one of the program's operands (`Ok(true)`:
    /// rustfx-features' `EXTRACTOR` and `NAME=VALUE`); `Ok(false)` makes it
    /// the first file, and every later argument that is not a flag a file.
    fn operand(&mut self, _arg: &OsStr) -> Result<bool, String> {
        Ok(false)
    }

    /// Whether the command needs files (not `rustfx-features --list`).
    fn needs_files(&self) -> bool {
        true
    }
}

/// The parsed command line.
#[derive(Debug)]
pub struct Args<O> {
    /// `--model DIR`, required if the program runs a model
    /// ([`Options::MODEL`]); else empty.
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
    let (mut max_bytes, mut batch_size) = (DEFAULT_MAX_BYTES, O::BATCH_SIZE);
    let (mut files, mut only_files) = (Vec::new(), false);
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy().into_owned();
        if only_files || !(text.starts_with("--") || text == "-h") {
            // Operands until the first file, then files.
            if !files.is_empty() || !options.operand(&arg)? {
                files.push(arg);
            }
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
            "--model" if O::MODEL => model = Some(PathBuf::from(value()?)),
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
    let model = match model {
        Some(model) => model,
        None if O::MODEL => return Err("--model DIR is required".to_string()),
        None => PathBuf::new(),
    };
    if files.is_empty() && options.needs_files() {
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

/// The whole number `value` of `flag`, or a message that says what it got.
pub fn number(value: &OsStr, flag: &str) -> Result<i64, String> {
    let text = value.to_string_lossy();
    text.parse()
        .map_err(|_| format!("{flag} needs a whole number, got '{text}'"))
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
    fn file_names_keep_their_bytes() {
        let bad = OsStr::from_bytes(b"bad\xffname").to_owned();
        let model = OsStr::from_bytes(b"--model=m\xfe").to_owned();
        let args = [model, bad.clone(), OsString::from("--quiet"), bad.clone()];
        let args = parse_args::<Own>(&PROGRAM, args.into_iter())
            .unwrap()
            .unwrap();
        assert_eq!(args.files, [bad.clone(), bad]);
        assert_eq!(args.model.as_os_str().as_bytes(), b"m\xfe");
        assert!(args.options.quiet);
    }

    /// A program without a model, with operands before its files (as
    /// rustfx-features' `EXTRACTOR NAME=VALUE`) and a command that needs
    /// no files.
    #[derive(Debug, Default)]
    struct Operands {
        taken: Vec<OsString>,
        list: bool,
    }

    impl Options for Operands {
        const MODEL: bool = false;
        const BATCH_SIZE: usize = 64;

        fn flag(
            &mut self,
            flag: &str,
            _value: &mut dyn FnMut() -> Result<OsString, String>,
        ) -> Result<bool, String> {
            self.list = flag == "--list";
            Ok(self.list)
        }

        fn operand(&mut self, arg: &OsStr) -> Result<bool, String> {
            let take = self.taken.is_empty() || arg.as_bytes().contains(&b'=');
            if take {
                self.taken.push(arg.to_owned());
            }
            Ok(take)
        }

        fn needs_files(&self) -> bool {
            !self.list
        }
    }

    #[test]
    fn operands_come_before_the_files() {
        let parse = |args: &[&str]| {
            parse_args::<Operands>(&PROGRAM, args.iter().map(OsString::from)).map(Option::unwrap)
        };
        let args = parse(&["x", "k=v", "a", "--max-bytes", "9", "b=c"]).unwrap();
        assert_eq!(args.options.taken, ["x", "k=v"]);
        assert_eq!(args.files, ["a", "b=c"]);
        assert_eq!((args.max_bytes, args.batch_size), (9, 64));
        assert_eq!(args.model, PathBuf::new());
        assert!(parse(&["--list"]).unwrap().files.is_empty());
        assert_eq!(parse(&["x"]).unwrap_err(), "no files given");
        let error = parse(&["--model", "m", "x", "a"]).unwrap_err();
        assert_eq!(error, "unknown option --model");
    }
}
