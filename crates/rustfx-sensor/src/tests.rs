//! features.json: what it accepts, what it refuses and how it says so.

use super::features::Features;
use rustfx::output::Batch;
use rustfx::spec::FeatureSpec;
use rustfx_cli::text_output::text_rows;
use serde_json::{json, Value};

fn spec(extractor: &str, params: Value) -> Value {
    let text = json!({"extractor": extractor, "params": params}).to_string();
    FeatureSpec::from_json(&text).unwrap().to_value()
}

fn manifest() -> Value {
    json!({
        "format": "rustfx-sensor",
        "format_version": 1,
        "model_input": "contents",
        "features": [
            {"layer": "byte_histogram", "model_input": "contents",
             "onnx_input": "byte_histogram", "spec": spec("byte_histogram", json!({}))},
            {"layer": "hashed_ngrams", "model_input": "contents", "onnx_input": "ids",
             "spec": spec("hashed_ngrams", json!({"num_buckets": 64, "output": "sequence",
                                                  "max_tokens": 4, "tokenizer": "word"}))},
        ],
        "outputs": [{"key": "output_0", "onnx_output": "Identity:0"}],
    })
}

fn refusal(value: &Value) -> String {
    Features::from_json(&value.to_string())
        .unwrap_err()
        .to_string()
}

#[test]
fn parses_and_extracts_like_the_extractors() {
    let features = Features::from_json(&manifest().to_string()).unwrap();
    assert_eq!(features.model_input, "contents");
    assert_eq!(features.outputs[0].key, "output_0");
    let widths: Vec<Option<usize>> = features.features.iter().map(|f| f.width).collect();
    assert_eq!(widths, [Some(256), Some(4)]);
    let docs: [&[u8]; 3] = [b"a b c a b", b"", b"\x00\xff zz"];
    let batches = features.extract(&docs).unwrap();
    for (feature, batch) in features.features.iter().zip(&batches) {
        let want: Vec<Vec<String>> = docs
            .iter()
            .flat_map(|d| text_rows(&feature.extractor.extract_batch(&[d]).unwrap()))
            .collect();
        let got = text_rows(batch);
        assert!(matches!(batch, Batch::Dense { .. }));
        assert_eq!(got, want, "{}", feature.layer);
    }
}

#[test]
fn another_output_version_is_refused_naming_the_extractor() {
    let mut m = manifest();
    m["features"][1]["spec"]["output_version"] = json!(999);
    let message = refusal(&m);
    assert!(
        message.starts_with(
            "features[1]: layer 'hashed_ngrams': hashed_ngrams: the spec \
                                 was made for output version 999"
        ),
        "{message}"
    );
}

#[test]
fn ragged_and_sparse_outputs_cannot_feed_onnx() {
    for (extractor, params) in [
        ("hashed_ngrams", json!({"num_buckets": 64})),
        (
            "hashed_ngrams",
            json!({"num_buckets": 64, "output": "sparse"}),
        ),
        ("printable_strings", json!({})),
    ] {
        let mut m = manifest();
        m["features"][0]["spec"] = spec(extractor, params);
        let message = refusal(&m);
        assert!(
            message.contains("only dense numeric rows, or ragged numeric rows padded"),
            "{message}"
        );
    }
    // A pad makes ragged numeric rows dense (the batch's longest); it is
    // refused on dense rows, strings and sparse rows.
    let mut m = manifest();
    m["features"][0]["spec"] = spec("hashed_ngrams", json!({"num_buckets": 64}));
    m["features"][0]["pad"] = json!(0);
    let features = Features::from_json(&m.to_string()).unwrap();
    assert_eq!(
        (features.features[0].width, features.features[0].pad),
        (None, Some(0.0))
    );
    for (extractor, params) in [
        ("byte_histogram", json!({})),
        ("printable_strings", json!({})),
        (
            "hashed_ngrams",
            json!({"num_buckets": 64, "output": "sparse"}),
        ),
    ] {
        let mut m = manifest();
        m["features"][0]["spec"] = spec(extractor, params);
        m["features"][0]["pad"] = json!(0);
        assert!(refusal(&m).contains("rows with pad;"), "{extractor}");
    }
    let mut m = manifest();
    m["features"][0]["pad"] = json!("zero");
    assert!(refusal(&m).contains("\"pad\" must be a number"));
}

/// An edit of a valid manifest.
type Edit = Box<dyn Fn(&mut Value)>;

#[test]
fn bad_files_say_what_is_wrong() {
    let text = manifest().to_string();
    for cut in [0, 1, text.len() / 2, text.len() - 1] {
        let message = Features::from_json(&text[..cut]).unwrap_err().to_string();
        assert!(message.starts_with("it is not JSON"), "{cut}: {message}");
    }
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|m| m["format"] = json!("onnx")),
            "\"format\" must be \"rustfx-sensor\"",
        ),
        (
            Box::new(|m| m["format_version"] = json!(2)),
            "format_version 2",
        ),
        (
            Box::new(|m| m["format_version"] = json!(-1)),
            "non-negative integer",
        ),
        (Box::new(|m| m["extra"] = json!(1)), "no key \"extra\""),
        (
            Box::new(|m| m["features"] = json!([])),
            "list of 1 to 256 items",
        ),
        (
            Box::new(|m| m["outputs"] = json!({})),
            "list of 1 to 256 items",
        ),
        (
            Box::new(|m| m["features"][0]["onnx_input"] = json!("ids")),
            "feed the ONNX input 'ids'",
        ),
        (
            Box::new(|m| m["features"][0]["model_input"] = json!("paths")),
            "reads the model input 'paths'",
        ),
        (
            Box::new(|m| m["features"][0]["layer"] = json!("")),
            "\"layer\" must be a string",
        ),
        (
            Box::new(|m| m["features"][0]["spec"] = json!({"extractor": "nope"})),
            "nope",
        ),
        (
            Box::new(|m| m["features"][0]["spec"]["params"] = json!({"x": 1})),
            "no parameter 'x'",
        ),
        (
            Box::new(|m| m["outputs"][0]["key"] = json!(1)),
            "\"key\" must be a string",
        ),
        (
            Box::new(|m| {
                let o = m["outputs"][0].clone();
                m["outputs"] = json!([o.clone(), o]);
            }),
            "two outputs have the key 'output_0'",
        ),
    ];
    for (edit, want) in cases {
        let mut m = manifest();
        edit(&mut m);
        let message = refusal(&m);
        assert!(message.contains(want), "{want}: {message}");
    }
    let huge = " ".repeat(super::features::MAX_FEATURES_BYTES + 1);
    assert!(Features::from_json(&huge)
        .unwrap_err()
        .to_string()
        .contains("at most"));
    let deep = "[".repeat(10_000);
    assert!(Features::from_json(&deep).is_err());
}
