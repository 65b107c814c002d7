//! `FeatureSpec`: what an extractor computes, as data that travels with
//! models and features.
//!
//! A spec names an extractor of the [registry](crate::registry), gives every
//! parameter (defaults filled in), and states the output (kind, dtype,
//! shape) and the extractor's **output version**. Its JSON form is the one
//! every host takes: the Rust API ([`FeatureSpec::from_json`],
//! [`FeatureSpec::build`]), `rustfx-features --spec FILE`, Python
//! (`rustfx.FeatureSpec`, `rustfx.extract`), the TensorFlow ops (their one
//! `spec` attr, so SavedModels carry it) and Keras layers (their config, so
//! `.keras` files carry it).
//!
//! ```json
//! {"extractor": "byte_entropy_histogram", "output_version": 1,
//!  "params": {"empty": "zeros", "step": 1024, "window": 2048},
//!  "output": {"dtype": "float32", "kind": "dense", "shape": [256]}}
//! ```
//!
//! Parsing is strict: an unknown key, a value of the wrong type, or a value
//! the extractor's constructor rejects is an `InvalidArgument` error with
//! the core's message. A spec whose `output_version` is not this build's is
//! refused, naming the extractor and both versions: its features differ.
//! `output_version` and `output` may be left out of a spec written by hand
//! (they are then this build's); every spec rustfx writes has them.
//!
//! ```
//! use rustfx::spec::FeatureSpec;
//! let spec = FeatureSpec::from_json(r#"{"extractor": "byte_histogram"}"#).unwrap();
//! assert_eq!(spec.output().width, Some(256));
//! let again = FeatureSpec::from_json(&spec.to_json()).unwrap();
//! assert_eq!(again, spec);
//! assert!(spec.build().unwrap().extract_batch(&[b"aab"]).is_ok());
//! ```

pub mod params;

use crate::extractor::Extractor;
use crate::output::{Layout, OutputSpec};
use crate::registry::{self, ExtractorEntry};
use crate::{Error, Result};
use params::{short, ParamValue, Params};
use serde_json::{json, Map, Value};

/// The longest spec text accepted (a spec is a few hundred bytes; this
/// bounds what a hostile file can make the parser hold).
pub const MAX_SPEC_BYTES: usize = 1 << 20;

/// A validated description of one extractor call. Built only through
/// parsing and checking, so a `FeatureSpec` always builds.
#[derive(Clone, Debug)]
pub struct FeatureSpec {
    entry: &'static ExtractorEntry,
    params: Params,
    output: OutputSpec,
}

impl PartialEq for FeatureSpec {
    fn eq(&self, other: &Self) -> bool {
        self.entry.name == other.entry.name && self.params == other.params
    }
}

impl FeatureSpec {
    /// The spec of `extractor` with the given parameters (the others take
    /// their defaults), checked.
    pub fn new<'a>(
        extractor: &str,
        params: impl IntoIterator<Item = (&'a str, ParamValue)>,
    ) -> Result<Self> {
        let params: Map<String, Value> = params
            .into_iter()
            .map(|(name, value)| (name.to_string(), value.to_json()))
            .collect();
        Self::from_value(&json!({"extractor": extractor, "params": params}))
    }

    /// Parses and checks a spec's JSON text.
    pub fn from_json(text: &str) -> Result<Self> {
        load(text).map(|(spec, _)| spec)
    }

    /// Checks a spec already parsed as JSON.
    pub fn from_value(value: &Value) -> Result<Self> {
        load_value(value).map(|(spec, _)| spec)
    }

    /// The extractor's name.
    pub fn extractor(&self) -> &'static str {
        self.entry.name
    }

    /// The extractor's registry entry.
    pub fn entry(&self) -> &'static ExtractorEntry {
        self.entry
    }

    /// The output version this spec (and this build) computes.
    pub fn output_version(&self) -> u32 {
        self.entry.output_version
    }

    /// Every parameter, defaults filled in.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// What the extractor outputs per document.
    pub fn output(&self) -> OutputSpec {
        self.output
    }

    /// Builds the extractor.
    pub fn build(&self) -> Result<Extractor> {
        (self.entry.build)(&self.params)
    }

    /// The canonical JSON value (keys sorted): what [`to_json`](Self::to_json) writes.
    pub fn to_value(&self) -> Value {
        let params: Map<String, Value> = self
            .params
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_json()))
            .collect();
        json!({
            "extractor": self.entry.name,
            "output_version": self.entry.output_version,
            "params": params,
            "output": output_json(self.output),
        })
    }

    /// The canonical JSON text, on one line.
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }
}

/// Parses and checks a spec's JSON text, and builds its extractor once
/// (checking the values is building it).
pub fn load(text: &str) -> Result<(FeatureSpec, Extractor)> {
    if text.len() > MAX_SPEC_BYTES {
        return Err(Error::invalid_argument(format!(
            "a feature spec is at most {MAX_SPEC_BYTES} bytes, got {}",
            text.len()
        )));
    }
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Error::invalid_argument(format!("a feature spec must be JSON: {e}")))?;
    load_value(&value)
}

