//! Scoring files in pure Rust: a Keras model exported by
//! `rustfx.sensor.export` (docs/sensor.md), run with no TensorFlow.
//!
//! A sensor model is a directory of two files. `features.json` lists the
//! [`FeatureSpec`](crate::spec::FeatureSpec) of each rustfx layer of the
//! Keras model, output version included, and the ONNX input it feeds;
//! `model.onnx` is the rest of the Keras model, from those features to the
//! model's outputs, as Keras's ONNX export wrote it. The core extracts the
//! features from each file's bytes (the same values as the ops, bit for
//! bit) and [tract](https://github.com/sonos/tract), a pure-Rust ONNX
//! runtime, runs the network.
//!
//! [`features`] (parsing features.json, running the extractors) needs no
//! ONNX runtime and is always built; [`Model`] needs the cargo feature
//! `sensor` (the optional `tract-onnx` dependency), as does `rustfx-sensor`.
//!
//! ```no_run
//! # #[cfg(feature = "sensor")]
//! # fn main() -> rustfx::Result<()> {
//! let model = rustfx::sensor::Model::load("target/demo-sensor")?;
//! let contents = std::fs::read("/usr/include/stdio.h").unwrap();
//! for output in model.predict(&[&contents])? {
//!     println!("{} {:?}", output.key, output.values);
//! }
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "sensor"))]
//! # fn main() {}
//! ```

pub mod features;
#[cfg(feature = "sensor")]
mod model;

#[cfg(feature = "sensor")]
pub use model::{Model, Output, OutputValues, FEATURES_FILE, MAX_MODEL_BYTES, MODEL_FILE};

#[cfg(test)]
mod tests;
