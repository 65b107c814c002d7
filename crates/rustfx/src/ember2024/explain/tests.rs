//! The EMBER2024 explanations reassemble extraction bit for bit, on fixed
//! documents, the PE corpus and random bytes; `ember_features` here with
//! the groups that need no PE explanation (tests/explain.rs checks every
//! registry example).

use super::super::general::GeneralFileInfo;
use super::super::strings::{Ember2024Strings, PATTERNS};
use super::super::{EmberFeatures, EmberGroup};
use crate::explain::{Explain, ExplainOptions, Explanation, MAX_CONTRIBUTIONS, MAX_TEXT_BYTES};
use crate::extractor::RowExtractor;
use crate::output::Batch;
use std::path::Path;

/// An extractor under test: its row and explanation of a document.
type Run = Box<dyn Fn(&[u8], &ExplainOptions) -> (Vec<f32>, Explanation)>;

/// The extractors under test, named.
fn extractors() -> Vec<(String, Run)> {
    fn case<E: RowExtractor<Value = f32> + Explain + 'static>(name: &str, e: E) -> (String, Run) {
        let run = move |doc: &[u8], options: &ExplainOptions| {
            (e.row(doc), e.explain(doc, options).unwrap())
        };
        (name.to_string(), Box::new(run))
    }
    use EmberGroup::*;
    vec![
        case("general_file_info", GeneralFileInfo),
        case("ember2024_strings", Ember2024Strings::new().unwrap()),
        case(
            "ember_features without PE groups",
            EmberFeatures::new(3, &[General, Histogram, ByteEntropy, Strings]).unwrap(),
        ),
        case(
            "ember_features in another order",
            EmberFeatures::new(3, &[Strings, ByteEntropy, General]).unwrap(),
        ),
    ]
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

fn check_exact(doc: &[u8], what: &str) {
    let whole = ExplainOptions::new(MAX_CONTRIBUTIONS, MAX_TEXT_BYTES, true).unwrap();
    for (name, run) in extractors() {
        for options in [ExplainOptions::default(), whole] {
            let (row, explanation) = run(doc, &options);
            for c in &explanation.contributions {
                assert!(
                    c.offset + c.length <= doc.len() as u64,
                    "{name} on {what}: span {}+{} outside {} bytes",
                    c.offset,
                    c.length,
                    doc.len()
                );
            }
            if explanation.truncated {
                continue;
            }
            let Ok(rebuilt) = explanation.reassemble().and_then(Batch::into_dense::<f32>) else {
                panic!("{name} on {what}: no float32 row");
            };
            assert_eq!(
                bits(&rebuilt.values),
                bits(&row),
                "{name} on {what}: does not reassemble"
            );
        }
    }
}

fn fixed_documents() -> Vec<Vec<u8>> {
    vec![
        b"".to_vec(),
        b"a".to_vec(),
        b"abcde".to_vec(),
        b"\x00see http://a.b/c?d=1 now\x00HKCU\\x HKCU\x00short\x01tiny".to_vec(),
        b"!This program cannot be run in DOS mode. C:/Windows base64 11:22:33:44:55:66".repeat(40),
        (0..=255u8).cycle().take(70_000).collect(),
    ]
}

#[test]
fn reassemble_on_fixed_documents() {
    for (k, doc) in fixed_documents().iter().enumerate() {
        check_exact(doc, &format!("document {k}"));
    }
}

#[test]
fn reassemble_on_the_pe_corpus() {
    fn walk(dir: &Path, files: &mut usize) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, files);
            } else {
                check_exact(&std::fs::read(&path).unwrap(), &path.display().to_string());
                *files += 1;
            }
        }
    }
    let mut files = 0;
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/pe"),
        &mut files,
    );
    assert!(files > 100, "the PE corpus is missing");
}

#[test]
fn contributions_say_what_made_each_value() {
    let doc = b"\x00see http://a.b/c?d=1 now\x00HKCU\\x HKCU\x00";
    let e = Ember2024Strings::new().unwrap();
    let explanation = e.explain(doc, &ExplainOptions::default()).unwrap();
    let at = |name: &str| {
        let k = PATTERNS.iter().position(|p| p.0 == name).unwrap();
        let found: Vec<_> = explanation
            .contributions
            .iter()
            .filter(|c| c.index == 100 + k as u64)
            .map(|c| (c.offset, c.length, c.text.clone()))
            .collect();
        found
    };
    // thrember's url pattern has no `/` after the host: its match ends there.
    assert_eq!(at("url"), [(5, 10, b"http://a.b".to_vec())]);
    // Counted once per string: the first match.
    assert_eq!(at("registry_key"), [(26, 4, b"HKCU".to_vec())]);
    let strings: Vec<_> = explanation
        .contributions
        .iter()
        .filter(|c| c.index == 0)
        .map(|c| (c.offset, c.text.clone()))
        .collect();
    assert_eq!(
        strings,
        [
            (1, b"see http://a.b/c?d=1 now".to_vec()),
            (26, b"HKCU\\x HKCU".to_vec())
        ]
    );

    let general = GeneralFileInfo
        .explain(b"MZMZ!", &ExplainOptions::default())
        .unwrap();
    let spans: Vec<_> = general
        .contributions
        .iter()
        .map(|c| (c.index, c.offset, c.length))
        .collect();
    // Size; entropy terms of M, Z, ! at their first offsets; 4 start bytes.
    let want = [
        (0, 0, 5),
        (1, 0, 1),
        (1, 1, 1),
        (1, 4, 1),
        (2, 0, 1),
        (3, 1, 1),
        (4, 2, 1),
        (5, 3, 1),
    ];
    assert_eq!(spans, want);

    // A PE file: is_pe is one contribution over the whole file.
    let pe = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/pe/built/dll64_exports.dll"),
    )
    .unwrap();
    let features = EmberFeatures::new(3, &[EmberGroup::Histogram, EmberGroup::General]).unwrap();
    let explanation = features.explain(&pe, &ExplainOptions::default()).unwrap();
    let is_pe: Vec<_> = explanation
        .contributions
        .iter()
        .filter(|c| c.index == 256 + 2)
        .map(|c| (c.offset, c.length, c.value))
        .collect();
    assert_eq!(is_pe, [(0, pe.len() as u64, 1.0)]);
}

#[test]
fn the_cap_stops_every_explanation() {
    let doc = fixed_documents().concat();
    let options = ExplainOptions::new(5, 3, false).unwrap();
    for (name, run) in extractors() {
        let (_, explanation) = run(&doc, &options);
        assert!(explanation.truncated, "{name}");
        assert_eq!(explanation.contributions.len(), 5, "{name}");
        assert!(explanation.contributions.iter().all(|c| c.text.len() <= 3));
        assert!(explanation.reassemble().is_err(), "{name}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]
    #[test]
    fn reassemble_on_random_documents(
        doc in proptest::prop_oneof![
            proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3000),
            proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just(b'\0'),
                    proptest::strategy::Just(b':'),
                    0x20u8..0x80
                ],
                0..3000
            ),
        ],
    ) {
        check_exact(&doc, "a random document");
    }
}
