//! Tests of the n-gram pipeline against naive definitions.

use super::*;
use crate::hashing::{fingerprint64, murmur3_x86_32};

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

/// The definitions, written the obvious way: the whole document decoded and
/// lowercased first, every token listed, then the n-grams of each width.
mod naive {
    use super::*;
    use crate::unicode_classes::{is_python_space, is_python_word, python_str_lower};
    use std::collections::BTreeMap;

    pub fn grams(config: &NgramConfig, doc: &[u8]) -> Vec<Vec<u8>> {
        let widths = &config.widths;
        let lowercase = config.lowercase;
        match config.tokenizer {
            Tokenizer::Whitespace | Tokenizer::Word | Tokenizer::Byte | Tokenizer::Char => {
                let doc = if lowercase {
                    doc.to_ascii_lowercase()
                } else {
                    doc.to_vec()
                };
                let (tokens, joiner): (Vec<Vec<u8>>, &[u8]) = match config.tokenizer {
                    Tokenizer::Whitespace => (
                        doc.split(|b| b" \t\n\x0b\x0c\r".contains(b))
                            .filter(|t| !t.is_empty())
                            .map(<[u8]>::to_vec)
                            .collect(),
                        b" ",
                    ),
                    Tokenizer::Word => (
                        doc.split(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
                            .filter(|t| !t.is_empty())
                            .map(<[u8]>::to_vec)
                            .collect(),
                        b" ",
                    ),
                    Tokenizer::Byte => (doc.iter().map(|&b| vec![b]).collect(), b""),
                    Tokenizer::SklearnWord | Tokenizer::SklearnChar | Tokenizer::SklearnCharWb => {
                        unreachable!("the outer match handles the sklearn tokenizers")
                    }
                    Tokenizer::Char => (
                        String::from_utf8_lossy(&doc)
                            .chars()
                            .map(|c| c.to_string().into_bytes())
                            .collect(),
                        b"",
                    ),
                };
                token_grams(&tokens, joiner, widths)
            }
            Tokenizer::SklearnWord => {
                let text = python_text(doc, lowercase);
                let mut tokens = Vec::new();
                let mut run = String::new();
                for c in text.chars().chain(std::iter::once(' ')) {
                    if is_python_word(c) {
                        run.push(c);
                    } else {
                        if run.chars().count() >= 2 {
                            tokens.push(run.clone().into_bytes());
                        }
                        run.clear();
                    }
                }
                token_grams(&tokens, b" ", widths)
            }
            Tokenizer::SklearnChar => {
                let chars: Vec<Vec<u8>> = collapse(&python_text(doc, lowercase))
                    .chars()
                    .map(|c| c.to_string().into_bytes())
                    .collect();
                token_grams(&chars, b"", widths)
            }
            Tokenizer::SklearnCharWb => {
                let mut out = Vec::new();
                let text = collapse(&python_text(doc, lowercase));
                for word in text.split(is_python_space).filter(|w| !w.is_empty()) {
                    let padded: Vec<char> = format!(" {word} ").chars().collect();
                    let mut whole = false;
                    for &n in widths {
                        if padded.len() <= n {
                            if !whole {
                                out.push(padded.iter().collect::<String>().into_bytes());
                                whole = true;
                            }
                            continue;
                        }
                        for gram in padded.windows(n) {
                            out.push(gram.iter().collect::<String>().into_bytes());
                        }
                    }
                }
                out
            }
        }
    }

    fn python_text(doc: &[u8], lowercase: bool) -> String {
        let text = String::from_utf8_lossy(doc).into_owned();
        if !lowercase {
            return text;
        }
        let mut lowered = String::new();
        python_str_lower(&text, &mut lowered);
        lowered
    }

    /// `re.sub(r"\s\s+", " ", text)`.
    fn collapse(text: &str) -> String {
        let chars: Vec<char> = text.chars().collect();
        let mut out = String::new();
        let mut i = 0;
        while i < chars.len() {
            let mut j = i;
            while j < chars.len() && is_python_space(chars[j]) {
                j += 1;
            }
            if j - i >= 2 {
                out.push(' ');
                i = j;
            } else {
                out.push(chars[i]);
                i += 1;
            }
        }
        out
    }

    fn token_grams(tokens: &[Vec<u8>], joiner: &[u8], widths: &[usize]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for &n in widths {
            for window in tokens.windows(n) {
                out.push(window.join(joiner));
            }
        }
        out
    }

    /// `(index, sign)` as `tf.strings.to_hash_bucket_fast` and scikit-learn
    /// define them.
    pub fn bucket(hash: HashFamily, num_buckets: u64, gram: &[u8]) -> (u64, i64) {
        match hash {
            HashFamily::Fingerprint64 => (fingerprint64(gram) % num_buckets, 1),
            HashFamily::Murmur3 => {
                let h = i64::from(murmur3_x86_32(gram, 0) as i32);
                let index = if h == i64::from(i32::MIN) {
                    (i32::MAX as u64 - (num_buckets - 1)) % num_buckets
                } else {
                    h.unsigned_abs() % num_buckets
                };
                (index, if h >= 0 { 1 } else { -1 })
            }
        }
    }

    /// scikit-learn's row: integer sums, then `binary`, then the norm added
    /// up in ascending index order in f64.
    pub fn counts(config: &NgramConfig, options: CountOptions, doc: &[u8]) -> Vec<(u64, f32)> {
        let mut sums = BTreeMap::new();
        for gram in grams(config, doc) {
            let (index, sign) = bucket(config.hash, config.num_buckets, &gram);
            *sums.entry(index).or_insert(0i64) += if options.alternate_sign { sign } else { 1 };
        }
        let values: Vec<(u64, f64)> = sums
            .into_iter()
            .map(|(i, v)| (i, if options.binary { 1.0 } else { v as f64 }))
            .collect();
        let scale = match options.norm {
            Norm::None => 1.0,
            Norm::L1 => values.iter().map(|(_, v)| v.abs()).sum::<f64>(),
            Norm::L2 => values.iter().map(|(_, v)| v * v).sum::<f64>().sqrt(),
        };
        values
            .into_iter()
            .map(|(i, v)| (i, if scale > 0.0 { v / scale } else { v } as f32))
            .collect()
    }
}

thread_local! {
    static ONE_AT_A_TIME: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this test thread asked for Fingerprint64 n-grams to be hashed
/// one at a time (what a CPU without AVX-512 does) instead of in batches.
pub(super) fn one_at_a_time() -> bool {
    ONE_AT_A_TIME.with(|flag| flag.get())
}

/// [`check_against_naive_once`] with Fingerprint64 hashed in batches where
/// this CPU does, then one at a time.
fn check_against_naive(
    config: &NgramConfig,
    options: CountOptions,
    doc: &[u8],
    max_tokens: usize,
    scratch: &mut CountScratch,
) -> std::result::Result<(), String> {
    check_against_naive_once(config, options, doc, max_tokens, scratch)?;
    ONE_AT_A_TIME.with(|flag| flag.set(true));
    let result = check_against_naive_once(config, options, doc, max_tokens, scratch);
    ONE_AT_A_TIME.with(|flag| flag.set(false));
    result
}

/// Checks every output of `config` on `doc` against the naive definitions:
/// the n-gram bytes, ids, sequences of several lengths, sparse counts (with
/// the thread's scratch and a reused one) and dense counts (both ways of
/// summing).
fn check_against_naive_once(
    config: &NgramConfig,
    options: CountOptions,
    doc: &[u8],
    max_tokens: usize,
    scratch: &mut CountScratch,
) -> std::result::Result<(), String> {
    let fail = |what: &str| format!("{what} differs for {config:?} {options:?} doc {doc:?}");
    let hasher = NgramHasher::new(config.clone()).map_err(|e| e.to_string())?;
    let want_grams = naive::grams(config, doc);
    let mut got_grams = Vec::new();
    hasher.for_each_gram(doc, |g| {
        got_grams.push(g.to_vec());
        ControlFlow::Continue(())
    });
    if got_grams != want_grams {
        return Err(fail("grams"));
    }
    let want_ids: Vec<i64> = want_grams
        .iter()
        .map(|g| naive::bucket(config.hash, config.num_buckets, g).0 as i64)
        .collect();
    let mut ids = vec![-7];
    hasher.ids(doc, &mut ids);
    if ids[0] != -7 || ids[1..] != want_ids[..] {
        return Err(fail("ids"));
    }
    for len in [max_tokens, 1, want_ids.len(), want_ids.len() + 1] {
        let Ok(sequence) = NgramSequence::new(hasher.clone(), len.max(1), -1) else {
            continue;
        };
        let row = sequence.row(doc);
        let n = want_ids.len().min(row.len());
        if row[..n] != want_ids[..n] || row[n..].iter().any(|&p| p != -1) {
            return Err(fail("sequence"));
        }
    }
    let Ok(counter) = NgramCounter::new(hasher, options) else {
        return Ok(());
    };
    let want = naive::counts(config, options, doc);
    let as_pairs = |row: &SparseRow| -> Vec<(u64, u32)> {
        row.indices
            .iter()
            .copied()
            .zip(row.values.iter().map(|v| v.to_bits()))
            .collect()
    };
    let want_bits: Vec<(u64, u32)> = want.iter().map(|&(i, v)| (i, v.to_bits())).collect();
    let mut row = SparseRow::default();
    counter.counts(doc, &mut row);
    if as_pairs(&row) != want_bits {
        return Err(fail("sparse counts"));
    }
    counter.counts_with(doc, &mut row, scratch);
    if as_pairs(&row) != want_bits {
        return Err(fail("sparse counts (reused scratch)"));
    }
    if let Some(dense) = NgramCounts::new(counter)
        .ok()
        .filter(|_| config.num_buckets <= 4096)
    {
        let mut want_row = vec![0f32; config.num_buckets as usize];
        for &(i, v) in &want {
            want_row[i as usize] = v;
        }
        let bits = |row: &[f32]| row.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        let mut out = vec![f32::NAN; want_row.len()];
        for exact_sums in [EXACT_F32_SUMS, 0] {
            dense
                .sum_into(doc, &mut out, exact_sums)
                .map_err(|e| e.to_string())?;
            if bits(&out) != bits(&want_row) {
                return Err(fail(&format!("dense counts (exact below {exact_sums})")));
            }
        }
    }
    Ok(())
}

const ALL_TOKENIZERS: [Tokenizer; 7] = [
    Tokenizer::Whitespace,
    Tokenizer::Word,
    Tokenizer::Char,
    Tokenizer::Byte,
    Tokenizer::SklearnWord,
    Tokenizer::SklearnChar,
    Tokenizer::SklearnCharWb,
];

/// Documents made of pieces chosen to hit every path: each class of ASCII
/// separator (tf's whitespace, Python's extra `\x1c`..`\x1f`), upper and
/// lower case letters, digits and `_`, runs long enough to straddle 16- and
/// 64-byte chunks, multi-byte characters (Python spaces, `'İ'` which lowers
/// to two characters, the capital sigma and a case-ignorable quote and
/// mark), and invalid UTF-8.
fn doc_strategy() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let pieces: Vec<&'static [u8]> = vec![
        b" ",
        b" ",
        b"  ",
        b"\t",
        b"\n",
        b"\x0b",
        b"\x0c",
        b"\r",
        b"\x1c",
        b"\x1f",
        b"a",
        b"Z",
        b"b",
        b"Qx",
        b"_",
        b"9",
        b".",
        b"'",
        b",",
        "é".as_bytes(),
        "İ".as_bytes(),
        "Σ".as_bytes(),
        "ς".as_bytes(),
        "\u{a0}".as_bytes(),
        "\u{3000}".as_bytes(),
        "\u{85}".as_bytes(),
        "\u{345}".as_bytes(),
        "\u{301}".as_bytes(),
        "½".as_bytes(),
        b"\xff",
        b"\xe2\x82",
        b"\xc3",
    ];
    let piece = prop_oneof![
        6 => proptest::sample::select(pieces).prop_map(|p: &[u8]| p.to_vec()),
        1 => (proptest::sample::select(b"aAzZ_9 \xc3".to_vec()), 1usize..80)
            .prop_map(|(b, n)| vec![b; n]),
        1 => any::<u8>().prop_map(|b| vec![b]),
    ];
    proptest::collection::vec(piece, 0..100).prop_map(|pieces| pieces.concat())
}

