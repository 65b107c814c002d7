//! `features.json`: which rustfx extractors feed which inputs of a sensor
//! model, and running them.
//!
//! `rustfx.sensor.export` writes it beside `model.onnx`:
//!
//! ```json
//! {"format": "rustfx-sensor", "format_version": 1, "model_input": "contents",
//!  "features": [{"layer": "byte_histogram", "model_input": "contents",
//!                "onnx_input": "byte_histogram",
//!                "spec": {"extractor": "byte_histogram", "output_version": 1, ...}}],
//!  "outputs": [{"key": "output_0", "onnx_output": "Identity:0"}]}
//! ```
//!
//! Each feature is a [`FeatureSpec`] checked by the core's parser, so a spec
//! of another output version is refused here, naming the extractor, and the
//! message is prefixed with the feature's place in the file. Only dense
//! rows can feed an ONNX graph, so a ragged or sparse spec is refused too.
//! Parsing is total: any text gives a manifest or an `InvalidArgument`
//! error, never a panic (fuzzed by `tests/fuzz/fuzz_targets/sensor_features.rs`).
//! This part needs no ONNX runtime and is built without the `sensor`
//! feature.

use rustfx::extractor::Extractor;
use rustfx::output::Batch;
use rustfx::output::Layout;
use rustfx::spec::{self, params::short, FeatureSpec};
use rustfx::{Error, Result};
use serde_json::{Map, Value};

/// The `format` every features.json has.
pub const FORMAT: &str = "rustfx-sensor";
/// The layout of features.json this build reads and writes.
pub const FORMAT_VERSION: u64 = 1;
/// The longest features.json accepted (a few specs are a few KiB).
pub const MAX_FEATURES_BYTES: usize = 4 << 20;
/// At most this many features (ONNX inputs) or outputs.
pub const MAX_ENTRIES: usize = 256;
/// The longest name (layer, input, output, key) accepted, in bytes.
pub const MAX_NAME_BYTES: usize = 256;

/// One extractor feeding one ONNX input.
#[derive(Debug)]
pub struct Feature {
    /// The Keras layer it came from (for messages).
    pub layer: String,
    /// The ONNX input it feeds.
    pub onnx_input: String,
    /// Its spec, checked against this build.
    pub spec: FeatureSpec,
    /// The built extractor: dense rows, or ragged numeric rows with `pad`.
    pub extractor: Extractor,
    /// Values per row; `None` for padded ragged rows (the batch's longest).
    pub width: Option<usize>,
    /// For ragged numeric rows (the Keras layer's `pad=`): the value each
    /// batch is padded with to its longest row, as the layer pads it.
    pub pad: Option<f64>,
}

/// One output of the model: the key it prints under, the ONNX output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputName {
    /// What `rustfx-sensor` prints it as (`output_0`, ..., as Keras's
    /// SavedModel export names them).
    pub key: String,
    /// The name of the ONNX graph's output.
    pub onnx_output: String,
}

/// A parsed, checked features.json.
#[derive(Debug)]
pub struct Features {
    /// The Keras model's raw-bytes input, which every feature reads.
    pub model_input: String,
    /// The features, in the order of the ONNX graph's inputs.
    pub features: Vec<Feature>,
    /// The outputs, in the order of the ONNX graph's outputs.
    pub outputs: Vec<OutputName>,
}

