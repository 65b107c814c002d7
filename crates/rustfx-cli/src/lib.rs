//! What the command-line programs share: `rustfx-features` (any extractor
//! on files), `rustfx-predict` (a SavedModel through TF's C API) and
//! `rustfx-sensor` (an exported model in pure Rust). No TensorFlow and no
//! tract here: only the core.
//!
//! - [`args`]: the command line ([`parse_args`]: the common flags, each
//!   program's own through [`Options`]) and the exit statuses ([`main`]);
//! - [`score`]: the loop that reads the files a batch at a time, reports
//!   those that cannot be read and prints one line per file
//!   ([`score_files`], [`read_batches`]);
//! - [`text_output`]: the line format (escaped paths, exact floats, a
//!   `Batch`'s rows as text).
//!
//! Paths are bytes from end to end: arguments are `OsString`s
//! (`std::env::args_os`), files are read by their bytes and printed
//! escaped (`\\ \t \n \r \xHH`), so a file name that is not UTF-8 is read,
//! and printed so that it reads back exactly ([`text_output::unescape`]).
//!
//! ```
//! use rustfx_cli::text_output::{escaped, unescape};
//! let name = b"bad\xffname";
//! assert_eq!(escaped(name), "bad\\xffname");
//! assert_eq!(unescape(&escaped(name)).unwrap(), name);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod args;
pub mod score;
pub mod text_output;

pub use args::{
    main, number, parse_args, Args, Options, Program, DEFAULT_BATCH_SIZE, DEFAULT_MAX_BYTES,
    MAX_BATCH_SIZE,
};
pub use score::{output_error, read_batches, score_files};
