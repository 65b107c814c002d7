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
