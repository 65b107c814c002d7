//! Fuzz target `feature_spec`: FeatureSpec JSON from untrusted files (a
//! `.keras` config, a SavedModel attr, a spec file beside a dataset).
//!
//! Input: the first byte picks a document length, the rest is the spec text
//! (lossy UTF-8, so any bytes reach the parser).
//!
//! Checks:
//! - `spec::load` never panics; a refusal is `InvalidArgument`;
//! - an accepted spec round-trips: `from_json(to_json())` is the same spec,
//!   with the same JSON text and output;
//! - its extractor runs on a document without panicking and gives the
//!   stated output (a dense row of exactly `width` values).
//!
//! Extractors whose parameters make outputs or work huge (a 2^26-wide byte
//! sequence, 2^24 counts) are only built, not run.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rustfx::output::Layout;
use rustfx::spec::{self, FeatureSpec};
use rustfx::ErrorKind;

fuzz_target!(|data: &[u8]| {
    let Some((&len, text)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(text);
    let (spec, extractor) = match spec::load(&text) {
        Ok(loaded) => loaded,
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
            return;
        }
    };
    let json = spec.to_json();
    let again = FeatureSpec::from_json(&json).expect("a spec's own JSON parses");
    assert_eq!(again, spec);
    assert_eq!(again.to_json(), json);
    assert_eq!(again.output(), extractor.output());
    let output = extractor.output();
    if output.width.is_some_and(|w| w > 1 << 16) {
        return;
    }
    let doc: Vec<u8> = text.bytes().cycle().take(usize::from(len) * 16).collect();
    let batch = extractor
        .extract_batch(&[&doc])
        .expect("a built extractor extracts any input");
    assert_eq!(batch.rows(), 1);
    let values = rustfx_cli::text_output::text_rows(&batch).remove(0);
    if output.layout == Layout::Dense {
        assert_eq!(Some(values.len()), output.width);
    }
});
