//! rustfx-ops: the TensorFlow op library. The C++ kernels in `cpp/` run on
//! TensorFlow's C kernel API and call the core (`crates/rustfx`) through
//! this crate's [cxx](https://cxx.rs) bridge (`bridge.rs`), so one build
//! loads into TF 2.16-2.21 (BUILD_NOTES.md, "One op library for every
//! TensorFlow").
//!
//! `unsafe` is denied but in the bridge module: the code cxx generates for
//! the FFI glue, the `unsafe extern "C++"` block cxx's syntax requires (the
//! generated C++ checks its signatures against the C++ declarations), and
//! one `unsafe impl Sync for ffi::ChunkWork`, with its SAFETY comment in
//! `bridge.rs`.
#![deny(unsafe_code)]
// Each `unsafe` block says why it is sound, and an `unsafe fn` says what
// its caller must ensure (`# Safety`); clippy checks both.
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

// SAFETY: allowed for the code the cxx macro generates (FFI thunks checked
// by cxx against the C++ declarations) and for bridge.rs's one
// `unsafe impl Sync for ffi::ChunkWork`, whose own SAFETY comment says why
// sharing it between the pool's threads is sound.
#[allow(unsafe_code)]
mod bridge;
// The feature cache in the extractor ops (one `unsafe`: registering its
// flush with atexit, with its SAFETY comment).
mod cache_ops;
// A chunk's rows as the kernels read them.
mod part;
// The op library's threads (a rayon pool, TF's C API having none).
mod op_threads;
