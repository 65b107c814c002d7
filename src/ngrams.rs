//! Hashed n-grams: tokenize, form n-grams, hash each into a bucket.
//!
//! Two families share this one pipeline:
//! - TensorFlow parity (`whitespace`, `word`, `char`, `byte` tokenizers with
//!   [`HashFamily::Fingerprint64`]): the ids equal
//!   `tf.strings.to_hash_bucket_fast(tf.strings.ngrams(tf.strings.split(x), widths), n)`
//!   for the whitespace tokenizer, and so Keras `Hashing`.
//! - scikit-learn parity (`sklearn_word`, `sklearn_char`, `sklearn_char_wb`
//!   with [`HashFamily::Murmur3`]): [`NgramHasher::counts`] equals
//!   `HashingVectorizer(analyzer=..., ngram_range=...)`.
//!
//! ```
//! use rustfx::ngrams::{HashFamily, NgramConfig, NgramHasher, Tokenizer};
//! let hasher = NgramHasher::new(NgramConfig {
//!     tokenizer: Tokenizer::Whitespace,
//!     widths: vec![1, 2],
//!     lowercase: false,
//!     hash: HashFamily::Fingerprint64,
//!     num_buckets: 1000,
//! })
//! .unwrap();
//! let mut ids = Vec::new();
//! hasher.ids(b"a b c", &mut ids);
//! assert_eq!(ids.len(), 3 + 2); // 3 unigrams, then 2 bigrams
//! ```

use crate::extractor::{check_width, RowExtractor};
use crate::hashing::{fingerprint64, murmur3_x86_32};
use crate::unicode_classes::{is_python_space, is_python_word, python_str_lower};
use crate::{Error, ErrorKind, Result};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::ControlFlow;

/// The widest n-gram accepted.
pub const MAX_NGRAM_WIDTH: usize = 64;
/// The most n-gram widths accepted in one configuration.
pub const MAX_NGRAM_WIDTHS: usize = 64;
/// The most buckets for Murmur3 (scikit-learn's own limit, int32 max).
pub const MAX_MURMUR3_BUCKETS: u64 = i32::MAX as u64;
/// The largest `max_tokens` of an [`NgramSequence`].
pub const MAX_SEQUENCE_TOKENS: usize = 1 << 24;
/// The most buckets of [`NgramCounts`] (dense rows: 4 MiB of float32 each).
pub const MAX_DENSE_BUCKETS: usize = 1 << 20;

/// How a document is cut into tokens before n-grams are formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tokenizer {
    /// Split on ASCII whitespace (" \t\n\v\f\r") exactly like
    /// `tf.strings.split(x)`; n-grams joined with " ".
    Whitespace,
    /// Runs of ASCII letters, digits and '_' (identifiers and numbers, the
    /// usual choice for code and scripts); every other byte separates.
    /// n-grams joined with " ".
    Word,
    /// Unicode code points; invalid UTF-8 becomes U+FFFD, one per maximal
    /// invalid subsequence (like Python's `errors="replace"`). n-grams are
    /// the concatenated characters, with no separator.
    Char,
    /// Raw bytes: n-grams are byte strings of length n (the classic malware
    /// feature).
    Byte,
    /// scikit-learn `analyzer="word"`: the default token pattern
    /// `(?u)\b\w\w+\b` with Python's `\w`; n-grams joined with " ".
    SklearnWord,
    /// scikit-learn `analyzer="char"`: runs of two or more Python `\s`
    /// become one space, then character n-grams.
    SklearnChar,
    /// scikit-learn `analyzer="char_wb"`: character n-grams inside each
    /// whitespace-separated word padded with one space on each side.
    SklearnCharWb,
}

crate::named_values!(Tokenizer, "tokenizer", {
    Whitespace => "whitespace",
    Word => "word",
    Char => "char",
    Byte => "byte",
    SklearnWord => "sklearn_word",
    SklearnChar => "sklearn_char",
    SklearnCharWb => "sklearn_char_wb",
});

impl Tokenizer {
    /// Whether this tokenizer belongs to the scikit-learn family (Python
    /// string semantics) rather than the TensorFlow one.
    pub fn is_sklearn(self) -> bool {
        matches!(
            self,
            Tokenizer::SklearnWord | Tokenizer::SklearnChar | Tokenizer::SklearnCharWb
        )
    }
}