fn options_strategy(hash: HashFamily) -> impl proptest::strategy::Strategy<Value = CountOptions> {
    use proptest::prelude::*;
    let norm = proptest::sample::select(vec![Norm::None, Norm::L1, Norm::L2]);
    (any::<bool>(), any::<bool>(), norm).prop_map(move |(binary, signed, norm)| CountOptions {
        binary,
        alternate_sign: signed && hash == HashFamily::Murmur3,
        norm,
    })
}

use proptest::strategy::Strategy as _;

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

    #[test]
    fn every_output_equals_the_naive_definitions(
        tokenizer in proptest::sample::select(ALL_TOKENIZERS.to_vec()),
        // Any order, duplicates allowed.
        widths in proptest::collection::vec(1usize..6, 1..4),
        lowercase in proptest::prelude::any::<bool>(),
        (hash, options) in proptest::sample::select(vec![
            HashFamily::Fingerprint64, HashFamily::Murmur3,
        ]).prop_flat_map(|hash| (proptest::strategy::Just(hash), options_strategy(hash))),
        num_buckets in proptest::prop_oneof![1u64..60, proptest::strategy::Just(64), 1u64..1 << 31],
        doc in doc_strategy(),
        offset in 0usize..64,
        max_tokens in 1usize..80,
    ) {
        let config = NgramConfig { tokenizer, widths, lowercase, hash, num_buckets };
        // Every alignment of the document in memory.
        let mut buffer = vec![b'#'; offset];
        buffer.extend_from_slice(&doc);
        let mut scratch = CountScratch::new();
        let result = check_against_naive(&config, options, &buffer[offset..], max_tokens, &mut scratch);
        proptest::prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }

    #[test]
    fn ascii_tokens_are_the_runs_between_separators(
        doc in doc_strategy(),
        offset in 0usize..64,
        class in proptest::sample::select(vec![
            scan::ByteClass::Whitespace, scan::ByteClass::NonWord, scan::ByteClass::PythonSpace,
        ]),
    ) {
        let mut buffer = vec![b'#'; offset];
        buffer.extend_from_slice(&doc);
        let doc = &buffer[offset..];
        let got: Vec<&[u8]> = scan::AsciiTokens::new(doc, class).map(|(s, e)| &doc[s..e]).collect();
        let want: Vec<&[u8]> =
            doc.split(|&b| class.is_separator(b)).filter(|t| !t.is_empty()).collect();
        proptest::prop_assert_eq!(got, want);
    }
}

