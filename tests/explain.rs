//! Explanations are exact: for every registry example, the contributions of
//! a document, summed per output index and finished in the extractor's own
//! arithmetic ([`Explanation::reassemble`]), give the extractor's output
//! bit for bit. The oracle is extraction itself, which computes the same
//! values by its own (optimised, batched) path. Checked on fixed documents,
//! random ones, and every file of the PE corpus (`tests/golden/pe`).

use proptest::prelude::*;
use rustfx::explain::{ExplainOptions, Explanation};
use rustfx::extractor::Extractor;
use rustfx::registry::EXTRACTORS;
use rustfx::spec::FeatureSpec;
use std::path::{Path, PathBuf};

/// Extractors that do not explain, each with the reason its error gives
/// (none today: every extractor explains).
const DOES_NOT_EXPLAIN: &[(&str, &str)] = &[];

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// Every registry example, built, with its spec text.
fn examples() -> Vec<(String, Extractor)> {
    let mut out = Vec::new();
    for entry in EXTRACTORS {
        for params in entry.examples {
            let text = format!(r#"{{"extractor": "{}", "params": {params}}}"#, entry.name);
            let extractor = FeatureSpec::from_json(&text).unwrap().build().unwrap();
            out.push((text, extractor));
        }
    }
    out
}

/// Whether `extractor` explains; the ones that do not must say why.
fn explanation(
    spec: &str,
    extractor: &Extractor,
    doc: &[u8],
    options: &ExplainOptions,
) -> Option<Explanation> {
    match extractor.explain_with(doc, options) {
        Ok(explanation) => Some(explanation),
        Err(error) => {
            let listed = DOES_NOT_EXPLAIN.iter().any(|(name, why)| {
                spec.contains(&format!("\"{name}\"")) && error.message().contains(why)
            });
            assert!(listed, "{spec}: {error}");
            None
        }
    }
}

/// The property: reassembled contributions equal extraction, and every
/// span lies inside the document.
fn check_exact(spec: &str, extractor: &Extractor, doc: &[u8]) {
    // Whole texts (printable strings reassemble from them), every byte.
    let whole = ExplainOptions::new(
        rustfx::explain::MAX_CONTRIBUTIONS,
        rustfx::explain::MAX_TEXT_BYTES,
        true,
    )
    .unwrap();
    for options in [ExplainOptions::default(), whole] {
        let Some(explanation) = explanation(spec, extractor, doc, &options) else {
            return;
        };
        for c in &explanation.contributions {
            assert!(
                c.offset
                    .checked_add(c.length)
                    .is_some_and(|end| end <= doc.len() as u64),
                "{spec}: span {}+{} outside a document of {} bytes",
                c.offset,
                c.length,
                doc.len()
            );
            assert!(
                c.text.len() <= options.max_text_bytes,
                "{spec}: text over the cap"
            );
        }
        if explanation.truncated {
            assert_eq!(
                explanation.contributions.len(),
                options.max_contributions,
                "{spec}"
            );
            assert!(
                explanation.reassemble().is_err(),
                "{spec}: a truncated explanation reassembled"
            );
            continue;
        }
        let expected = extractor.extract_batch(&[doc]).unwrap();
        let rebuilt = match explanation.reassemble() {
            Ok(rebuilt) => rebuilt,
            // Texts cut at the default cap do not rebuild strings; the
            // whole-text options below check those.
            Err(error) if options != whole && error.message().contains("raise max_text_bytes") => {
                continue
            }
            Err(error) => panic!("{spec}: {error}"),
        };
        assert!(
            rebuilt.same_bits(&expected),
            "{spec}: contributions of a document of {} bytes do not reassemble its output: \
             {rebuilt:?} against {expected:?}",
            doc.len()
        );
    }
}

fn fixed_documents() -> Vec<Vec<u8>> {
    vec![
        b"".to_vec(),
        b"a".to_vec(),
        b"MZ".to_vec(),
        b"The quick brown Fox jumps over the lazy dog. C:\\Windows\\system32 http://x.y/z \
          HKEY_LOCAL_MACHINE\\Software MZ kernel32.dll CreateFileA"
            .repeat(8),
        "Größe café naïve déjà-vu ﬁ ǅ İstanbul ΣΑΣ 東京 ١٢٣ x²\u{2003}y\u{a0}z"
            .repeat(5)
            .into_bytes(),
        b"def f(x):\n\treturn x + 1  # comment\r\n\x00\x01\xff\xfe invalid \xc3\x28 utf8".repeat(9),
        b"W\0i\0d\0e\0 \0s\0t\0r\0i\0n\0g\0\0\0ascii string here\0".repeat(4),
        (0..=255u8).cycle().take(5000).collect(),
    ]
}

/// Every file of the PE corpus (PE files, mutants, malformed and non-PE).
fn pe_corpus() -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.push((path, bytes));
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("tests/golden/pe"), &mut out);
    assert!(out.len() > 100, "the PE corpus is missing");
    out
}

#[test]
fn contributions_reassemble_the_output_on_fixed_documents() {
    for (spec, extractor) in examples() {
        for doc in fixed_documents() {
            check_exact(&spec, &extractor, &doc);
        }
    }
}

#[test]
fn contributions_reassemble_the_output_on_the_pe_corpus() {
    let corpus = pe_corpus();
    for (spec, extractor) in examples() {
        for (path, doc) in &corpus {
            let spec = format!("{spec} on {}", path.display());
            check_exact(&spec, &extractor, doc);
        }
    }
}

#[test]
fn every_extractor_explains_or_says_why() {
    for (spec, extractor) in examples() {
        if let Err(error) = extractor.explain(b"hello world") {
            assert!(
                error.message().contains("does not explain: "),
                "{spec}: {error}"
            );
            assert!(
                DOES_NOT_EXPLAIN
                    .iter()
                    .any(|(name, _)| spec.contains(&format!("\"{name}\""))),
                "{spec} does not explain and is not listed: {error}"
            );
        }
    }
}

#[test]
fn the_cap_bounds_every_explanation() {
    let doc = fixed_documents().concat();
    for (spec, extractor) in examples() {
        let options = ExplainOptions::new(3, 2, true).unwrap();
        let Some(explanation) = explanation(&spec, &extractor, &doc, &options) else {
            continue;
        };
        assert!(explanation.contributions.len() <= 3, "{spec}");
        assert!(
            explanation.contributions.iter().all(|c| c.text.len() <= 2),
            "{spec}"
        );
    }
}

#[test]
fn options_out_of_range_are_refused() {
    for (max, text) in [
        (0, 10),
        (rustfx::explain::MAX_CONTRIBUTIONS + 1, 10),
        (10, rustfx::explain::MAX_TEXT_BYTES + 1),
    ] {
        let error = ExplainOptions::new(max, text, false).unwrap_err();
        assert!(error.message().contains("must be in ["), "{error}");
    }
}

/// Bytes that look like text, markup and binaries in turn.
fn arbitrary_document() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..3000),
        proptest::collection::vec(
            prop_oneof![
                Just(b' '),
                Just(b'a'),
                Just(b'B'),
                Just(b'\\'),
                0x20u8..0x7f
            ],
            0..600
        ),
        "[ -~\u{e9}\u{4e2d}\u{1F600}\n\t]{0,300}".prop_map(String::into_bytes),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn contributions_reassemble_the_output_on_random_documents(doc in arbitrary_document()) {
        for (spec, extractor) in examples() {
            check_exact(&spec, &extractor, &doc);
        }
    }
}
