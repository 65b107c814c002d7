//! Naive oracles shared by the core's unit tests and the fuzz targets
//! (`tests/fuzz`): the most obvious loop for each definition, written
//! independently of the optimised code they are compared with.
//!
//! Compiled for the crate's own tests and behind the `oracles` feature
//! (off by default; `tests/fuzz/Cargo.toml` enables it), so each oracle
//! exists once and a fix to one reaches both kinds of test. Nothing here is
//! meant for production use: the functions are slow and allocate freely.

pub mod byte_features;
pub mod byte_sequence;
pub mod murmur3;
pub mod ngrams;
pub mod printable_strings;
pub mod unicode_lower;
