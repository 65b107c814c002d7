//! Explanations: hand-checked spans and texts, and on arbitrary documents
//! and options, the explained n-grams' texts equal the naive definitions
//! and every output reassembles from its contributions bit for bit.

use super::oracle::{doc_strategy, options_strategy};
use super::*;
use crate::explain::{Contribution, ExplainOptions};
use crate::extractor::Extractor;
use proptest::strategy::Strategy as _;

fn config(tokenizer: Tokenizer, widths: &[usize], lowercase: bool) -> NgramConfig {
    NgramConfig {
        tokenizer,
        widths: widths.to_vec(),
        lowercase,
        hash: HashFamily::Fingerprint64,
        num_buckets: 1000,
    }
}

/// [`config`], lowercased.
fn config_of(tokenizer: Tokenizer, widths: &[usize]) -> NgramConfig {
    config(tokenizer, widths, true)
}

/// `(offset, length, text)` of each contribution of the ragged ids.
fn spans(config: NgramConfig, doc: &[u8]) -> Vec<(u64, u64, String)> {
    let hasher = NgramHasher::new(config).unwrap();
    let explanation = Extractor::ragged(hasher).explain(doc).unwrap();
    explanation
        .contributions
        .iter()
        .map(|c| {
            (
                c.offset,
                c.length,
                String::from_utf8(c.text.clone()).unwrap(),
            )
        })
        .collect()
}

fn span(offset: u64, length: u64, text: &str) -> (u64, u64, String) {
    (offset, length, text.to_string())
}

#[test]
fn word_ngrams_span_their_tokens_in_the_original_bytes() {
    let config = config(Tokenizer::Whitespace, &[2], true);
    let hasher = NgramHasher::new(config.clone()).unwrap();
    let doc = b"Hello hello world";
    let explanation = Extractor::ragged(hasher.clone()).explain(doc).unwrap();
    let bucket = |gram: &[u8]| fingerprint64(gram) % 1000;
    assert_eq!(
        explanation.contributions,
        [
            Contribution {
                index: bucket(b"hello hello"),
                offset: 0,
                length: 11,
                value: 1.0,
                text: b"hello hello".to_vec(),
            },
            Contribution {
                index: bucket(b"hello world"),
                offset: 6,
                length: 11,
                value: 1.0,
                text: b"hello world".to_vec(),
            },
        ]
    );
    // Lowered by Python's rules: 'İ' becomes "i\u{307}" (its 'i' ends the
    // token "xi", which spans all of 'İ'), the final sigma 'ς'.
    let doc = "ΑΣ  xİ".as_bytes();
    assert_eq!(
        spans(config_of(Tokenizer::SklearnWord, &[1, 2]), doc),
        [span(0, 4, "ας"), span(6, 3, "xi"), span(0, 9, "ας xi")]
    );
}

#[test]
fn character_ngrams_span_what_they_replace() {
    // U+FFFD spans the invalid bytes it replaces.
    assert_eq!(
        spans(config(Tokenizer::Char, &[1, 2], false), b"a\xe2\x82B"),
        [
            span(0, 1, "a"),
            span(1, 2, "\u{fffd}"),
            span(3, 1, "B"),
            span(0, 3, "a\u{fffd}"),
            span(1, 3, "\u{fffd}B"),
        ]
    );
    // A run of spaces is one ' ' spanning the run; a lone one stays.
    assert_eq!(
        spans(config_of(Tokenizer::SklearnChar, &[1]), b"A \t\nb\tc"),
        [
            span(0, 1, "a"),
            span(1, 3, " "),
            span(4, 1, "b"),
            span(5, 1, "\t"),
            span(6, 1, "c"),
        ]
    );
    // Padding spaces have no bytes: n-grams span their real characters,
    // word by word; " c " is one n-gram for widths of 3 and more.
    assert_eq!(
        spans(config(Tokenizer::SklearnCharWb, &[2, 3], false), b"ab  c"),
        [
            span(0, 1, " a"),
            span(0, 2, "ab"),
            span(1, 1, "b "),
            span(0, 2, " ab"),
            span(0, 2, "ab "),
            span(4, 1, " c"),
            span(4, 1, "c "),
            span(4, 1, " c "),
        ]
    );
    assert_eq!(
        spans(config(Tokenizer::SklearnCharWb, &[1], false), b"a"),
        [span(0, 0, " "), span(0, 1, "a"), span(1, 0, " ")]
    );
}

