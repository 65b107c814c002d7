//! Tests of the n-gram pipeline against naive definitions.

use super::*;
use crate::extractor::RowExtractor;
use crate::hashing::fingerprint64;
use crate::output::SparseRow;
use crate::ErrorKind;
use std::ops::ControlFlow;

mod count_scratch;
mod explain;
use crate::oracles::ngrams as naive;
mod oracle;
mod tokens;

fn hasher(tokenizer: Tokenizer, widths: &[usize], lowercase: bool) -> NgramHasher {
    NgramHasher::new(NgramConfig {
        tokenizer,
        widths: widths.to_vec(),
        lowercase,
        hash: HashFamily::Fingerprint64,
        num_buckets: 1 << 40,
    })
    .unwrap()
}

fn grams(h: &NgramHasher, doc: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    h.for_each_gram(doc, |g| {
        out.push(String::from_utf8_lossy(g).into_owned());
        ControlFlow::Continue(())
    });
    out
}

#[test]
fn whitespace_ngrams_grouped_by_width() {
    let h = hasher(Tokenizer::Whitespace, &[1, 2], false);
    assert_eq!(
        grams(&h, b" a\t\x0bbb \n c\r\x0c"),
        ["a", "bb", "c", "a bb", "bb c"]
    );
    // U+00A0 is not ASCII whitespace.
    assert_eq!(grams(&h, "x\u{a0}y".as_bytes()), ["x\u{a0}y"]);
    assert!(grams(&h, b"").is_empty());
    assert!(grams(&h, b" \t ").is_empty());
    let h = hasher(Tokenizer::Whitespace, &[3, 1], true);
    assert_eq!(grams(&h, b"A B"), ["a", "b"]);
}

#[test]
fn word_byte_char_tokenizers() {
    let h = hasher(Tokenizer::Word, &[1], false);
    assert_eq!(grams(&h, b"foo(bar_1, 2)\xffx"), ["foo", "bar_1", "2", "x"]);
    let h = hasher(Tokenizer::Byte, &[2], true);
    assert_eq!(grams(&h, b"AbC"), ["ab", "bc"]);
    let h = hasher(Tokenizer::Char, &[2], false);
    assert_eq!(grams(&h, "é\u{ff}a".as_bytes()), ["é\u{ff}", "\u{ff}a"]);
    // Invalid UTF-8 becomes U+FFFD per maximal invalid subsequence.
    assert_eq!(grams(&h, b"a\xe2\x82b"), ["a\u{fffd}", "\u{fffd}b"]);
}

#[test]
fn sklearn_tokenizers() {
    // Expected values printed by scikit-learn 1.9's build_analyzer().
    let h = hasher(Tokenizer::SklearnWord, &[1, 2], true);
    assert_eq!(grams(&h, "A bc, DÉF g".as_bytes()), ["bc", "déf", "bc déf"]);
    let h = hasher(Tokenizer::SklearnChar, &[2], false);
    assert_eq!(grams(&h, b"a  b\tc"), ["a ", " b", "b\t", "\tc"]);
    // Widths out of order give each width's n-grams, as ngram_range=(n, n).
    let h = hasher(Tokenizer::SklearnCharWb, &[3, 1], false);
    assert_eq!(grams(&h, b"a"), [" a ", " ", "a", " "]);
    let h = hasher(Tokenizer::SklearnCharWb, &[2, 3], false);
    assert_eq!(
        grams(&h, b"ab c"),
        [" a", "ab", "b ", " ab", "ab ", " c", "c ", " c "]
    );
}

#[test]
fn sequence_pads_and_truncates() {
    let h = hasher(Tokenizer::Whitespace, &[1], false);
    let mut all = Vec::new();
    h.ids(b"a b c", &mut all);
    let seq = NgramSequence::new(h.clone(), 5, -1).unwrap();
    let mut out = [0i64; 5];
    assert_eq!(seq.fill(b"a b c", &mut out), 3);
    assert_eq!(&out[..3], &all[..]);
    assert_eq!(&out[3..], &[-1, -1]);
    let mut short = [0i64; 2];
    assert_eq!(seq.fill(b"a b c", &mut short), 2);
    assert_eq!(&short[..], &all[..2]);
}