#[test]
fn byte_classes_are_the_documented_sets() {
    for b in 0..=255u8 {
        assert_eq!(
            scan::ByteClass::Whitespace.is_separator(b),
            b" \t\n\x0b\x0c\r".contains(&b),
            "{b}"
        );
        assert_eq!(
            scan::ByteClass::NonWord.is_separator(b),
            !(b.is_ascii_alphanumeric() || b == b'_'),
            "{b}"
        );
        assert_eq!(
            scan::ByteClass::PythonSpace.is_separator(b),
            b.is_ascii() && crate::unicode_classes::is_python_space(char::from(b)),
            "{b}"
        );
    }
}

/// Block masks against the byte definitions: every byte value in every
/// lane, next to each other byte value.
#[test]
fn block_masks_are_the_byte_classes_in_every_lane() {
    for class in [
        scan::ByteClass::Whitespace,
        scan::ByteClass::NonWord,
        scan::ByteClass::PythonSpace,
    ] {
        for b in 0..=255u8 {
            for lane in 0..64 {
                let block: [u8; 64] =
                    std::array::from_fn(|i| if i == lane { b } else { (i * 4 + lane) as u8 });
                let want = block.iter().enumerate().fold(0u64, |m, (i, &x)| {
                    m | (u64::from(class.is_separator(x)) << i)
                });
                assert_eq!(class.mask(&block), want, "{class:?} byte {b} lane {lane}");
            }
        }
    }
}

