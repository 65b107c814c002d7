//! rustfx: fast, safe feature extraction (FX) from raw text and binary files.
//!
//! The core: a plain Rust library with no TensorFlow, no build script and
//! no FFI. Every host drives it through one batch interface
//! ([`Extractor::extract_batch`](extractor::Extractor::extract_batch)) and
//! converts the [`Batch`](output::Batch) into its own form: the op library
//! (the workspace's root crate, C++ kernels over a cxx bridge), the C ABI
//! (`rustfx-capi`), `rustfx-predict`, `rustfx-sensor` and `rustfx-features` (the last three
//! through `rustfx-cli`).
//! So the same bytes give the same features in a TensorFlow graph and in a
//! pure-Rust program.
#![deny(missing_docs)]
// No unsafe code but two calls, each allowed where it is with a SAFETY
// comment: `hashing` calls its AVX-512 lanes and `sha256` its SHA-extension
// block function after detecting the CPU features at run time (the only
// precondition of a `target_feature` function).
#![deny(unsafe_code)]
// Each of those `unsafe` blocks says why it is sound, and an `unsafe fn`
// says what its caller must ensure (`# Safety`); clippy checks both
// (clippy.toml: private functions too).
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod batch;
pub mod byte_features;
pub mod byte_sequence;
pub mod ember2024;
pub mod error;
pub mod explain;
pub mod extractor;
pub mod hashing;
pub mod names;
pub mod ngrams;
// Naive reference implementations for the unit tests and the fuzz targets
// (feature `oracles`, see Cargo.toml); not an API.
#[cfg(any(test, feature = "oracles"))]
pub mod oracles;
pub mod output;
pub mod pe;
pub mod printable_strings;
pub mod read;
pub mod registry;
pub mod sha256;
pub mod spec;
pub mod unicode_classes;

pub use error::{Error, ErrorKind, Result};