/// How an n-gram becomes a bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashFamily {
    /// TensorFlow's Fingerprint64 (farmhash), `h % num_buckets`: parity with
    /// `tf.strings.to_hash_bucket_fast` and Keras `Hashing`.
    Fingerprint64,
    /// MurmurHash3_x86_32 with seed 0, bucket `abs(h) % num_buckets` and sign
    /// of `h`: parity with scikit-learn's `FeatureHasher` / `HashingVectorizer`.
    Murmur3,
}

crate::named_values!(HashFamily, "hash", {
    Fingerprint64 => "fingerprint64",
    Murmur3 => "murmur3",
});

/// The parameters of an [`NgramHasher`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NgramConfig {
    /// How documents are tokenized.
    pub tokenizer: Tokenizer,
    /// n-gram widths, emitted grouped by width in this order (duplicates
    /// allowed, as in `tf.strings.ngrams`).
    pub widths: Vec<usize>,
    /// Lowercase before tokenizing: ASCII only (`tf.strings.lower`) for the
    /// TensorFlow-family tokenizers, Python's `str.lower` for `sklearn_*`.
    pub lowercase: bool,
    /// How n-grams are hashed.
    pub hash: HashFamily,
    /// Number of buckets; ids are in `0..num_buckets`.
    pub num_buckets: u64,
}

/// One n-gram's bucket and, for Murmur3, its sign.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// The bucket index, in `0..num_buckets`.
    pub index: u64,
    /// +1 or -1 (scikit-learn's `alternate_sign`); always +1 for Fingerprint64.
    pub sign: i8,
}

/// Row normalisation of counts, as scikit-learn's `normalize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Norm {
    /// Raw counts.
    None,
    /// Divide by the sum of absolute values.
    L1,
    /// Divide by the Euclidean norm.
    L2,
}

crate::named_values!(Norm, "norm", {
    None => "none",
    L1 => "l1",
    L2 => "l2",
});

/// How n-gram occurrences become a bag-of-n-grams row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountOptions {
    /// Every bucket that occurred becomes 1, even one whose signed
    /// occurrences cancel (scikit-learn's `binary=True` fills every stored
    /// value with 1).
    pub binary: bool,
    /// Add each n-gram's sign instead of 1 (Murmur3 only).
    pub alternate_sign: bool,
    /// Row normalisation.
    pub norm: Norm,
}

/// A sparse row: sorted, distinct bucket indices of the n-grams that occurred
/// and their values (0 where signed occurrences cancel).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SparseRow {
    /// Sorted distinct bucket indices.
    pub indices: Vec<u64>,
    /// The value of each index, same length as `indices`.
    pub values: Vec<f32>,
}

/// Tokenizes, forms n-grams and hashes them. Immutable, so one hasher can
/// serve many threads at once.
#[derive(Clone, Debug)]
pub struct NgramHasher {
    config: NgramConfig,
}

impl NgramHasher {
    /// Validates `config`; the message of an error says what is allowed.
    pub fn new(config: NgramConfig) -> Result<Self> {
        if config.num_buckets == 0 || config.num_buckets > i64::MAX as u64 {
            return Err(Error::invalid_argument(format!(
                "num_buckets must be in [1, {}], got {}",
                i64::MAX,
                config.num_buckets
            )));
        }
        if config.hash == HashFamily::Murmur3 && config.num_buckets > MAX_MURMUR3_BUCKETS {
            return Err(Error::invalid_argument(format!(
                "num_buckets must be in [1, {MAX_MURMUR3_BUCKETS}] with hash murmur3, got {}",
                config.num_buckets
            )));
        }
        if config.widths.is_empty() || config.widths.len() > MAX_NGRAM_WIDTHS {
            return Err(Error::invalid_argument(format!(
                "ngram_widths must list 1 to {MAX_NGRAM_WIDTHS} widths, got {}",
                config.widths.len()
            )));
        }
        if let Some(&w) = config
            .widths
            .iter()
            .find(|&&w| w == 0 || w > MAX_NGRAM_WIDTH)
        {
            return Err(Error::invalid_argument(format!(
                "every n-gram width must be in [1, {MAX_NGRAM_WIDTH}], got {w}"
            )));
        }
        Ok(NgramHasher { config })
    }

