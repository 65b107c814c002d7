//! Property tests: the streaming paths against [`naive`](super::naive) on
//! arbitrary documents, tokenizers and options.

use super::*;

/// [`check_against_naive_once`] with Fingerprint64 hashed in batches where
/// this CPU does, then one at a time.
pub(super) fn check_against_naive(
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
        for exact_sums in [counter::EXACT_F32_SUMS, 0] {
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

/// Documents made of pieces chosen to hit every path: each class of ASCII
/// separator (tf's whitespace, Python's extra `\x1c`..`\x1f`), upper and
/// lower case letters, digits and `_`, runs long enough to straddle 16- and
/// 64-byte chunks, multi-byte characters (Python spaces, `'İ'` which lowers
/// to two characters, the capital sigma and a case-ignorable quote and
/// mark), and invalid UTF-8.
pub(super) fn doc_strategy() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
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

pub(super) fn options_strategy(
    hash: HashFamily,
) -> impl proptest::strategy::Strategy<Value = CountOptions> {
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
        tokenizer in proptest::sample::select(Tokenizer::VALUES.to_vec()),
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
        min_len in 1usize..=2,
    ) {
        let mut buffer = vec![b'#'; offset];
        buffer.extend_from_slice(&doc);
        let doc = &buffer[offset..];
        let got: Vec<&[u8]> =
            scan::AsciiTokens::new(doc, class, min_len).map(|(s, e)| &doc[s..e]).collect();
        let want: Vec<&[u8]> =
            doc.split(|&b| class.is_separator(b)).filter(|t| t.len() >= min_len).collect();
        proptest::prop_assert_eq!(got, want);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// A batch of documents in one call (what the kernels make, one per
    /// chunk) gives each document's output exactly as a call per document
    /// does, which the test above checks against the definitions: ragged
    /// ids, sequences and sparse rows, with the first document's ids
    /// appended after ids already there.
    #[test]
    fn a_batch_of_documents_equals_a_call_per_document(
        tokenizer in proptest::sample::select(Tokenizer::VALUES.to_vec()),
        widths in proptest::collection::vec(1usize..6, 1..4),
        lowercase in proptest::prelude::any::<bool>(),
        hash in proptest::sample::select(vec![HashFamily::Fingerprint64, HashFamily::Murmur3]),
        docs in proptest::collection::vec(doc_strategy(), 0..40),
        max_tokens in 1usize..20,
    ) {
        use crate::extractor::{RaggedExtractor, RowExtractor, SparseRowsExtractor};
        let config = NgramConfig { tokenizer, widths, lowercase, hash, num_buckets: 1 << 20 };
        let hasher = NgramHasher::new(config).unwrap();
        let docs: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();

        let (mut want, mut want_ends) = (vec![-7], Vec::new());
        for doc in &docs {
            hasher.append_values(doc, &mut want);
            want_ends.push(want.len() as u64);
        }
        let (mut got, mut got_offsets) = (vec![-7], crate::output::Offsets::new());
        hasher.append_rows(&docs, &mut got, &mut got_offsets);
        let got_ends: Vec<u64> = got_offsets.ends().iter().map(|&e| e as u64).collect();
        proptest::prop_assert_eq!((&got, &got_ends), (&want, &want_ends));

        // Written in place, into room sized up front where the counts are
        // known (byte and character n-grams), into room of the right size
        // otherwise; room of another size is an error, not a panic or a
        // short row.
        let counts: Option<Vec<usize>> =
            docs.iter().map(|doc| hasher.value_count(doc)).collect();
        if let Some(counts) = &counts {
            let ends: Vec<u64> = counts
                .iter()
                .scan(1, |end, &count| { *end += count; Some(*end as u64) })
                .collect();
            proptest::prop_assert_eq!(&ends, &want_ends);
        }
        proptest::prop_assert_eq!(
            hasher.counts_up_front(),
            matches!(tokenizer, Tokenizer::Byte | Tokenizer::Char)
        );
        // Character counts are left to the gathering path for documents
        // that are neither UTF-8 nor mostly ASCII (binaries).
        let countable = |doc: &&[u8]| match tokenizer {
            Tokenizer::Byte => true,
            Tokenizer::Char => {
                std::str::from_utf8(doc).is_ok()
                    || doc.iter().filter(|&&b| b >= 0x80).count() <= doc.len() / 8
            }
            _ => false,
        };
        proptest::prop_assert_eq!(counts.is_some(), docs.iter().all(countable));
        // The bound a kernel sizes by when it cannot count: every
        // document's ids at most, exact for bytes, none for tokens.
        for (k, doc) in docs.iter().enumerate() {
            let ids = (want_ends[k] - k.checked_sub(1).map_or(1, |j| want_ends[j])) as usize;
            match (hasher.value_bound(doc), tokenizer) {
                (Some(bound), Tokenizer::Byte) => proptest::prop_assert_eq!(bound, ids),
                (Some(bound), Tokenizer::Char) => proptest::prop_assert!(bound >= ids),
                (None, Tokenizer::Byte | Tokenizer::Char) => proptest::prop_assert!(false),
                (bound, _) => proptest::prop_assert_eq!(bound, None),
            }
        }
        let mut in_place = vec![3; want.len() - 1];
        hasher.write_values(&docs, &mut in_place).unwrap();
        proptest::prop_assert_eq!(&in_place[..], &want[1..]);
        let mut wrong = vec![3; want.len()];
        proptest::prop_assert!(hasher.write_values(&docs, &mut wrong).is_err());

        let sequence = NgramSequence::new(hasher.clone(), max_tokens, -1).unwrap();
        let want: Vec<i64> = docs.iter().flat_map(|doc| sequence.row(doc)).collect();
        let mut got = vec![5; docs.len() * max_tokens];
        sequence.write_rows(&docs, &mut got).unwrap();
        proptest::prop_assert_eq!(got, want);

        let options = CountOptions { binary: false, alternate_sign: false, norm: Norm::L2 };
        let counter = NgramCounter::new(hasher, options).unwrap();
        let (mut want_indices, mut want_ends) = (Vec::new(), Vec::new());
        let mut row = SparseRow::default();
        for doc in &docs {
            counter.write_sparse_row(doc, &mut row);
            want_indices.extend_from_slice(&row.indices);
            want_ends.push(want_indices.len() as u64);
        }
        let (mut indices, mut values) = (Vec::new(), Vec::new());
        let mut offsets = crate::output::Offsets::new();
        counter.append_sparse_rows(&docs, &mut indices, &mut values, &mut offsets);
        let ends: Vec<u64> = offsets.ends().iter().map(|&e| e as u64).collect();
        proptest::prop_assert_eq!(values.len(), indices.len());
        proptest::prop_assert_eq!((indices, ends), (want_indices, want_ends));
    }
}
