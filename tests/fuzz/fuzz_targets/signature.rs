//! Fuzz target `signature`: `rustfx-predict`'s reader of a SavedModel's
//! serialized `MetaGraphDef` (`crates/rustfx-predict/src/tf_c_api/signature.rs`), which parses
//! protobuf from a model directory the user points it at. Any bytes give
//! `Ok` or `Err`, never a panic or an unbounded allocation; what it returns
//! is bounded by the input, and reading is deterministic.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../../crates/rustfx-predict/src/tf_c_api/signature.rs"]
#[allow(dead_code)]
mod signature;

fuzz_target!(|data: &[u8]| {
    let Ok(found) = signature::signatures(data) else {
        return;
    };
    // Every name is read from the input; invalid UTF-8 becomes U+FFFD, at
    // most 3 bytes per input byte.
    let mut text = 0usize;
    for (name, sig) in &found {
        text += name.len() + sig.method_name.len();
        for (key, info) in sig.inputs.iter().chain(&sig.outputs) {
            text += key.len() + info.name.as_ref().map_or(0, String::len);
            if let Some(dims) = &info.shape {
                assert!(dims.len() <= data.len(), "more dims than input bytes");
            }
        }
    }
    assert!(
        text <= 3 * data.len(),
        "{text} bytes of names from {} bytes",
        data.len()
    );
    assert_eq!(signature::signatures(data), Ok(found));
});
