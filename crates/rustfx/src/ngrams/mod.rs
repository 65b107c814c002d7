//! Hashed n-grams: tokenize, form n-grams, hash each into a bucket.
//!
//! Two families share this one pipeline:
//! - TensorFlow parity (`whitespace`, `word`, `char`, `byte` tokenizers with
//!   [`HashFamily::Fingerprint64`]): the ids equal
//!   `tf.strings.to_hash_bucket_fast(tf.strings.ngrams(tf.strings.split(x), widths), n)`
//!   for the whitespace tokenizer, and so Keras `Hashing`.
//! - scikit-learn parity (`sklearn_word`, `sklearn_char`, `sklearn_char_wb`
//!   with [`HashFamily::Murmur3`]): [`NgramCounter::counts`] equals
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
//!
//! The work streams: token boundaries are found 64 bytes at a time as
//! bitmasks (`scan`); each token is copied once, lowercased on the way, into
//! a small buffer of the last tokens, where every n-gram that ends at it is
//! a slice (`token_buffer`); nothing is allocated per token or per n-gram,
//! and the whole document is never copied. So the first ids of an
//! [`NgramSequence`] cost only the part of the document they come from.
//! [`NgramHasher::ids`] and the counts form all widths in one pass over the
//! tokens. Sparse counts sort the buckets of reused buffers (`count`); dense
//! counts sum straight into the row.
//!
//! The stages, a file each, in the order a document goes through them:
//! - `config`: the public configuration types and their limits;
//! - `scan`, `tokenize` and `utf8`: token boundaries, the tokenizers, and
//!   UTF-8 decoded lossily;
//! - `token_buffer` and `window`: n-grams as windows over tokens, bytes or
//!   characters; `grams` picks them for the configured tokenizer;
//! - `hash`: from an n-gram to its bucket, a batch of hashes at a time
//!   where that pays;
//! - `sink` and `count`: where the buckets go (ids, sparse and dense
//!   counts);
//! - `scratch`: the per-thread buffers all of these reuse;
//! - `hasher`, `sequence` and `counter`: the extractors.
//! - `spans` and `explain`: explanations, from a simple walk of the
//!   n-grams with the bytes of the document each comes from.

mod config;
mod count;
mod counter;
mod explain;
mod grams;
mod hash;
mod hasher;
mod scan;
mod scratch;
mod sequence;
mod sink;
mod spans;
#[cfg(test)]
mod tests;
mod token_buffer;
mod tokenize;
mod utf8;
mod window;

pub use config::{
    CountOptions, HashFamily, NgramConfig, Norm, Tokenizer, MAX_DENSE_BUCKETS, MAX_MURMUR3_BUCKETS,
    MAX_NGRAM_WIDTH, MAX_NGRAM_WIDTHS, MAX_SEQUENCE_TOKENS,
};
pub use count::CountScratch;
pub use counter::{NgramCounter, NgramCounts};
pub use hash::Bucket;
pub use hasher::NgramHasher;
pub use sequence::NgramSequence;