    /// The configuration this hasher was built from.
    pub fn config(&self) -> &NgramConfig {
        &self.config
    }

    /// The bucket of one n-gram.
    pub fn bucket(&self, gram: &[u8]) -> Bucket {
        let n = self.config.num_buckets;
        match self.config.hash {
            HashFamily::Fingerprint64 => Bucket {
                index: fingerprint64(gram) % n,
                sign: 1,
            },
            HashFamily::Murmur3 => {
                let h = murmur3_x86_32(gram, 0) as i32;
                let index = if h == i32::MIN {
                    // scikit-learn's definition of abs(-2**31) % n.
                    (i32::MAX as u64 - (n - 1)) % n
                } else {
                    u64::from(h.unsigned_abs()) % n
                };
                Bucket {
                    index,
                    sign: if h >= 0 { 1 } else { -1 },
                }
            }
        }
    }

    /// Calls `f` with the bytes of every n-gram of `doc`, in output order,
    /// until `f` breaks.
    pub fn for_each_gram(&self, doc: &[u8], mut f: impl FnMut(&[u8]) -> ControlFlow<()>) {
        let widths = &self.config.widths;
        let lowercase = self.config.lowercase;
        let _ = match self.config.tokenizer {
            Tokenizer::Whitespace | Tokenizer::Word | Tokenizer::Byte => {
                let lowered;
                let text = if lowercase {
                    lowered = doc.to_ascii_lowercase();
                    &lowered[..]
                } else {
                    doc
                };
                match self.config.tokenizer {
                    // `is_ascii_whitespace` lacks \v, which tf.strings.split has.
                    Tokenizer::Whitespace => {
                        let tokens = split_ranges(text, |b| b.is_ascii_whitespace() || b == 0x0b);
                        joined_ngrams(text, &tokens, widths, &mut f)
                    }
                    Tokenizer::Word => {
                        let tokens =
                            split_ranges(text, |b| !(b.is_ascii_alphanumeric() || b == b'_'));
                        joined_ngrams(text, &tokens, widths, &mut f)
                    }
                    _ => byte_ngrams(text, widths, &mut f),
                }
            }
            Tokenizer::Char => {
                let mut text = String::from_utf8_lossy(doc).into_owned();
                if lowercase {
                    text.make_ascii_lowercase();
                }
                contiguous_ngrams(text.as_bytes(), &char_bounds(&text), widths, &mut f)
            }
            Tokenizer::SklearnWord | Tokenizer::SklearnChar | Tokenizer::SklearnCharWb => {
                self.sklearn_grams(doc, &mut f)
            }
        };
    }

    fn sklearn_grams(
        &self,
        doc: &[u8],
        f: &mut impl FnMut(&[u8]) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let decoded = String::from_utf8_lossy(doc);
        let text = if self.config.lowercase {
            let mut lowered = String::with_capacity(decoded.len());
            python_str_lower(&decoded, &mut lowered);
            lowered
        } else {
            decoded.into_owned()
        };
        let widths = &self.config.widths;
        match self.config.tokenizer {
            Tokenizer::SklearnWord => {
                let tokens = python_word_tokens(&text);
                joined_ngrams(text.as_bytes(), &tokens, widths, f)
            }
            Tokenizer::SklearnChar => {
                let text = collapse_python_spaces(&text);
                contiguous_ngrams(text.as_bytes(), &char_bounds(&text), widths, f)
            }
            _ => {
                let text = collapse_python_spaces(&text);
                char_wb_ngrams(&text, widths, f)
            }
        }
    }

    /// Appends the bucket id of every n-gram of `doc` to `ids`.
    pub fn ids(&self, doc: &[u8], ids: &mut Vec<i64>) {
        self.for_each_gram(doc, |gram| {
            ids.push(self.bucket(gram).index as i64);
            ControlFlow::Continue(())
        });
    }
}

/// The first `max_tokens` ids of each document, padded: a fixed-width row
/// for embedding layers. Hashing stops as soon as the row is full.
#[derive(Clone, Debug)]
pub struct NgramSequence {
    hasher: NgramHasher,
    max_tokens: usize,
    pad_value: i64,
}

