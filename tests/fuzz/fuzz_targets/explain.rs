//! Fuzz target `explain`: explanations of hostile documents, for every
//! registry example (`crates/rustfx/src/explain/`).
//!
//! Input: the first byte picks the registry example and the caps, the rest
//! is the document (a malformed PE, garbage, text).
//!
//! Checks, as for extraction: no panic, bounded output (at most the cap of
//! contributions, each text at most its cap), every span inside the
//! document; and the explanation's contract: an untruncated explanation
//! reassembles the extractor's output bit for bit (printable strings whose
//! texts were cut refuse, saying to raise max_text_bytes) (`tests/explain.rs` is the
//! same property on fixed and random documents and the PE corpus).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rustfx::explain::ExplainOptions;
use rustfx::registry::EXTRACTORS;
use rustfx::spec::FeatureSpec;
use std::sync::OnceLock;

fn examples() -> &'static Vec<rustfx::extractor::Extractor> {
    static EXAMPLES: OnceLock<Vec<rustfx::extractor::Extractor>> = OnceLock::new();
    EXAMPLES.get_or_init(|| {
        EXTRACTORS
            .iter()
            .flat_map(|entry| {
                entry.examples.iter().map(move |params| {
                    let text = format!(r#"{{"extractor": "{}", "params": {params}}}"#, entry.name);
                    FeatureSpec::from_json(&text).unwrap().build().unwrap()
                })
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, doc)) = data.split_first() else {
        return;
    };
    let examples = examples();
    let extractor = &examples[usize::from(pick) % examples.len()];
    // The high bits: a tiny cap (truncation paths) or a large one.
    let (max, text) = if pick & 0x80 != 0 {
        (3, 2)
    } else {
        (1 << 20, 1 << 16)
    };
    let options = ExplainOptions::new(max, text, pick & 0x40 != 0).unwrap();
    let Ok(explanation) = extractor.explain_with(doc, &options) else {
        return;
    };
    assert!(explanation.contributions.len() <= max);
    for c in &explanation.contributions {
        assert!(c.text.len() <= text);
        assert!(c
            .offset
            .checked_add(c.length)
            .is_some_and(|end| end <= doc.len() as u64));
    }
    if !explanation.truncated {
        let rebuilt = match explanation.reassemble() {
            // Printable strings reassemble from their texts: a cut one is
            // refused, as documented.
            Err(e) if e.message().contains("raise max_text_bytes") => return,
            rebuilt => rebuilt.unwrap(),
        };
        let extracted = extractor.extract_batch(&[doc]).unwrap();
        assert!(rebuilt.same_bits(&extracted), "{rebuilt:?} against {extracted:?}");
    }
});
