//! rustfx-ops: the TensorFlow op library. The C++ kernels in `cpp/` run on
//! TensorFlow's C kernel API and call the core (`crates/rustfx`) through
//! this crate's [cxx](https://cxx.rs) bridge (`bridge.rs`), so one build
//! loads into TF 2.16-2.21 (BUILD_NOTES.md, "One op library for every
//! TensorFlow").
//!
//! The only `unsafe` code is what cxx generates for the FFI glue, checked
//! by cxx against the C++ declarations; `bridge.rs` itself has none.
#![deny(unsafe_code)]

// SAFETY: allowed for the code the cxx macro generates (FFI thunks checked
// by cxx against the C++ declarations); bridge.rs itself has no `unsafe`.
#[allow(unsafe_code)]
mod bridge;
// The op library's threads (a rayon pool, TF's C API having none).
mod op_threads;
