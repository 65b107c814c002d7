//! Scoring files in pure Rust: a Keras model exported by
//! `rustfx.sensor.export` (docs/sensor.md), run with no TensorFlow.
//!
//! A sensor model is a directory of two files. `features.json` lists the
//! [`FeatureSpec`](rustfx::spec::FeatureSpec) of each rustfx layer of the
//! Keras model, output version included, and the ONNX input it feeds;
//! `model.onnx` is the rest of the Keras model, from those features to the
//! model's outputs, as Keras's ONNX export wrote it. The core extracts the
//! features from each file's bytes (the same values as the ops, bit for
//! bit) and [tract](https://github.com/sonos/tract), a pure-Rust ONNX
//! runtime, runs the network.
//!
//! [`features`] parses features.json and runs the extractors (the core's
//! batch interface); [`Model`] adds the network (tract). The program
//! `rustfx-sensor` is this crate's binary.
//!
//! ```no_run
//! # fn main() -> rustfx::Result<()> {
//! let model = rustfx_sensor::Model::load("target/demo-sensor")?;
//! let contents = std::fs::read("/usr/include/stdio.h").unwrap();
//! for output in model.predict(&[&contents])? {
//!     println!("{} {:?}", output.key, output.values);
//! }
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod features;
mod model;

pub use model::{Model, Output, OutputValues, FEATURES_FILE, MAX_MODEL_BYTES, MODEL_FILE};

#[cfg(test)]
mod tests;
