//! rustfx: fast, safe feature extraction (FX) from raw text and binary files.
//!
//! This crate is a plain Rust library with no TensorFlow in it. The
//! `tensorflow` feature adds a thin [cxx](https://cxx.rs) bridge (`bridge.rs`) that the C++
//! kernels in `cpp/` call, so the same bytes give the same features in a
//! TensorFlow graph and in a pure-Rust program.
#![deny(missing_docs)]
// No hand-written unsafe code but two calls: `hashing` calls its AVX-512
// lanes and `sha256` its SHA-extension block function after detecting the
// CPU features at run time (the only precondition of a `target_feature`
// function). The rest is what cxx generates for the
// FFI glue in `bridge`, and, with the `predict` feature, `tf_c_api::ffi`.
#![deny(unsafe_code)]

pub mod batch;
pub mod byte_features;
pub mod byte_sequence;
#[allow(unsafe_code)]
pub mod c_abi;
// The arguments, read loop and exit statuses of rustfx-predict and
// rustfx-sensor; no dependency beyond the core.
pub mod cli;
pub mod ember2024;
pub mod error;
pub mod extractor;
pub mod hashing;
pub mod names;
pub mod ngrams;
pub mod output;
// The op library's threads (a rayon pool, TF's C API having none).
#[cfg(any(test, feature = "tensorflow"))]
pub(crate) mod op_threads;
pub mod pe;
pub mod printable_strings;
pub mod read;
pub mod registry;
pub mod sha256;
// Sensor models (features.json + model.onnx); `sensor::Model` runs them with
// tract, only with the `sensor` feature.
pub mod sensor;
pub mod spec;
pub mod text_output;
// TensorFlow's C API for `rustfx-predict`, only with the `predict` feature.
// Its `unsafe` code is in `tf_c_api::ffi`, which alone allows it (each
// block with a SAFETY comment); the rest of the crate still denies it.
#[cfg(feature = "predict")]
pub mod tf_c_api;
pub mod unicode_classes;
// Protobuf's wire format, for the TF messages the hosts read.
#[cfg(any(test, feature = "predict"))]
pub(crate) mod wire;

pub use error::{Error, ErrorKind, Result};

// SAFETY: allowed for the code the cxx macro generates (FFI thunks checked
// by cxx against the C++ declarations); bridge.rs itself has no `unsafe`.
#[cfg(feature = "tensorflow")]
#[allow(unsafe_code)]
mod bridge;
