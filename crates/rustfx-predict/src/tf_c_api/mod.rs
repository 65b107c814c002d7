//! TensorFlow's C API, made safe for `rustfx-predict`: load an op library,
//! load a SavedModel, feed a batch of strings to one of its signatures and
//! read the outputs back.
//!
//! - [`ffi`] is the only module with `unsafe` code. It includes the
//!   declarations bindgen generates at build time from the headers of the TF
//!   pip wheel (`build.rs`, feature `predict`) and wraps them in owned types
//!   ([`Library`], [`SavedModel`], [`Tensor`]) that free what they own, tie
//!   borrowed TF pointers to their owner's lifetime, and turn every
//!   `TF_Status` into a `Result` carrying TF's code and message.
//! - [`signature`] reads the signatures out of the serialized `MetaGraphDef`,
//!   which the C API returns as bytes; it is a small protobuf reader in safe
//!   Rust (the C API has no accessor for signatures).
//!
//! This module is compiled only with the `predict` feature, so the core
//! crate stays free of TensorFlow; its link arguments (libtensorflow_cc) are
//! given to `rustfx-predict` and to the test programs only (build.rs), never
//! to the cdylib, which is the op library.

#[allow(unsafe_code)]
mod ffi;
pub mod graph_specs;
pub mod signature;

pub use ffi::{version, Endpoint, Library, SavedModel, Tensor, Values};

use std::fmt;

/// An error from TensorFlow (or from this layer's checks of what TF
/// returned): the status code's name and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TfError {
    code: &'static str,
    message: String,
}

impl TfError {
    /// An error with TF's name for its status `code` (`"NOT_FOUND"`, ...).
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        TfError {
            code,
            message: message.into(),
        }
    }

    /// TF's message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for TfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for TfError {}

/// Result of the TF layer.
pub type Result<T> = std::result::Result<T, TfError>;

/// TF's name of a data type: the `DataType` enum of `types.proto`, which
/// `TF_DataType` and the signatures' `dtype` fields share. Python's names.
pub fn dtype_name(dtype: u32) -> String {
    let name = match dtype {
        1 => "float32",
        2 => "float64",
        3 => "int32",
        4 => "uint8",
        5 => "int16",
        6 => "int8",
        7 => "string",
        8 => "complex64",
        9 => "int64",
        10 => "bool",
        14 => "bfloat16",
        17 => "uint16",
        18 => "complex128",
        19 => "float16",
        20 => "resource",
        21 => "variant",
        22 => "uint32",
        23 => "uint64",
        other => return format!("dtype {other}"),
    };
    name.to_string()
}

/// The `DataType` number of `tf.string`.
pub const DT_STRING: u32 = 7;
