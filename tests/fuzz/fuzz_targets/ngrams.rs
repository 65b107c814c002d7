//! Fuzz target `ngrams`: random `NgramConfig` (valid and invalid) and a
//! random document through `ids`, `sequence`, `counts` and `for_each_gram`.
//!
//! Checks:
//! - `NgramHasher::new` returns `Err(InvalidArgument)` exactly when the config
//!   breaks a documented rule, and never panics;
//! - every id is in `0..num_buckets`, and equals `bucket(gram)` of the gram
//!   `for_each_gram` yields at the same position;
//! - `value_bound`, where there is one, is at least the number of ids;
//! - the grams and their ids equal the core's oracle
//!   (`rustfx::oracles::ngrams`, what the unit tests compare with) for every
//!   tokenizer;
//! - `sequence` writes `min(ids, len)` ids equal to the prefix of `ids` and
//!   fills the rest with the pad;
//! - `counts` gives sorted, distinct indices `< num_buckets`, exactly the
//!   buckets of the grams, with finite values that are non-zero unless signed
//!   occurrences cancel (`alternate_sign` without `binary`); raw counts sum to the number of grams (or to the sum of
//!   signs with `alternate_sign`); `binary` gives only 1s before the norm;
//!   with `l1` / `l2` a row with a non-zero value has unit norm.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use rustfx::extractor::RowExtractor;
use rustfx::ngrams::{
    CountOptions, HashFamily, NgramConfig, NgramCounter, NgramCounts, NgramHasher, NgramSequence,
    Norm, Tokenizer, MAX_DENSE_BUCKETS, MAX_MURMUR3_BUCKETS, MAX_NGRAM_WIDTH, MAX_NGRAM_WIDTHS,
};
use rustfx::oracles;
use rustfx::output::SparseRow;
use rustfx::ErrorKind;
use std::ops::ControlFlow;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Buckets {
    Small(u8),
    Medium(u32),
    Any(u64),
    Zero,
    One,
    MurmurMax,
    MurmurMaxPlus1,
    I64Max,
    I64MaxPlus1,
    U64Max,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Widths {
    /// 1..=4 widths of 0..=70 (the common case, sometimes invalid widths).
    Few([u8; 4], u8),
    /// No width at all (invalid).
    Empty,
    /// `n % 70` copies of one width (more than 64 entries is invalid).
    Many(u8, u8),
}

#[derive(Arbitrary, Debug)]
struct Input {
    tokenizer: u8,
    widths: Widths,
    buckets: Buckets,
    murmur: bool,
    lowercase: bool,
    sequence_len: u8,
    pad: i64,
    binary: bool,
    alternate_sign: bool,
    norm: u8,
    doc: Vec<u8>,
}

fn widths(w: Widths) -> Vec<usize> {
    match w {
        Widths::Few(ws, n) => ws[..1 + usize::from(n % 4)]
            .iter()
            .map(|&x| usize::from(x % 71))
            .collect(),
        Widths::Empty => Vec::new(),
        Widths::Many(x, n) => vec![usize::from(x % 71); usize::from(n % 70)],
    }
}

fn num_buckets(b: Buckets) -> u64 {
    match b {
        Buckets::Small(x) => u64::from(x),
        Buckets::Medium(x) => u64::from(x),
        Buckets::Any(x) => x,
        Buckets::Zero => 0,
        Buckets::One => 1,
        Buckets::MurmurMax => MAX_MURMUR3_BUCKETS,
        Buckets::MurmurMaxPlus1 => MAX_MURMUR3_BUCKETS + 1,
        Buckets::I64Max => i64::MAX as u64,
        Buckets::I64MaxPlus1 => i64::MAX as u64 + 1,
        Buckets::U64Max => u64::MAX,
    }
}

/// One of the real tokenizers (`Tokenizer::VALUES`, so a new one is fuzzed
/// as soon as it has a name).
fn tokenizer(t: u8) -> Tokenizer {
    Tokenizer::VALUES[usize::from(t) % Tokenizer::VALUES.len()]
}

/// The documented validity rules of `NgramHasher::new`.
fn config_is_valid(c: &NgramConfig) -> bool {
    let buckets_ok = c.num_buckets >= 1
        && c.num_buckets <= i64::MAX as u64
        && (c.hash != HashFamily::Murmur3 || c.num_buckets <= MAX_MURMUR3_BUCKETS);
    let widths_ok = !c.widths.is_empty()
        && c.widths.len() <= MAX_NGRAM_WIDTHS
        && c.widths.iter().all(|&w| (1..=MAX_NGRAM_WIDTH).contains(&w));
    buckets_ok && widths_ok
}

fuzz_target!(|input: Input| {
    let config = NgramConfig {
        tokenizer: tokenizer(input.tokenizer),
        widths: widths(input.widths),
        lowercase: input.lowercase,
        hash: if input.murmur {
            HashFamily::Murmur3
        } else {
            HashFamily::Fingerprint64
        },
        num_buckets: num_buckets(input.buckets),
    };
    let valid = config_is_valid(&config);
    let hasher = match NgramHasher::new(config.clone()) {
        Ok(h) => {
            assert!(valid, "accepted an invalid config: {config:?}");
            h
        }
        Err(e) => {
            assert!(!valid, "rejected a valid config {config:?}: {e}");
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(!e.message().is_empty());
            return;
        }
    };
    let n = config.num_buckets;
    let doc = &input.doc[..];

    // ids, checked against for_each_gram + bucket.
    let mut ids = Vec::new();
    hasher.ids(doc, &mut ids);
    let mut grams: Vec<Vec<u8>> = Vec::new();
    hasher.for_each_gram(doc, |g| {
        grams.push(g.to_vec());
        ControlFlow::Continue(())
    });
    assert_eq!(ids.len(), grams.len());
    for (&id, gram) in ids.iter().zip(&grams) {
        assert!(id >= 0 && (id as u64) < n, "id {id} out of [0, {n})");
        let b = hasher.bucket(gram);
        assert_eq!(b.index as i64, id);
        assert!(b.sign == 1 || b.sign == -1);
        if config.hash == HashFamily::Fingerprint64 {
            assert_eq!(b.sign, 1);
        }
    }
    // The grams themselves and their ids: the core's oracle (every window
    // of each width over the tokens, the definitions the unit tests
    // compare with).
    let want = oracles::ngrams::grams(&config, doc);
    assert_eq!(grams, want, "grams for {config:?}");
    let want_ids: Vec<i64> = want
        .iter()
        .map(|g| oracles::ngrams::bucket(config.hash, n, g).0 as i64)
        .collect();
    assert_eq!(ids, want_ids, "ids for {config:?}");
    // What a kernel sizes its output by when it cannot count: a bound.
    {
        use rustfx::extractor::RaggedExtractor;
        if let Some(bound) = hasher.value_bound(doc) {
            assert!(bound >= ids.len(), "bound {bound} < {} ids", ids.len());
        }
    }

    // Early break of for_each_gram: stops after exactly k grams.
    let k = usize::from(input.sequence_len % 8);
    let mut seen = 0usize;
    hasher.for_each_gram(doc, |_| {
        seen += 1;
        if seen >= k.max(1) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    assert_eq!(seen, ids.len().min(k.max(1)));

    // sequence: prefix of ids, then the pad.
    let len = usize::from(input.sequence_len % 65);
    let pad_is_bucket = u64::try_from(input.pad).is_ok_and(|p| p < n);
    match NgramSequence::new(hasher.clone(), len, input.pad) {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(len == 0 || pad_is_bucket, "{e}");
        }
        Ok(sequence) => {
            assert!(len > 0 && !pad_is_bucket);
            let mut out = vec![0x5a5a_5a5a_i64; len];
            sequence.write_row(doc, &mut out).unwrap();
            let written = ids.len().min(len);
            assert_eq!(&out[..written], &ids[..written]);
            assert!(out[written..].iter().all(|&v| v == input.pad));
        }
    }

    // counts.
    let options = CountOptions {
        binary: input.binary,
        alternate_sign: input.alternate_sign,
        norm: match input.norm % 3 {
            0 => Norm::None,
            1 => Norm::L1,
            _ => Norm::L2,
        },
    };
    let mut row = SparseRow {
        indices: vec![7, 3],
        values: vec![1.0],
    };
    let counter = match NgramCounter::new(hasher.clone(), options) {
        Ok(counter) => counter,
        Err(e) => {
            // The one rule of counts: a sign needs murmur3.
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(options.alternate_sign && config.hash == HashFamily::Fingerprint64);
            return;
        }
    };
    counter.counts(doc, &mut row);
    // Dense rows are the sparse row scattered.
    if let Ok(dense) = NgramCounts::new(counter.clone()) {
        let dense_row = dense.row(doc);
        assert_eq!(dense_row.len() as u64, n);
        for (&i, &v) in row.indices.iter().zip(&row.values) {
            assert_eq!(dense_row[i as usize].to_bits(), v.to_bits());
        }
        let nonzero_elsewhere = dense_row
            .iter()
            .enumerate()
            .filter(|&(i, &v)| v != 0.0 && row.indices.binary_search(&(i as u64)).is_err())
            .count();
        assert_eq!(nonzero_elsewhere, 0);
    } else {
        assert!(n > MAX_DENSE_BUCKETS as u64);
    }
    assert_eq!(row.indices.len(), row.values.len());
    assert!(
        row.indices.windows(2).all(|w| w[0] < w[1]),
        "indices not sorted/distinct"
    );
    assert!(row.indices.iter().all(|&i| i < n));
    assert!(row.values.iter().all(|v| v.is_finite()), "{row:?}");
    // The indices are exactly the buckets that occurred (a bucket whose
    // signed occurrences cancel keeps an explicit 0, like scipy's
    // sum_duplicates), so a zero value needs alternate_sign and no binary.
    let mut id_set: Vec<u64> = ids.iter().map(|&i| i as u64).collect();
    id_set.sort_unstable();
    id_set.dedup();
    assert_eq!(row.indices, id_set);
    if !options.alternate_sign || options.binary {
        assert!(row.values.iter().all(|&v| v != 0.0), "{row:?}");
    }
    let nonzero = row.values.iter().any(|&v| v != 0.0);
    match options.norm {
        Norm::None if options.binary => assert!(row.values.iter().all(|&v| v == 1.0)),
        Norm::None => {
            let sum: f64 = row.values.iter().map(|&v| f64::from(v)).sum();
            let expected: i64 = if options.alternate_sign {
                grams.iter().map(|g| i64::from(hasher.bucket(g).sign)).sum()
            } else {
                ids.len() as i64
            };
            assert_eq!(sum, expected as f64);
            assert!(row.values.iter().all(|v| v.fract() == 0.0));
        }
        Norm::L1 if nonzero => {
            let s: f64 = row.values.iter().map(|&v| f64::from(v).abs()).sum();
            assert!((s - 1.0).abs() < 1e-4, "l1 norm {s}");
        }
        Norm::L2 if nonzero => {
            let s: f64 = row
                .values
                .iter()
                .map(|&v| f64::from(v) * f64::from(v))
                .sum();
            assert!((s - 1.0).abs() < 1e-4, "squared l2 norm {s}");
        }
        _ => {}
    }
});
