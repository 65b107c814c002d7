//! What an n-gram pipeline is configured with: the tokenizer, the hash
//! family, how counts are weighted, and the limits all are checked against.

/// The widest n-gram accepted.
pub const MAX_NGRAM_WIDTH: usize = 64;
/// The most n-gram widths accepted in one configuration.
pub const MAX_NGRAM_WIDTHS: usize = 64;
/// The most buckets for Murmur3 (scikit-learn's own limit, int32 max).
pub const MAX_MURMUR3_BUCKETS: u64 = i32::MAX as u64;
/// The largest `max_tokens` of an [`NgramSequence`](super::NgramSequence).
pub const MAX_SEQUENCE_TOKENS: usize = 1 << 24;
/// The most buckets of [`NgramCounts`](super::NgramCounts) (dense rows: 4 MiB
/// of float32 each).
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

crate::names::named_values!(Tokenizer, "tokenizer", {
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

crate::names::named_values!(HashFamily, "hash", {
    Fingerprint64 => "fingerprint64",
    Murmur3 => "murmur3",
});

/// The parameters of an [`NgramHasher`](super::NgramHasher).
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

crate::names::named_values!(Norm, "norm", {
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
