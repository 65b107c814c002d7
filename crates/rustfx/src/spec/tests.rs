//! Specs: strict parsing with the core's messages, version refusal, and the
//! JSON round trip for every extractor.

use super::*;
use crate::registry::EXTRACTORS;
use crate::ErrorKind;
use proptest::prelude::*;

fn error(text: &str) -> String {
    let e = FeatureSpec::from_json(text).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    e.message().to_string()
}

#[test]
fn defaults_are_filled_in_and_the_output_stated() {
    let spec = FeatureSpec::from_json(r#"{"extractor": "byte_entropy_histogram"}"#).unwrap();
    assert_eq!(
        spec.to_json(),
        r#"{"extractor":"byte_entropy_histogram","output":{"dtype":"float32","kind":"dense","shape":[256]},"output_version":1,"params":{"empty":"zeros","step":1024,"window":2048}}"#
    );
}

#[test]
fn derived_values_are_written_out() {
    let spec = FeatureSpec::new(
        "byte_sequence",
        [("preset", ParamValue::Str("malconv2".into()))],
    )
    .unwrap();
    let p = spec.params();
    assert_eq!(p.optional_int("max_len").unwrap(), Some(4_000_000));
    assert_eq!(p.optional_int("shift").unwrap(), Some(1));
    assert_eq!(p.optional_int("pad_value").unwrap(), Some(0));
    // A value given is kept over the preset's.
    let spec =
        FeatureSpec::from_json(r#"{"extractor":"byte_sequence","params":{"max_len":7}}"#).unwrap();
    assert_eq!(spec.params().optional_int("max_len").unwrap(), Some(7));
    assert_eq!(spec.output().width, Some(7));
    let spec = FeatureSpec::from_json(
        r#"{"extractor":"hashed_ngrams","params":{"num_buckets":8,"norm":"none","output":"counts"}}"#,
    )
    .unwrap();
    assert_eq!(spec.params().optional_str("norm").unwrap(), None);
}

#[test]
fn bad_specs_are_refused_with_what_is_allowed() {
    assert!(error("[1]").contains("must be a JSON object"));
    assert!(error("{").contains("must be JSON"));
    assert!(error(r#"{"params": {}}"#).contains("needs \"extractor\""));
    let e = error(r#"{"extractor": "byte_histogram", "param": {}}"#);
    assert!(
        e.contains("no key \"param\"") && e.contains("params"),
        "{e}"
    );
    let e = error(r#"{"extractor": "bytes_histogram"}"#);
    assert!(e.contains("unknown extractor 'bytes_histogram'") && e.contains("byte_histogram"));
    let e = error(r#"{"extractor": "byte_histogram", "params": {"window": 3}}"#);
    assert_eq!(
        e,
        "byte_histogram has no parameter 'window'; its parameters are empty"
    );
    let e = error(r#"{"extractor": "string_features", "params": {"x": 3}}"#);
    assert_eq!(e, "string_features has no parameter 'x'; it has none");
    let e = error(r#"{"extractor": "byte_entropy_histogram", "params": {"window": "big"}}"#);
    assert_eq!(
        e,
        "byte_entropy_histogram: window must be an int, got \"big\""
    );
    let e = error(r#"{"extractor": "byte_entropy_histogram", "params": {"window": 2.5}}"#);
    assert!(e.contains("must be an int, got 2.5"), "{e}");
    // Values: the core constructor's own message.
    let e = error(r#"{"extractor": "byte_histogram", "params": {"empty": "none"}}"#);
    assert_eq!(e, "empty must be one of zeros, nan, got 'none'");
    let e = error(r#"{"extractor": "hashed_ngrams", "params": {}}"#);
    assert!(
        e.starts_with("hashed_ngrams needs parameter 'num_buckets' (int)"),
        "{e}"
    );
    let e = error(r#"{"extractor": "hashed_ngrams", "params": {"num_buckets": 0}}"#);
    assert!(e.contains("num_buckets"), "{e}");
    let e = error(
        r#"{"extractor": "hashed_ngrams", "params": {"num_buckets": 9, "output": "sequence"}}"#,
    );
    assert!(e.contains("needs max_tokens"), "{e}");
    let e = error(r#"{"extractor": "byte_histogram", "output": {"kind": "dense"}}"#);
    assert!(e.contains("says its output is"), "{e}");
    assert!(error(&" ".repeat(MAX_SPEC_BYTES + 1)).contains("at most"));
}

#[test]
fn another_output_version_is_refused_naming_both() {
    let e = error(r#"{"extractor": "byte_histogram", "output_version": 2}"#);
    assert!(
        e.starts_with("byte_histogram: the spec was made for output version 2"),
        "{e}"
    );
    assert!(
        e.contains("computes output version 1") && e.contains("Re-extract"),
        "{e}"
    );
    let e = error(r#"{"extractor": "byte_histogram", "output_version": "1"}"#);
    assert!(e.contains("non-negative integer"), "{e}");
    assert!(
        FeatureSpec::from_json(r#"{"extractor": "byte_histogram", "output_version": 1}"#).is_ok()
    );
}

#[test]
fn every_example_parses_builds_and_states_its_output() {
    for entry in EXTRACTORS {
        assert!(!entry.examples.is_empty(), "{}", entry.name);
        for example in entry.examples {
            let text = format!(r#"{{"extractor": "{}", "params": {example}}}"#, entry.name);
            let (spec, extractor) = load(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(spec.output(), extractor.output());
            assert_eq!(spec.output_version(), entry.output_version);
        }
    }
}

/// A value of `decl`'s type drawn from `pick` (names from the declared
/// set, numbers around the usual ones), or absent.
fn arbitrary_value(decl: &params::ParamDecl, pick: u64) -> Option<Value> {
    use params::ParamType as T;
    let names = decl.names;
    let name = |k: u64| -> Value {
        if names.is_empty() {
            Value::from(format!("s{k}"))
        } else {
            Value::from(names[(k as usize) % names.len()])
        }
    };
    let ints = [1i64, 2, 3, 7, 16, 64, 256, 1000, 2048, -1, 0, 1 << 20];
    let int = |k: u64| Value::from(ints[(k as usize) % ints.len()]);
    if pick.is_multiple_of(3) {
        return None;
    }
    let k = pick / 3;
    Some(match decl.ty {
        T::Int => int(k),
        T::OptionalInt if k.is_multiple_of(4) => Value::Null,
        T::OptionalInt => int(k),
        T::Bool => Value::Bool(k.is_multiple_of(2)),
        T::Str => name(k),
        T::OptionalStr if k.is_multiple_of(4) => Value::Null,
        T::OptionalStr => name(k),
        T::IntList => Value::from((0..k % 4).map(|i| int(k + i)).collect::<Vec<_>>()),
        T::StrList => Value::from((0..k % 3).map(|i| name(k + i)).collect::<Vec<_>>()),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// spec -> JSON -> spec is the identity, and the JSON text is stable,
    /// for every extractor and any parameters it accepts.
    #[test]
    fn json_round_trip_is_the_identity(which in 0..EXTRACTORS.len(), picks in prop::collection::vec(any::<u64>(), 16)) {
        let entry = &EXTRACTORS[which];
        let mut given = Map::new();
        for (decl, pick) in entry.params.iter().zip(&picks) {
            if let Some(value) = arbitrary_value(decl, *pick) {
                given.insert(decl.name.to_string(), value);
            }
        }
        if entry.name == "hashed_ngrams" && !given.contains_key("num_buckets") {
            given.insert("num_buckets".into(), Value::from(1000));
        }
        let value = json!({"extractor": entry.name, "params": given});
        if let Ok(spec) = FeatureSpec::from_value(&value) {
            let text = spec.to_json();
            let again = FeatureSpec::from_json(&text).unwrap();
            prop_assert_eq!(&again, &spec);
            prop_assert_eq!(again.to_json(), text);
            prop_assert_eq!(again.output(), spec.output());
        }
    }
}

#[test]
fn the_round_trip_property_reaches_every_extractor() {
    // The property above is vacuous for an extractor whose random
    // parameters never parse: each must accept its defaults (plus the
    // required ones of its first example).
    for entry in EXTRACTORS {
        let example: Value = serde_json::from_str(entry.examples[0]).unwrap();
        let spec = FeatureSpec::from_value(&json!({"extractor": entry.name, "params": example}));
        assert!(spec.is_ok(), "{}: {:?}", entry.name, spec.err());
    }
}