impl NgramSequence {
    /// Rows of `max_tokens` ids (in `1..=`[`MAX_SEQUENCE_TOKENS`]) padded
    /// with `pad_value`, which must not be a bucket id (`< 0` or
    /// `>= num_buckets`), so padding never looks like an n-gram.
    pub fn new(hasher: NgramHasher, max_tokens: usize, pad_value: i64) -> Result<Self> {
        if !(1..=MAX_SEQUENCE_TOKENS).contains(&max_tokens) {
            return Err(Error::invalid_argument(format!(
                "max_tokens must be in [1, {MAX_SEQUENCE_TOKENS}], got {max_tokens}"
            )));
        }
        let num_buckets = hasher.config().num_buckets;
        if u64::try_from(pad_value).is_ok_and(|pad| pad < num_buckets) {
            return Err(Error::invalid_argument(format!(
                "pad_value must not be a bucket id: it must be < 0 or >= num_buckets \
                 ({num_buckets}), got {pad_value}"
            )));
        }
        Ok(NgramSequence {
            hasher,
            max_tokens,
            pad_value,
        })
    }

    /// The hasher that makes the ids.
    pub fn hasher(&self) -> &NgramHasher {
        &self.hasher
    }

    /// The pad id.
    pub fn pad_value(&self) -> i64 {
        self.pad_value
    }

    /// Writes the first ids of `doc` into `out` (any length) and fills the
    /// rest with the pad id. Returns how many ids were written.
    pub fn fill(&self, doc: &[u8], out: &mut [i64]) -> usize {
        let mut written = 0;
        if !out.is_empty() {
            self.hasher.for_each_gram(doc, |gram| {
                out[written] = self.hasher.bucket(gram).index as i64;
                written += 1;
                if written == out.len() {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
        }
        out[written..].fill(self.pad_value);
        written
    }
}

impl RowExtractor for NgramSequence {
    type Value = i64;

    fn width(&self) -> usize {
        self.max_tokens
    }

    fn write_row(&self, doc: &[u8], out: &mut [i64]) -> Result<()> {
        check_width(out.len(), self.max_tokens)?;
        self.fill(doc, out);
        Ok(())
    }
}

/// Bags of n-grams, weighted as scikit-learn's `HashingVectorizer` does.
#[derive(Clone, Debug)]
pub struct NgramCounter {
    hasher: NgramHasher,
    options: CountOptions,
}

impl NgramCounter {
    /// Counts with `options`. `alternate_sign` needs [`HashFamily::Murmur3`]:
    /// Fingerprint64 has no sign.
    pub fn new(hasher: NgramHasher, options: CountOptions) -> Result<Self> {
        if options.alternate_sign && hasher.config().hash != HashFamily::Murmur3 {
            return Err(Error::invalid_argument(
                "alternate_sign=True needs hash='murmur3' (Fingerprint64 has no sign)",
            ));
        }
        Ok(NgramCounter { hasher, options })
    }

    /// The hasher that makes the buckets.
    pub fn hasher(&self) -> &NgramHasher {
        &self.hasher
    }

    /// The bag of n-grams of `doc` as a sparse row, like one row of
    /// scikit-learn's `HashingVectorizer` / `FeatureHasher` output: counts
    /// summed exactly, then `binary`, then `norm` (in f64, rounded to f32 at
    /// the end). Like scipy's `sum_duplicates`, a bucket whose signed
    /// occurrences cancel keeps an explicit 0, so `binary` makes it 1.
    pub fn counts(&self, doc: &[u8], row: &mut SparseRow) {
        // Exact integer sums per bucket; only the distinct buckets are
        // sorted (text repeats its n-grams, so that is far fewer).
        let mut sums: HashMap<u64, i64, BuildHasherDefault<BucketHasher>> = HashMap::default();
        self.hasher.for_each_gram(doc, |gram| {
            let bucket = self.hasher.bucket(gram);
            let value = if self.options.alternate_sign {
                i64::from(bucket.sign)
            } else {
                1
            };
            *sums.entry(bucket.index).or_insert(0) += value;
            ControlFlow::Continue(())
        });
        let mut summed: Vec<(u64, f64)> = sums.into_iter().map(|(i, v)| (i, v as f64)).collect();
        // Sorted, so norms add up in scikit-learn's (CSR) order.
        summed.sort_unstable_by_key(|&(index, _)| index);
        if self.options.binary {
            summed.iter_mut().for_each(|(_, v)| *v = 1.0);
        }
        let scale = match self.options.norm {
            Norm::None => 1.0,
            Norm::L1 => summed.iter().map(|(_, v)| v.abs()).sum::<f64>(),
            Norm::L2 => summed.iter().map(|(_, v)| v * v).sum::<f64>().sqrt(),
        };
        row.indices.clear();
        row.values.clear();
        for (index, value) in summed {
            row.indices.push(index);
            row.values
                .push(if scale > 0.0 { value / scale } else { value } as f32);
        }
    }
}

/// [`NgramCounter`] rows as dense float32 vectors of `num_buckets` values.
#[derive(Clone, Debug)]
pub struct NgramCounts {
    counter: NgramCounter,
    width: usize,
}

impl NgramCounts {
    /// Dense rows need `num_buckets <= `[`MAX_DENSE_BUCKETS`] (4 MiB of
    /// float32 per document); use [`NgramCounter`] for sparse rows beyond.
    pub fn new(counter: NgramCounter) -> Result<Self> {
        let num_buckets = counter.hasher().config().num_buckets;
        let width = usize::try_from(num_buckets)
            .ok()
            .filter(|&n| n <= MAX_DENSE_BUCKETS)
            .ok_or_else(|| {
                Error::invalid_argument(format!(
                    "num_buckets must be in [1, {MAX_DENSE_BUCKETS}] for dense counts \
                     (one float32 row per element), got {num_buckets}; use output='sparse'"
                ))
            })?;
        Ok(NgramCounts { counter, width })
    }
}

impl RowExtractor for NgramCounts {
    type Value = f32;

    fn width(&self) -> usize {
        self.width
    }

    fn write_row(&self, doc: &[u8], out: &mut [f32]) -> Result<()> {
        check_width(out.len(), self.width)?;
        let mut row = SparseRow::default();
        self.counter.counts(doc, &mut row);
        out.fill(0.0);
        for (&index, &value) in row.indices.iter().zip(&row.values) {
            // Every index is below num_buckets = out.len(); checked anyway,
            // and a broken invariant is reported, never written past.
            let slot = usize::try_from(index)
                .ok()
                .and_then(|i| out.get_mut(i))
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::Internal,
                        format!("bucket {index} out of range (a bug in rustfx)"),
                    )
                })?;
            *slot = value;
        }
        Ok(())
    }
}