#[test]
fn chunk_lowercasing_is_ascii_lowercasing_in_every_lane() {
    for b in 0..=255u8 {
        for lane in 0..scan::CHUNK {
            let mut chunk = [b'Q'; scan::CHUNK];
            chunk[lane] = b;
            let mut want = chunk;
            want.make_ascii_lowercase();
            let got = scan::ascii_lowercase_chunk(chunk);
            assert_eq!(got, want, "byte {b} in lane {lane}");
        }
    }
}

/// Tokens and separators of every length around the 16-byte copy chunk and
/// the 64-byte classification block, at every offset of the first block,
/// including tokens that end the document and documents of whole blocks.
#[test]
fn tokens_straddling_chunks_and_blocks() {
    let mut scratch = CountScratch::new();
    let options = CountOptions {
        binary: false,
        alternate_sign: true,
        norm: Norm::L2,
    };
    let lengths = [1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 130];
    for lead in 0..=66 {
        for &len in &lengths {
            for tail in [0, 1, 2, 64 - (lead + len + 2) % 64] {
                let mut doc = vec![b' '; lead];
                doc.extend(std::iter::repeat_n(b'Q', len));
                doc.extend_from_slice(b"\t\n");
                doc.extend(std::iter::repeat_n(b'w', tail));
                for tokenizer in ALL_TOKENIZERS {
                    for widths in [vec![1, 2, 3], vec![3, 1, 3]] {
                        let hash = [HashFamily::Murmur3, HashFamily::Fingerprint64][len % 2];
                        let config = NgramConfig {
                            tokenizer,
                            widths,
                            lowercase: len % 2 == 0,
                            hash,
                            num_buckets: 97,
                        };
                        let options = CountOptions {
                            alternate_sign: hash == HashFamily::Murmur3,
                            ..options
                        };
                        check_against_naive(&config, options, &doc, 5, &mut scratch).unwrap();
                    }
                }
            }
        }
    }
}