/// [`load`] for a spec already parsed as JSON.
pub fn load_value(value: &Value) -> Result<(FeatureSpec, Extractor)> {
    let object = value.as_object().ok_or_else(|| {
        Error::invalid_argument(format!(
            "a feature spec must be a JSON object with \"extractor\", got {}",
            short(value)
        ))
    })?;
    check_keys("a feature spec", object, &TOP_KEYS)?;
    let name = match object.get("extractor") {
        Some(Value::String(name)) => name,
        Some(other) => {
            return Err(Error::invalid_argument(format!(
                "a feature spec's \"extractor\" must be a string, got {}",
                short(other)
            )))
        }
        None => {
            return Err(Error::invalid_argument(
                "a feature spec needs \"extractor\"",
            ))
        }
    };
    let entry = registry::find(name)?;
    if let Some(version) = object.get("output_version") {
        check_version(entry, version)?;
    }
    let given = match object.get("params") {
        None => Map::new(),
        Some(Value::Object(given)) => given.clone(),
        Some(other) => {
            return Err(Error::invalid_argument(format!(
                "{name}: \"params\" must be a JSON object, got {}",
                short(other)
            )))
        }
    };
    let declared: Vec<&str> = entry.params.iter().map(|p| p.name).collect();
    if let Some(unknown) = given.keys().find(|k| !declared.contains(&k.as_str())) {
        let allowed = if declared.is_empty() {
            "it has none".to_string()
        } else {
            format!("its parameters are {}", declared.join(", "))
        };
        return Err(Error::invalid_argument(format!(
            "{name} has no parameter '{unknown}'; {allowed}"
        )));
    }
    let mut values = Vec::with_capacity(entry.params.len());
    for decl in entry.params {
        let value = match given.get(decl.name) {
            Some(json) => ParamValue::from_json(json, decl, name)?,
            None => decl.default.value().ok_or_else(|| {
                Error::invalid_argument(format!(
                    "{name} needs parameter '{}' ({}): {}",
                    decl.name,
                    decl.ty.name(),
                    decl.doc
                ))
            })?,
        };
        values.push((decl.name, value));
    }
    let mut params = Params { values };
    (entry.canonicalize)(&mut params)?;
    let extractor = (entry.build)(&params)?;
    let output = extractor.output();
    if let Some(stated) = object.get("output") {
        if *stated != output_json(output) {
            return Err(Error::invalid_argument(format!(
                "{name}: the spec says its output is {}, but these parameters give {} \
                 in this build of rustfx; fix or remove \"output\"",
                short(stated),
                output_json(output)
            )));
        }
    }
    Ok((
        FeatureSpec {
            entry,
            params,
            output,
        },
        extractor,
    ))
}

/// What other languages ask of the core, as text (Python reaches the core
/// only through the op library): `"registry"`, the table as JSON
/// ([`registry_json`](crate::registry::registry_json)); `"spec"`, the
/// canonical JSON of `spec`; `"feature_names"`, the name of each value of
/// its rows (an error for extractors without names).
pub fn query(what: &str, spec: &str) -> Result<Vec<String>> {
    match what {
        "registry" => Ok(vec![registry::registry_json().to_string()]),
        "spec" => Ok(vec![FeatureSpec::from_json(spec)?.to_json()]),
        "constants" => Ok(vec![constants_json().to_string()]),
        "feature_names" => {
            let (spec, extractor) = load(spec)?;
            extractor.feature_names().ok_or_else(|| {
                Error::invalid_argument(format!("{} does not name its values", spec.extractor()))
            })
        }
        _ => Err(Error::invalid_argument(format!(
            "query must be one of registry, spec, feature_names, constants, got '{what}'"
        ))),
    }
}

/// The constants every host shares, for Python (`spec_query "constants"`):
/// the default `max_bytes`, the status codes by TF's name (`OK`
/// included) and the explanation caps.
fn constants_json() -> Value {
    let mut codes = Map::new();
    codes.insert("OK".into(), Value::from(crate::error::OK_STATUS));
    for (_, code, name) in crate::error::STATUS_CODES {
        codes.insert(name.into(), Value::from(code));
    }
    use crate::explain as e;
    serde_json::json!({
        "default_max_bytes": crate::read::DEFAULT_MAX_BYTES,
        "status_codes": codes,
        "explain": {
            "default_max_contributions": e::DEFAULT_MAX_CONTRIBUTIONS,
            "max_contributions": e::MAX_CONTRIBUTIONS,
            "default_max_text_bytes": e::DEFAULT_MAX_TEXT_BYTES,
            "max_text_bytes": e::MAX_TEXT_BYTES,
        },
    })
}

const TOP_KEYS: [&str; 4] = ["extractor", "output_version", "params", "output"];

fn check_keys(what: &str, object: &Map<String, Value>, allowed: &[&str]) -> Result<()> {
    match object.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(unknown) => Err(Error::invalid_argument(format!(
            "{what} has no key \"{unknown}\"; allowed: {}",
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}

/// The spec's `output_version` must be this build's: any other version's
/// features differ from what this build computes.
fn check_version(entry: &ExtractorEntry, version: &Value) -> Result<()> {
    let build = entry.output_version;
    let name = entry.name;
    match version.as_u64() {
        Some(v) if v == u64::from(build) => Ok(()),
        Some(v) => Err(Error::invalid_argument(format!(
            "{name}: the spec was made for output version {v} of {name}, but this build \
             of rustfx computes output version {build}, whose features differ. Re-extract \
             the features (or retrain the model) with this rustfx, or use the rustfx \
             release that computes version {v}."
        ))),
        None => Err(Error::invalid_argument(format!(
            "{name}: \"output_version\" must be a non-negative integer, got {}",
            short(version)
        ))),
    }
}

/// An output's JSON form: `{"kind", "dtype", "shape"}`, the shape a row's
/// (`[width]`, or `[null]` for ragged rows).
pub fn output_json(output: OutputSpec) -> Value {
    let shape = match output.layout {
        Layout::Ragged => json!([null]),
        Layout::Dense | Layout::Sparse => json!([output.width]),
    };
    json!({"kind": output.layout.name(), "dtype": output.dtype.name(), "shape": shape})
}

#[cfg(test)]
mod tests;