/// Hasher for bucket indices, which are already hash values: one multiply
/// to spread them over the table (SipHash would cost more than the n-gram).
#[derive(Default)]
struct BucketHasher(u64);

impl Hasher for BucketHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, index: u64) {
        self.0 = index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Token ranges of `text` separated by runs of bytes where `is_sep` holds.
fn split_ranges(text: &[u8], is_sep: impl Fn(u8) -> bool) -> Vec<(usize, usize)> {
    let mut tokens = Vec::new();
    let mut start = None;
    for (i, &b) in text.iter().enumerate() {
        match (is_sep(b), start) {
            (true, Some(s)) => {
                tokens.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        tokens.push((s, text.len()));
    }
    tokens
}

/// Byte offsets of every char boundary of `text`, end included.
fn char_bounds(text: &str) -> Vec<usize> {
    text.char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect()
}

/// n-grams of tokens joined with one space, grouped by width in order.
/// Where the tokens of a window are already separated by single spaces in
/// `text` (the common case), the n-gram is a slice of `text`: no copy.
fn joined_ngrams(
    text: &[u8],
    tokens: &[(usize, usize)],
    widths: &[usize],
    f: &mut impl FnMut(&[u8]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    // single_space[k]: tokens k and k + 1 are separated by exactly " ".
    let single_space: Vec<bool> = tokens
        .windows(2)
        .map(|pair| pair[1].0 == pair[0].1 + 1 && text[pair[0].1] == b' ')
        .collect();
    let mut gram = Vec::new();
    for &width in widths {
        for (start, window) in tokens.windows(width).enumerate() {
            let (first, last) = (window[0], window[width - 1]);
            if single_space[start..start + width - 1].iter().all(|&s| s) {
                f(&text[first.0..last.1])?;
                continue;
            }
            gram.clear();
            for (k, &(s, e)) in window.iter().enumerate() {
                if k > 0 {
                    gram.push(b' ');
                }
                gram.extend_from_slice(&text[s..e]);
            }
            f(&gram)?;
        }
    }
    ControlFlow::Continue(())
}

/// Byte n-grams: every window of each width, in order.
fn byte_ngrams(
    text: &[u8],
    widths: &[usize],
    f: &mut impl FnMut(&[u8]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    for &width in widths {
        for gram in text.windows(width) {
            f(gram)?;
        }
    }
    ControlFlow::Continue(())
}

/// n-grams that are contiguous runs of units of `text`, the units being
/// delimited by the sorted offsets `bounds` (first 0, last `text.len()`).
fn contiguous_ngrams(
    text: &[u8],
    bounds: &[usize],
    widths: &[usize],
    f: &mut impl FnMut(&[u8]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let units = bounds.len().saturating_sub(1);
    for &width in widths {
        for start in 0..units.saturating_sub(width - 1) {
            f(&text[bounds[start]..bounds[start + width]])?;
        }
    }
    ControlFlow::Continue(())
}

/// scikit-learn's default token pattern `(?u)\b\w\w+\b`: maximal runs of
/// Python word characters at least two characters long.
fn python_word_tokens(text: &str) -> Vec<(usize, usize)> {
    let mut tokens = Vec::new();
    let mut run: Option<(usize, usize)> = None; // (start byte, chars so far)
    for (i, c) in text.char_indices() {
        if is_python_word(c) {
            run = Some(match run {
                Some((s, n)) => (s, n + 1),
                None => (i, 1),
            });
        } else if let Some((s, n)) = run.take() {
            if n >= 2 {
                tokens.push((s, i));
            }
        }
    }
    if let Some((s, n)) = run {
        if n >= 2 {
            tokens.push((s, text.len()));
        }
    }
    tokens
}

/// scikit-learn's `_white_spaces.sub(" ", text)` with `\s\s+`: every run of
/// two or more whitespace characters becomes one space (a lone tab stays).
fn collapse_python_spaces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if is_python_space(c) && chars.peek().is_some_and(|&n| is_python_space(n)) {
            while chars.peek().is_some_and(|&n| is_python_space(n)) {
                chars.next();
            }
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// scikit-learn's `_char_wb_ngrams`: for each word of `str.split()`, padded
/// with a space on each side, the n-grams of each width in order. A padded
/// word no longer than a width is emitted once, whole, and widths at least
/// as long are skipped for it: for an increasing range that is exactly
/// scikit-learn's `break`, and any other order of widths gives the n-grams
/// of each width as scikit-learn gives them for `ngram_range=(n, n)`.
fn char_wb_ngrams(
    text: &str,
    widths: &[usize],
    f: &mut impl FnMut(&[u8]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let mut padded = String::new();
    for word in text.split(is_python_space).filter(|w| !w.is_empty()) {
        padded.clear();
        padded.push(' ');
        padded.push_str(word);
        padded.push(' ');
        let bounds = char_bounds(&padded);
        let len = bounds.len() - 1;
        let mut emitted_whole = false;
        for &width in widths {
            if len <= width {
                if !emitted_whole {
                    f(padded.as_bytes())?;
                    emitted_whole = true;
                }
                continue;
            }
            for start in 0..=len - width {
                f(&padded.as_bytes()[bounds[start]..bounds[start + width]])?;
            }
        }
    }
    ControlFlow::Continue(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The definitions, written the obvious way.
    mod naive {
        use super::*;

        pub fn tokens(tokenizer: Tokenizer, doc: &[u8]) -> Vec<Vec<u8>> {
            match tokenizer {
                Tokenizer::Whitespace => doc
                    .split(|b| b" \t\n\x0b\x0c\r".contains(b))
                    .filter(|t| !t.is_empty())
                    .map(<[u8]>::to_vec)
                    .collect(),
                Tokenizer::Word => doc
                    .split(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
                    .filter(|t| !t.is_empty())
                    .map(<[u8]>::to_vec)
                    .collect(),
                Tokenizer::Byte => doc.iter().map(|&b| vec![b]).collect(),
                _ => String::from_utf8_lossy(doc)
                    .chars()
                    .map(|c| c.to_string().into_bytes())
                    .collect(),
            }
        }

        pub fn grams(tokenizer: Tokenizer, widths: &[usize], doc: &[u8]) -> Vec<Vec<u8>> {
            let tokens = tokens(tokenizer, doc);
            let sep: &[u8] = match tokenizer {
                Tokenizer::Whitespace | Tokenizer::Word => b" ",
                _ => b"",
            };
            let mut out = Vec::new();
            for &n in widths {
                for i in 0..(tokens.len() + 1).saturating_sub(n) {
                    out.push(tokens[i..i + n].join(sep));
                }
            }
            out
        }
    }

    fn tokenizer_strategy() -> impl proptest::strategy::Strategy<Value = Tokenizer> {
        proptest::sample::select(vec![
            Tokenizer::Whitespace,
            Tokenizer::Word,
            Tokenizer::Char,
            Tokenizer::Byte,
        ])
    }

    fn doc_strategy() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        // Bias towards separators, ASCII letters and UTF-8 lead bytes.
        let byte = proptest::prop_oneof![
            proptest::sample::select(b" \t\n\x0b\x0c\r_aZ9.".to_vec()),
            proptest::prelude::any::<u8>(),
        ];
        proptest::collection::vec(byte, 0..200)
    }

    proptest::proptest! {
        #[test]
        fn ids_sequence_counts_equal_naive_definitions(
            tokenizer in tokenizer_strategy(),
            widths in proptest::collection::vec(1usize..6, 1..4),
            num_buckets in 1u64..1000,
            doc in doc_strategy(),
            offset in 0usize..8,
            max_tokens in 1usize..40,
        ) {
            let h = NgramHasher::new(NgramConfig {
                tokenizer,
                widths: widths.clone(),
                lowercase: false,
                hash: HashFamily::Fingerprint64,
                num_buckets,
            }).unwrap();
            // Every alignment of the input buffer.
            let mut buffer = vec![0u8; offset];
            buffer.extend_from_slice(&doc);
            let doc = &buffer[offset..];

            let want: Vec<i64> = naive::grams(tokenizer, &widths, doc)
                .iter()
                .map(|g| (fingerprint64(g) % num_buckets) as i64)
                .collect();
            let mut ids = Vec::new();
            h.ids(doc, &mut ids);
            proptest::prop_assert_eq!(&ids, &want);

            let mut seq = vec![0i64; max_tokens];
            let written = NgramSequence::new(h.clone(), max_tokens, -1).unwrap().fill(doc, &mut seq);
            proptest::prop_assert_eq!(written, want.len().min(max_tokens));
            proptest::prop_assert_eq!(&seq[..written], &want[..written]);
            proptest::prop_assert!(seq[written..].iter().all(|&p| p == -1));

            let mut row = SparseRow::default();
            let plain = CountOptions { binary: false, alternate_sign: false, norm: Norm::None };
            NgramCounter::new(h.clone(), plain).unwrap().counts(doc, &mut row);
            let mut naive_counts = std::collections::BTreeMap::new();
            for id in &want {
                *naive_counts.entry(*id as u64).or_insert(0f32) += 1.0;
            }
            let got: Vec<(u64, f32)> = row.indices.iter().copied().zip(row.values.iter().copied()).collect();
            let want_counts: Vec<(u64, f32)> = naive_counts.into_iter().collect();
            proptest::prop_assert_eq!(got, want_counts);
        }

        #[test]
        fn sklearn_tokenizers_never_panic_and_stay_in_range(
            tokenizer in proptest::sample::select(vec![
                Tokenizer::SklearnWord, Tokenizer::SklearnChar, Tokenizer::SklearnCharWb,
            ]),
            widths in proptest::collection::vec(1usize..8, 1..4),
            num_buckets in 1u64..100,
            text in ".{0,80}",
            lowercase in proptest::prelude::any::<bool>(),
        ) {
            let h = NgramHasher::new(NgramConfig {
                tokenizer, widths, lowercase, hash: HashFamily::Murmur3, num_buckets,
            }).unwrap();
            let mut ids = Vec::new();
            h.ids(text.as_bytes(), &mut ids);
            proptest::prop_assert!(ids.iter().all(|&i| (0..num_buckets as i64).contains(&i)));
            let mut row = SparseRow::default();
            let l2 = CountOptions { binary: false, alternate_sign: true, norm: Norm::L2 };
            NgramCounter::new(h.clone(), l2).unwrap().counts(text.as_bytes(), &mut row);
            let norm: f64 = row.values.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
            proptest::prop_assert!(row.values.is_empty() || norm == 0.0 || (norm - 1.0).abs() < 1e-5);
        }
    }
}