#[test]
fn all_separators_and_no_separators() {
    let mut scratch = CountScratch::new();
    let options = CountOptions {
        binary: true,
        alternate_sign: false,
        norm: Norm::L1,
    };
    for len in 0..=200 {
        for byte in [b' ', b'\t', b'\x1c', b'.', b'a', b'A', b'_'] {
            let doc = vec![byte; len];
            for tokenizer in ALL_TOKENIZERS {
                for lowercase in [false, true] {
                    let config = NgramConfig {
                        tokenizer,
                        widths: vec![2, 1],
                        lowercase,
                        hash: HashFamily::Fingerprint64,
                        num_buckets: 1 << 12,
                    };
                    check_against_naive(&config, options, &doc, 3, &mut scratch).unwrap();
                }
            }
        }
    }
}

/// A document long enough that the token buffer drops old tokens many
/// times, with tokens longer than the buffer, the widest n-grams, and more
/// n-grams than one counting batch.
#[test]
fn long_documents_and_long_tokens() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut doc = Vec::new();
    while doc.len() < 150_000 {
        let r = next();
        let len = match r % 50 {
            0 => 5000,
            1..=5 => 20 + (r >> 8) as usize % 50,
            _ => 1 + (r >> 8) as usize % 12,
        };
        let letter = b"aBcDeF_9\xc3\xa9"[(r >> 20) as usize % 10];
        doc.extend(std::iter::repeat_n(letter, len));
        doc.extend_from_slice(&b" \t\n  \x1c"[..1 + (r >> 30) as usize % 5]);
    }
    // Space runs straddling the 4 KiB blocks of the byte and ASCII paths.
    for block in [4096, 8192] {
        doc[block - 2..block + 3].copy_from_slice(b" \t \x1c ");
    }
    doc[3 * 4096 - 1] = b' ';
    let ascii: Vec<u8> = doc
        .iter()
        .map(|&b| if b.is_ascii() { b } else { b'x' })
        .collect();
    let mut scratch = CountScratch::new();
    for (tokenizer, doc) in ALL_TOKENIZERS
        .iter()
        .flat_map(|&t| [(t, &doc), (t, &ascii)])
    {
        let widths = if tokenizer == Tokenizer::Byte {
            vec![1, 3]
        } else {
            vec![1, 64, 7]
        };
        for hash in [HashFamily::Murmur3, HashFamily::Fingerprint64] {
            let config = NgramConfig {
                tokenizer,
                widths: widths.clone(),
                lowercase: true,
                hash,
                num_buckets: 1 << 20,
            };
            let options = CountOptions {
                binary: false,
                alternate_sign: hash == HashFamily::Murmur3,
                norm: Norm::L1,
            };
            check_against_naive(&config, options, doc, 1000, &mut scratch).unwrap();
        }
    }
}

#[test]
fn count_scratch_sorts_wide_keys_and_is_reused() {
    let mut scratch = CountScratch::new();
    // 62-bit keys (six radix passes, five with a single digit), in reverse.
    scratch.begin(1 << 62, false);
    for bucket in (0..5000u64).rev() {
        scratch.add(bucket, false);
        scratch.add(bucket, false);
    }
    let want: Vec<(u64, i64)> = (0..5000).map(|b| (b, 2)).collect();
    assert_eq!(scratch.finish(), &want[..]);
    // Signed, with sums that cancel, after the previous document.
    scratch.begin(10, true);
    for (bucket, negative) in [(3, true), (9, false), (3, false), (0, true), (9, false)] {
        scratch.add(bucket, negative);
    }
    assert_eq!(scratch.finish(), &[(0, -1), (3, 0), (9, 2)]);
    scratch.begin(10, false);
    assert_eq!(scratch.finish(), &[]);
}

