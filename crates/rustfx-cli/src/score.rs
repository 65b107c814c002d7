//! The read-report-print loop of the programs: the files are read a batch
//! at a time like `read_files` (bounded, never blocking); a file that cannot
//! be read is reported on stderr by path and the others still go through;
//! each file's output is printed with its path first, escaped
//! ([`write_escaped`]), so a path of any bytes is one field of one line and
//! reads back exactly.

use crate::args::{Args, Program};
use crate::text_output::{escaped, write_escaped};
use rustfx::read::read_file;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;

/// Reads `args.files`, `args.batch_size` at a time and at most
/// `args.max_bytes` of each, and calls `each` with a batch's readable files:
/// their paths and contents, in the order given. A file that cannot be read
/// is reported on stderr (the core's message names it) and counted; `each`
/// returns how many of its files failed. Returns how many files failed;
/// `Err` if `each` does (nothing more can run).
pub fn read_batches<O>(
    program: &Program,
    args: &Args<O>,
    mut each: impl FnMut(&[&OsString], Vec<Vec<u8>>) -> Result<usize, String>,
) -> Result<usize, String> {
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
                    eprintln!("{}: {e}", program.name);
                    failed += 1;
                }
            }
        }
        if !paths.is_empty() {
            failed += each(&paths, contents)?;
        }
    }
    Ok(failed)
}

/// Reads the files ([`read_batches`]) and writes to `out`, per file that
/// went through, its path (escaped) and its row from `predict`
/// (`\tKEY=values` per output for rustfx-predict and rustfx-sensor,
/// `\tvalues` for rustfx-features), flushing after each batch. `predict`
/// gets the contents of the batch's readable files and returns one row per
/// file. A file that cannot be read, or a batch `predict` fails on, is
/// reported on stderr by path. Returns how many files failed; `Err` only if
/// `out` cannot be written.
pub fn score_files<O>(
    program: &Program,
    args: &Args<O>,
    out: &mut impl Write,
    mut predict: impl FnMut(&[Vec<u8>]) -> Result<Vec<String>, String>,
) -> Result<usize, String> {
    read_batches(program, args, |paths, contents| {
        let failed = match predict(&contents) {
            Ok(rows) => {
                for (path, row) in paths.iter().zip(rows) {
                    write_escaped(out, path.as_bytes())
                        .and_then(|()| writeln!(out, "{row}"))
                        .map_err(output_error)?;
                }
                0
            }
            Err(e) => {
                let named: Vec<String> = paths
                    .iter()
                    .map(|p| format!("'{}'", escaped(p.as_bytes())))
                    .collect();
                eprintln!(
                    "{}: the model failed on a batch of {} files ({}): {e}",
                    program.name,
                    paths.len(),
                    named.join(", ")
                );
                paths.len()
            }
        };
        // Each batch's lines as soon as they are known.
        out.flush().map_err(output_error)?;
        Ok(failed)
    })
}

/// The message of a failed write to the output.
pub fn output_error(e: std::io::Error) -> String {
    format!("cannot write the output: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Options;
    use std::ffi::OsStr;
    use std::path::PathBuf;

    const PROGRAM: Program = Program {
        name: "test",
        usage: "usage: test",
        help: "",
        version: String::new,
    };

    #[derive(Debug, Default)]
    struct NoOptions;

    impl Options for NoOptions {
        fn flag(
            &mut self,
            _flag: &str,
            _value: &mut dyn FnMut() -> Result<OsString, String>,
        ) -> Result<bool, String> {
            Ok(false)
        }
    }

    /// A fresh directory for one test, removed when the test ends.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("rustfx-cli-{}-{name}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        /// Writes `contents` to the file named `name` (any bytes); its path.
        fn file(&self, name: &[u8], contents: &[u8]) -> OsString {
            let path = self.0.join(OsStr::from_bytes(name));
            std::fs::write(&path, contents).unwrap();
            path.into_os_string()
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn args(files: Vec<OsString>, max_bytes: u64, batch_size: usize) -> Args<NoOptions> {
        Args {
            model: PathBuf::new(),
            max_bytes,
            batch_size,
            files,
            options: NoOptions,
        }
    }

    #[test]
    fn unreadable_files_and_failed_batches_are_counted_the_rest_printed() {
        let dir = TempDir::new("counted");
        let a = dir.file(b"a\tb", b"12345");
        let (b, c) = (dir.file(b"b", b"x"), dir.file(b"c", b"fail"));
        let missing = dir.0.join("missing").into_os_string();
        let args = args(vec![a.clone(), missing, b, c], 3, 2);
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
        // The missing file, and c's batch (b, c) that failed.
        assert_eq!(failed, 3);
        let a_line = a.to_string_lossy().replace('\t', "\\t");
        assert_eq!(String::from_utf8(out).unwrap(), format!("{a_line}\tn=3\n"));
    }

    #[test]
    fn a_file_name_that_is_not_utf8_is_read_and_printed_escaped() {
        let dir = TempDir::new("bytes");
        let bad = dir.file(b"bad\xffname", b"abc");
        let args = args(vec![bad.clone(), bad.clone()], 64, 32);
        let mut out = Vec::new();
        let failed = score_files(&PROGRAM, &args, &mut out, |contents| {
            Ok(contents.iter().map(|c| format!("\t{}", c.len())).collect())
        })
        .unwrap();
        assert_eq!(failed, 0);
        let mut line = Vec::new();
        write_escaped(&mut line, bad.as_bytes()).unwrap();
        line.extend_from_slice(b"\t3\n");
        assert_eq!(out, [line.clone(), line.clone()].concat());
        // The escape reads back to the exact name.
        let printed = String::from_utf8(line).unwrap();
        assert!(printed.contains("bad\\xffname"), "{printed}");
        let field = printed.split('\t').next().unwrap();
        assert_eq!(crate::text_output::unescape(field).unwrap(), bad.as_bytes());
    }
}