#[test]
fn counts_sum_sign_and_normalise() {
    let h = NgramHasher::new(NgramConfig {
        tokenizer: Tokenizer::Whitespace,
        widths: vec![1],
        lowercase: false,
        hash: HashFamily::Murmur3,
        num_buckets: 1 << 20,
    })
    .unwrap();
    let mut row = SparseRow::default();
    let plain = CountOptions {
        binary: false,
        alternate_sign: false,
        norm: Norm::None,
    };
    NgramCounter::new(h.clone(), plain)
        .unwrap()
        .counts(b"x y x", &mut row);
    let (x, y) = (h.bucket(b"x").index, h.bucket(b"y").index);
    let expect: Vec<(u64, f32)> = if x < y {
        vec![(x, 2.0), (y, 1.0)]
    } else {
        vec![(y, 1.0), (x, 2.0)]
    };
    let got: Vec<(u64, f32)> = row
        .indices
        .iter()
        .copied()
        .zip(row.values.iter().copied())
        .collect();
    assert_eq!(got, expect);
    let l2 = CountOptions {
        norm: Norm::L2,
        ..plain
    };
    NgramCounter::new(h.clone(), l2)
        .unwrap()
        .counts(b"x y x", &mut row);
    let norm: f32 = row.values.iter().map(|v| v * v).sum();
    assert!((norm - 1.0).abs() < 1e-6);
}

#[test]
fn bad_configs_say_what_is_allowed() {
    let base = NgramConfig {
        tokenizer: Tokenizer::Whitespace,
        widths: vec![1],
        lowercase: false,
        hash: HashFamily::Fingerprint64,
        num_buckets: 10,
    };
    let e = NgramHasher::new(NgramConfig {
        num_buckets: 0,
        ..base.clone()
    })
    .unwrap_err();
    assert!(e.message().contains("num_buckets must be in [1"), "{e}");
    let e = NgramHasher::new(NgramConfig {
        widths: vec![],
        ..base.clone()
    })
    .unwrap_err();
    assert!(e.message().contains("ngram_widths"), "{e}");
    let e = NgramHasher::new(NgramConfig {
        widths: vec![0],
        ..base.clone()
    })
    .unwrap_err();
    assert!(e.message().contains("[1, 64]"), "{e}");
    let e = NgramHasher::new(NgramConfig {
        hash: HashFamily::Murmur3,
        num_buckets: 1 << 40,
        ..base
    })
    .unwrap_err();
    assert!(e.message().contains("murmur3"), "{e}");
    assert!(Tokenizer::from_name("bogus")
        .unwrap_err()
        .message()
        .contains("sklearn_char_wb"));
}