/// The naive definition of [`CountScratch`]'s sums: a sorted map from each
/// bucket to its +1s and -1s.
fn naive_sums(signed: bool, adds: &[(u64, bool)]) -> Vec<(u64, i64)> {
    let mut sums = std::collections::BTreeMap::new();
    for &(bucket, negative) in adds {
        *sums.entry(bucket).or_insert(0) += if signed && negative { -1 } else { 1 };
    }
    sums.into_iter().collect()
}

/// Counts `adds` with `scratch` and compares with [`naive_sums`].
fn check_scratch(
    scratch: &mut CountScratch,
    num_buckets: u64,
    signed: bool,
    adds: &[(u64, bool)],
) -> std::result::Result<(), String> {
    scratch.begin(num_buckets, signed);
    for &(bucket, negative) in adds {
        scratch.add(bucket, negative);
    }
    if scratch.finish() == naive_sums(signed, adds) {
        Ok(())
    } else {
        Err(format!(
            "sums differ for {} adds, num_buckets {num_buckets}, signed {signed}",
            adds.len()
        ))
    }
}

/// Bucket counts at the edges of the key widths: one bucket, the largest
/// 32-bit keys (signed and not) and the first 33-bit ones, and the most.
const EDGE_BUCKETS: [u64; 12] = [
    1,
    2,
    3,
    97,
    1 << 12,
    1 << 20,
    (1 << 31) - 1,
    1 << 31,
    (1 << 31) + 1,
    1 << 32,
    (1 << 32) + 1,
    i64::MAX as u64,
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

    /// Any sequence of buckets, drawn from a few (long runs of repeats after
    /// sorting) or from all of them (mostly distinct), of lengths around
    /// the comparison-sort threshold: the sums of the naive definition.
    #[test]
    fn count_scratch_sums_equal_the_naive_sums(
        num_buckets in proptest::sample::select(EDGE_BUCKETS.to_vec()),
        signed in proptest::prelude::any::<bool>(),
        pool in proptest::prop_oneof![1u64..4, 4u64..300, proptest::strategy::Just(u64::MAX)],
        draws in proptest::collection::vec(
            (proptest::prelude::any::<u64>(), proptest::prelude::any::<bool>()), 0..1500),
        // The top bucket, 0 and the picks above, in turn.
        edges in proptest::prelude::any::<bool>(),
    ) {
        let mut scratch = CountScratch::new();
        let adds: Vec<(u64, bool)> = draws
            .iter()
            .enumerate()
            .map(|(i, &(r, negative))| {
                let bucket = match i % 3 {
                    0 if edges => num_buckets - 1,
                    1 if edges => 0,
                    _ => (r % pool.min(num_buckets)).wrapping_mul(0x9e37_79b9_7f4a_7c15) % num_buckets,
                };
                (bucket, negative)
            })
            .collect();
        let result = check_scratch(&mut scratch, num_buckets, signed, &adds);
        proptest::prop_assert!(result.is_ok(), "{}", result.unwrap_err());
        // Reused, with no trace of the previous document.
        let result = check_scratch(&mut scratch, num_buckets, !signed, &adds[..adds.len() / 2]);
        proptest::prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

/// Documents of every length around the batch size: all buckets distinct,
/// all the same, and in between, for 32-bit and wider keys.
#[test]
fn count_scratch_across_batches() {
    let mut scratch = CountScratch::new();
    let batch = count::BATCH;
    for len in [batch - 1, batch, batch + 1, 2 * batch + 7] {
        for num_buckets in [1, 1 << 20, 1 << 40] {
            for signed in [false, true] {
                for step in [1u64, 0, 0x9e37_79b9_7f4a_7c15] {
                    let adds: Vec<(u64, bool)> = (0..len as u64)
                        .map(|i| (i.wrapping_mul(step) % num_buckets, i % 3 == 0))
                        .collect();
                    check_scratch(&mut scratch, num_buckets, signed, &adds).unwrap();
                }
            }
        }
    }
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
    use crate::byte_sequence::{ByteSequence, Sampling};
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
    assert_eq!(bytes.work_bytes_hint(), Some(4096));
}