#[test]
fn sequences_counts_and_the_cap() {
    let hasher = NgramHasher::new(NgramConfig {
        hash: HashFamily::Murmur3,
        ..config(Tokenizer::Byte, &[1], false)
    })
    .unwrap();
    let sequence = NgramSequence::new(hasher.clone(), 2, -1).unwrap();
    let explained = Extractor::Dense(Box::new(sequence))
        .explain(b"abc")
        .unwrap();
    let got: Vec<(u64, u64, f64)> = explained
        .contributions
        .iter()
        .map(|c| (c.index, c.offset, c.value))
        .collect();
    let id = |b: &[u8]| hasher.bucket(b).index as f64;
    assert_eq!(got, [(0, 0, id(b"a")), (1, 1, id(b"b"))]);
    assert!(!explained.truncated);

    let options = CountOptions {
        binary: false,
        alternate_sign: true,
        norm: Norm::None,
    };
    let counter = NgramCounter::new(hasher.clone(), options).unwrap();
    let explained = Extractor::Sparse(Box::new(counter))
        .explain(b"abc")
        .unwrap();
    let signs: Vec<f64> = explained.contributions.iter().map(|c| c.value).collect();
    let want: Vec<f64> = [b"a", b"b", b"c"]
        .iter()
        .map(|b| f64::from(hasher.bucket(*b).sign))
        .collect();
    assert_eq!(signs, want);

    let capped = ExplainOptions::new(2, 1, false).unwrap();
    let explained = Extractor::ragged(hasher)
        .explain_with(b"abc", &capped)
        .unwrap();
    assert!(explained.truncated && explained.contributions.len() == 2);
    assert!(explained.reassemble().is_err());

    // Ids beyond 2^53 do not fit a float64 value: no sequence explanation.
    let huge = NgramHasher::new(NgramConfig {
        num_buckets: 1 << 60,
        ..config(Tokenizer::Byte, &[1], false)
    })
    .unwrap();
    let sequence = NgramSequence::new(huge, 4, -1).unwrap();
    let error = Extractor::Dense(Box::new(sequence))
        .explain(b"a")
        .unwrap_err();
    assert!(error.message().contains("2**53"), "{error}");
}

/// The explained n-grams are the naive ones, with spans inside `doc`, and
/// every output of `config` reassembles from its contributions.
fn check_explained(
    config: &NgramConfig,
    options: CountOptions,
    doc: &[u8],
    max_tokens: usize,
) -> std::result::Result<(), String> {
    let fail = |what: &str| format!("{what} differs for {config:?} {options:?} doc {doc:?}");
    let hasher = NgramHasher::new(config.clone()).unwrap();
    let mut extractors = vec![
        Extractor::ragged(hasher.clone()),
        Extractor::Dense(Box::new(
            NgramSequence::new(hasher.clone(), max_tokens, -1).unwrap(),
        )),
        Extractor::Sparse(Box::new(
            NgramCounter::new(hasher.clone(), options).unwrap(),
        )),
    ];
    if config.num_buckets <= MAX_DENSE_BUCKETS as u64 {
        let counter = NgramCounter::new(hasher, options).unwrap();
        extractors.push(Extractor::Dense(Box::new(
            NgramCounts::new(counter).unwrap(),
        )));
    }
    let whole = ExplainOptions::new(1 << 20, 1 << 16, false).unwrap();
    for (k, extractor) in extractors.iter().enumerate() {
        let explanation = extractor.explain_with(doc, &whole).unwrap();
        if k == 0 {
            let texts: Vec<Vec<u8>> = explanation
                .contributions
                .iter()
                .map(|c| c.text.clone())
                .collect();
            if texts != naive::grams(config, doc) {
                return Err(fail("explained n-grams"));
            }
        }
        if explanation
            .contributions
            .iter()
            .any(|c| c.offset + c.length > doc.len() as u64)
        {
            return Err(fail("a span outside the document"));
        }
        let rebuilt = explanation.reassemble().map_err(|e| e.to_string())?;
        let want = extractor.extract_batch(&[doc]).unwrap();
        if !rebuilt.same_bits(&want) {
            return Err(fail(&format!("output {k} reassembled")));
        }
    }
    Ok(())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]

    #[test]
    fn explanations_reassemble_every_output(
        tokenizer in proptest::sample::select(Tokenizer::VALUES.to_vec()),
        widths in proptest::collection::vec(1usize..6, 1..4),
        lowercase in proptest::prelude::any::<bool>(),
        (hash, options) in proptest::sample::select(vec![
            HashFamily::Fingerprint64, HashFamily::Murmur3,
        ]).prop_flat_map(|hash| (proptest::strategy::Just(hash), options_strategy(hash))),
        num_buckets in proptest::prop_oneof![1u64..60, 1u64..1 << 31],
        doc in doc_strategy(),
        max_tokens in 1usize..80,
    ) {
        let config = NgramConfig { tokenizer, widths, lowercase, hash, num_buckets };
        let result = check_explained(&config, options, &doc, max_tokens);
        proptest::prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}
