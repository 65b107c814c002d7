//! rustfx: fast, safe feature extraction (FX) from raw text and binary files.
//!
//! This crate is a plain Rust library with no TensorFlow in it. The
//! `tensorflow` feature adds a thin [cxx] bridge (`bridge.rs`) that the C++
//! kernels in `cpp/` call, so the same bytes give the same features in a
//! TensorFlow graph and in a pure-Rust program.
#![deny(missing_docs)]
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod byte_features;
pub mod byte_sequence;
pub mod error;
pub mod hashing;
pub mod read;
pub mod unicode_classes;

pub use error::{Error, ErrorKind, Result};
pub mod ngrams;

#[cfg(feature = "tensorflow")]
mod bridge;
