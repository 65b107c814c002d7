//! The one error type of rustfx: a kind (which maps onto a TensorFlow status
//! code at the bridge) and a message that names the culprit.

use std::fmt;

/// What went wrong, in the terms TensorFlow uses for status codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A parameter or an input is outside what the extractor allows.
    InvalidArgument,
    /// A path does not exist (or a symlink on it dangles).
    NotFound,
    /// The process may not read a path.
    PermissionDenied,
    /// Any other I/O failure.
    Io,
    /// A bug in rustfx (for example a caught panic).
    Internal,
}

/// The status code of success.
pub const OK_STATUS: i32 = 0;

/// Every kind, the TensorFlow status code (a value of `absl::StatusCode`)
/// hosts report it as, and TF's name of that code: the one table of status
/// codes. `read_files`' statuses, the C ABI's, the kernels' (the bridge's
/// `StatusCode`, tested against this) and Python's (`spec_query
/// "constants"`) all come from here.
pub const STATUS_CODES: [(ErrorKind, i32, &str); 5] = [
    (ErrorKind::InvalidArgument, 3, "INVALID_ARGUMENT"),
    (ErrorKind::NotFound, 5, "NOT_FOUND"),
    (ErrorKind::PermissionDenied, 7, "PERMISSION_DENIED"),
    (ErrorKind::Io, 2, "UNKNOWN"),
    (ErrorKind::Internal, 13, "INTERNAL"),
];

impl ErrorKind {
    /// The status code hosts report this kind as ([`STATUS_CODES`]).
    pub const fn status_code(self) -> i32 {
        // A loop, not `iter().find`, so the bridge can check its codes
        // against this table at compile time.
        let mut i = 0;
        while i < STATUS_CODES.len() {
            if STATUS_CODES[i].0 as u8 == self as u8 {
                return STATUS_CODES[i].1;
            }
            i += 1;
        }
        13
    }
}

/// `f`'s result, or an `Internal` error naming `what` if it panicked: no
/// panic may cross an FFI boundary (the cxx bridge, the C ABI).
pub fn catch_panic<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(outcome) => outcome,
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Error::new(
                ErrorKind::Internal,
                format!("internal error (a bug in rustfx) in {what}: panic: {detail}"),
            ))
        }
    }
}

/// An error with its kind and a human-readable message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// Builds an error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// Shorthand for an [`ErrorKind::InvalidArgument`] error.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, without the kind.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The result type of fallible rustfx functions.
pub type Result<T> = std::result::Result<T, Error>;