impl Features {
    /// Parses and checks the text of a features.json. Messages say what is
    /// wrong and where, not which file (the caller adds that).
    pub fn from_json(text: &str) -> Result<Self> {
        if text.len() > MAX_FEATURES_BYTES {
            return Err(invalid(format!(
                "it has {} bytes; at most {MAX_FEATURES_BYTES} are accepted",
                text.len()
            )));
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| invalid(format!("it is not JSON: {e}")))?;
        let top = object(&value, "the top level")?;
        check_keys(
            top,
            &[
                "format",
                "format_version",
                "model_input",
                "features",
                "outputs",
            ],
            "the top level",
        )?;
        match top.get("format") {
            Some(Value::String(f)) if f == FORMAT => {}
            other => {
                return Err(invalid(format!(
                    "\"format\" must be \"{FORMAT}\" (a file written by rustfx.sensor.export), \
                     got {}",
                    other.map_or("nothing".to_string(), short)
                )))
            }
        }
        match top.get("format_version").and_then(Value::as_u64) {
            Some(FORMAT_VERSION) => {}
            Some(v) => {
                return Err(invalid(format!(
                    "it has format_version {v}, but this rustfx reads format_version \
                     {FORMAT_VERSION}: export the model with this rustfx"
                )))
            }
            None => {
                return Err(invalid(format!(
                    "\"format_version\" must be a non-negative integer, got {}",
                    top.get("format_version")
                        .map_or("nothing".to_string(), short)
                )))
            }
        }
        let model_input = name(top, "model_input", "the top level")?;
        let features = list(top, "features")?
            .iter()
            .enumerate()
            .map(|(i, value)| {
                let feature = parse_feature(value, &model_input);
                feature.map_err(|e| invalid(format!("features[{i}]: {}", e.message())))
            })
            .collect::<Result<Vec<_>>>()?;
        if let Some(dup) = duplicate(features.iter().map(|f| f.onnx_input.as_str())) {
            return Err(invalid(format!("two features feed the ONNX input '{dup}'")));
        }
        let outputs = list(top, "outputs")?
            .iter()
            .enumerate()
            .map(|(i, value)| {
                let what = format!("outputs[{i}]");
                let output = object(value, &what)?;
                check_keys(output, &["key", "onnx_output"], &what)?;
                Ok(OutputName {
                    key: name(output, "key", &what)?,
                    onnx_output: name(output, "onnx_output", &what)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if let Some(dup) = duplicate(outputs.iter().map(|o| o.key.as_str())) {
            return Err(invalid(format!("two outputs have the key '{dup}'")));
        }
        Ok(Features {
            model_input,
            features,
            outputs,
        })
    }

    /// Every feature's rows for a batch of documents, in feature order:
    /// the core's batch interface, each a dense [`Batch`] (ragged rows
    /// padded to the batch's longest, as the Keras layer pads them; other
    /// layouts are refused when parsed, `row_width`).
    pub fn extract(&self, docs: &[&[u8]]) -> Result<Vec<Batch>> {
        self.features
            .iter()
            .map(|feature| {
                let batch = feature.extractor.extract_batch(docs)?;
                match feature.pad {
                    Some(pad) => batch.into_padded(pad),
                    None => Ok(batch),
                }
            })
            .collect()
    }
}

fn parse_feature(value: &Value, model_input: &str) -> Result<Feature> {
    let what = "the feature";
    let feature = object(value, what)?;
    check_keys(
        feature,
        &["layer", "model_input", "onnx_input", "spec", "pad"],
        what,
    )?;
    let layer = name(feature, "layer", what)?;
    let reads = name(feature, "model_input", what)?;
    if reads != model_input {
        return Err(invalid(format!(
            "layer '{layer}' reads the model input '{reads}', but the sensor feeds file \
             contents to '{model_input}' only"
        )));
    }
    let onnx_input = name(feature, "onnx_input", what)?;
    let spec_value = feature
        .get("spec")
        .ok_or_else(|| invalid(format!("layer '{layer}' has no \"spec\"")))?;
    // The core's parser: unknown extractors, bad parameters and another
    // output version are refused here, with the core's message.
    let (spec, extractor) =
        spec::load_value(spec_value).map_err(|e| invalid(format!("layer '{layer}': {e}")))?;
    let pad = match feature.get("pad") {
        None | Some(Value::Null) => None,
        Some(value) => Some(value.as_f64().filter(|v| v.is_finite()).ok_or_else(|| {
            invalid(format!(
                "layer '{layer}': \"pad\" must be a number, got {value}"
            ))
        })?),
    };
    let width = row_width(&spec, &layer, pad.is_some())?;
    Ok(Feature {
        layer,
        onnx_input,
        spec,
        extractor,
        width,
        pad,
    })
}

/// The row width of a dense spec (`None` for ragged numeric rows padded to
/// each batch's longest); sparse, string and unpadded ragged outputs cannot
/// feed an ONNX graph.
fn row_width(spec: &FeatureSpec, layer: &str, padded: bool) -> Result<Option<usize>> {
    let output = spec.output();
    match (output.layout, output.dtype.size(), output.width, padded) {
        (Layout::Dense, Some(_), Some(width), false) => Ok(Some(width)),
        (Layout::Ragged, Some(_), None, true) => Ok(None),
        _ => Err(invalid(format!(
            "layer '{layer}' ({}) outputs {} {} rows{}; only dense numeric rows, or ragged \
             numeric rows padded to the batch's longest (the layer's pad=), can feed the \
             ONNX model",
            spec.extractor(),
            output.layout.name(),
            output.dtype.name(),
            if padded { " with pad" } else { "" }
        ))),
    }
}

fn invalid(message: String) -> Error {
    Error::invalid_argument(message)
}

fn object<'a>(value: &'a Value, what: &str) -> Result<&'a Map<String, Value>> {
    value.as_object().ok_or_else(|| {
        invalid(format!(
            "{what} must be a JSON object, got {}",
            short(value)
        ))
    })
}

fn check_keys(object: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<()> {
    match object.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(invalid(format!(
            "{what} has no key \"{}\"; allowed: {}",
            key.escape_debug(),
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}

/// A non-empty string of at most [`MAX_NAME_BYTES`] bytes.
fn name(object: &Map<String, Value>, key: &str, what: &str) -> Result<String> {
    match object.get(key) {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_NAME_BYTES => Ok(s.clone()),
        Some(other) => Err(invalid(format!(
            "{what}'s \"{key}\" must be a string of 1 to {MAX_NAME_BYTES} bytes, got {}",
            short(other)
        ))),
        None => Err(invalid(format!("{what} has no \"{key}\""))),
    }
}

/// A non-empty JSON list of at most [`MAX_ENTRIES`] items.
fn list<'a>(object: &'a Map<String, Value>, key: &str) -> Result<&'a Vec<Value>> {
    match object.get(key) {
        Some(Value::Array(items)) if !items.is_empty() && items.len() <= MAX_ENTRIES => Ok(items),
        Some(other) => Err(invalid(format!(
            "\"{key}\" must be a list of 1 to {MAX_ENTRIES} items, got {}",
            short(other)
        ))),
        None => Err(invalid(format!("it has no \"{key}\""))),
    }
}

fn duplicate<'a>(names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let mut seen = std::collections::HashSet::new();
    names.into_iter().find(|name| !seen.insert(*name))
}
