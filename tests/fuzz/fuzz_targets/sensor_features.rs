//! Fuzz target `sensor_features`: the features.json of a sensor model
//! directory (`rustfx_sensor::features`), a file that travels with models
//! and may be corrupted, truncated or hostile.
//!
//! Input: the first byte picks a document length, the rest is the file's
//! text (lossy UTF-8, so any bytes reach the parser).
//!
//! Checks:
//! - `Features::from_json` never panics; a refusal is `InvalidArgument`;
//! - an accepted file has at least one feature and one output, unique ONNX
//!   inputs and output keys, and only dense features;
//! - extracting a small batch gives each feature exactly `width` values per
//!   document (features wider than 2^16 values are only parsed).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rustfx::output::{Batch, Layout};
use rustfx_sensor::features::Features;
use rustfx::ErrorKind;

fuzz_target!(|data: &[u8]| {
    let Some((&len, text)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(text);
    let features = match Features::from_json(&text) {
        Ok(features) => features,
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
            return;
        }
    };
    assert!(!features.features.is_empty() && !features.outputs.is_empty());
    for feature in &features.features {
        // Dense rows, or ragged numeric rows the batch pads (`pad`).
        let output = feature.spec.output();
        match feature.pad {
            None => assert_eq!(output.layout, Layout::Dense),
            Some(_) => assert_eq!(output.layout, Layout::Ragged),
        }
        assert_eq!(output.width, feature.width);
    }
    if features.features.iter().any(|f| f.width.unwrap_or(0) > 1 << 16) {
        return;
    }
    let doc: Vec<u8> = text.bytes().cycle().take(usize::from(len) * 16).collect();
    let docs: [&[u8]; 2] = [&doc, b""];
    let batches = features.extract(&docs).expect("checked specs extract");
    for (feature, batch) in features.features.iter().zip(&batches) {
        assert_eq!(batch.rows(), 2, "{}", feature.layer);
        // Dense rows of the spec's width, or padded to the longer document.
        let Batch::Dense { width, .. } = batch else {
            panic!("{}: the sensor feeds dense rows", feature.layer);
        };
        assert_eq!(feature.width.unwrap_or(*width), *width, "{}", feature.layer);
        let values: usize = rustfx_cli::text_output::text_rows(batch).iter().map(Vec::len).sum();
        assert_eq!(values, 2 * width, "{}", feature.layer);
    }
});