#[test]
fn rules_live_in_the_constructors() {
    let h = |hash, num_buckets| {
        NgramHasher::new(NgramConfig {
            tokenizer: Tokenizer::Whitespace,
            widths: vec![1],
            lowercase: false,
            hash,
            num_buckets,
        })
        .unwrap()
    };
    let fp = h(HashFamily::Fingerprint64, 10);
    for pad in [0, 9] {
        let e = NgramSequence::new(fp.clone(), 4, pad).unwrap_err();
        assert!(
            e.message().contains("pad_value must not be a bucket id"),
            "{e}"
        );
    }
    for pad in [-1, 10, i64::MIN, i64::MAX] {
        assert!(NgramSequence::new(fp.clone(), 4, pad).is_ok());
    }
    for max_tokens in [0, MAX_SEQUENCE_TOKENS + 1] {
        let e = NgramSequence::new(fp.clone(), max_tokens, -1).unwrap_err();
        assert!(
            e.message().contains("max_tokens must be in [1, 16777216]"),
            "{e}"
        );
    }
    let signed = CountOptions {
        binary: false,
        alternate_sign: true,
        norm: Norm::None,
    };
    let e = NgramCounter::new(fp.clone(), signed).unwrap_err();
    assert!(e.message().contains("needs hash='murmur3'"), "{e}");
    let wide = h(HashFamily::Murmur3, MAX_DENSE_BUCKETS as u64 + 1);
    let e = NgramCounts::new(NgramCounter::new(wide, signed).unwrap()).unwrap_err();
    assert!(e.message().contains("use output='sparse'"), "{e}");

    // Dense rows are the sparse rows scattered.
    let counter = NgramCounter::new(h(HashFamily::Murmur3, 50), signed).unwrap();
    let dense = NgramCounts::new(counter.clone()).unwrap();
    let doc = b"a b a c d e f a b";
    let mut sparse = SparseRow::default();
    counter.counts(doc, &mut sparse);
    let mut want = vec![0f32; 50];
    for (&i, &v) in sparse.indices.iter().zip(&sparse.values) {
        want[i as usize] = v;
    }
    assert_eq!(dense.row(doc), want);
    let e = dense.write_row(doc, &mut [0f32; 49]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Internal);
}

thread_local! {
    static ONE_AT_A_TIME: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this test thread asked for Fingerprint64 n-grams to be hashed
/// one at a time (what a CPU without AVX-512 does) instead of in batches.
pub(super) fn one_at_a_time() -> bool {
    ONE_AT_A_TIME.with(|flag| flag.get())
}

/// `'İ'` lowers to `"i\u{307}"` and `'Σ'` to `'ς'` or `'σ'` by context,
/// through the streaming paths exactly as through `str.lower()`.
#[test]
fn python_lowercasing_in_context() {
    let h = |tokenizer| hasher(tokenizer, &[1, 2], true);
    assert_eq!(
        grams(&h(Tokenizer::SklearnWord), "ΑΣ xΣ'y ΣΑ".as_bytes()),
        ["ας", "xσ", "σα", "ας xσ", "xσ σα"]
    );
    // The combining dot of "i\u{307}" is not `\w`: it splits words.
    assert_eq!(
        grams(&h(Tokenizer::SklearnWord), "AİBc İx".as_bytes()),
        ["ai", "bc", "ai bc"]
    );
    assert_eq!(
        grams(
            &hasher(Tokenizer::SklearnChar, &[2], true),
            "İΣ \t".as_bytes()
        ),
        ["i\u{307}", "\u{307}ς", "ς "]
    );
}

/// Kernels balance threads by each document's cost: a sequence stops after
/// `max_tokens` ids, so its cost is capped; counts read everything.
#[test]
fn work_hints_cap_only_what_stops_early() {
    use crate::byte_sequence::{ByteSequence, Sampling, TypedSequence};
    use crate::extractor::RowExtractor;
    let h = hasher(Tokenizer::Whitespace, &[1, 2], false);
    let seq = NgramSequence::new(h.clone(), 1024, -1).unwrap();
    assert_eq!(seq.work_bytes_hint(), Some(1024 * 16));
    let options = CountOptions {
        binary: false,
        alternate_sign: false,
        norm: Norm::None,
    };
    let narrow = NgramHasher::new(NgramConfig {
        num_buckets: 1 << 10,
        ..h.config().clone()
    })
    .unwrap();
    let counts = NgramCounts::new(NgramCounter::new(narrow, options).unwrap()).unwrap();
    assert_eq!(counts.work_bytes_hint(), None);
    let bytes = ByteSequence::new(4096, 1, 0, Sampling::HeadTail).unwrap();
    let bytes = TypedSequence::<i32>::new(bytes).unwrap();
    assert_eq!(RowExtractor::work_bytes_hint(&bytes), Some(4096));
}
