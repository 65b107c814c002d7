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
//! a slice (`grams`); nothing is allocated per token or per n-gram, and the
//! whole document is never copied. So the first ids of an [`NgramSequence`]
//! cost only the part of the document they come from. [`NgramHasher::ids`]
//! and the counts form all widths in one pass over the tokens. Sparse counts
//! sort the buckets of reused buffers (`count`); dense counts sum straight
//! into the row.

mod count;
mod grams;
mod scan;
#[cfg(test)]
mod tests;

pub use count::CountScratch;

use crate::extractor::{check_width, id_count_mismatch, write_id_rows_by_copy, RowExtractor};
use crate::hashing::{
    fingerprint64, murmur3_x86_32, murmur3_x86_32_short, sklearn_bucket_of_i32_min,
};
use crate::hashing::{Fingerprint64Batch, FINGERPRINT64_BATCH};

/// scikit-learn's seed for MurmurHash3 (`HashingVectorizer`, `FeatureHasher`).
const MURMUR3_SEED: u32 = 0;
use crate::output::SparseRow;
use crate::{Error, ErrorKind, Result};
use count::normalize_dense;
use grams::{
    ascii_collapsed_ngrams, byte_ngrams, char_ngrams, char_wb_ngrams, lossy_char_count, AsciiWords,
    Gram, PythonChars, SklearnWords, TokenBuffer, TokenSource, SHORT_DOC,
};
use scan::ByteClass;
use std::cell::{Cell, RefCell};
use std::ops::ControlFlow;
use std::thread::LocalKey;

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

/// Tokenizes, forms n-grams and hashes them. Immutable, so one hasher can
/// serve many threads at once.
#[derive(Clone, Debug)]
pub struct NgramHasher {
    config: NgramConfig,
    reduce: Reduce,
    /// MurmurHash3 whose n-grams' lengths vary: see `gram_bucket`.
    short_murmur3: bool,
}

/// How a hash becomes a bucket index, chosen once for `num_buckets`.
#[derive(Clone, Copy, Debug)]
enum Reduce {
    /// A power of two: `h & mask`, no division.
    Mask(u64),
    /// Murmur3 buckets fit 32 bits (a 32-bit division is cheaper).
    Mod32(u32),
    Mod64(u64),
}

impl Reduce {
    fn new(num_buckets: u64) -> Self {
        if num_buckets.is_power_of_two() {
            Reduce::Mask(num_buckets - 1)
        } else if let Ok(n) = u32::try_from(num_buckets) {
            Reduce::Mod32(n)
        } else {
            Reduce::Mod64(num_buckets)
        }
    }

    #[inline(always)]
    fn apply64(self, h: u64) -> u64 {
        match self {
            Reduce::Mask(mask) => h & mask,
            Reduce::Mod32(n) => h % u64::from(n),
            Reduce::Mod64(n) => h % n,
        }
    }

    #[inline(always)]
    fn apply32(self, h: u32) -> u64 {
        match self {
            Reduce::Mask(mask) => u64::from(h) & mask,
            Reduce::Mod32(n) => u64::from(h % n),
            Reduce::Mod64(n) => u64::from(h) % n,
        }
    }
}

/// How the n-grams of a document are produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// In output order, one pass over the tokens per width, so a caller that
    /// stops early never scans further than it needs.
    Output,
    /// One pass over the tokens for all widths, each n-gram tagged with a
    /// group: concatenating the groups, each in the order given, is the
    /// output order (the group of a token n-gram is its width's position in
    /// `widths`; other tokenizers, and the tokens of a short document,
    /// produce output order in group 0).
    OnePass,
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
        let reduce = Reduce::new(config.num_buckets);
        // `char` n-grams of ASCII text are byte n-grams.
        let short_murmur3 = config.hash == HashFamily::Murmur3
            && !matches!(config.tokenizer, Tokenizer::Byte | Tokenizer::Char);
        Ok(NgramHasher {
            config,
            reduce,
            short_murmur3,
        })
    }

    /// The configuration this hasher was built from.
    pub fn config(&self) -> &NgramConfig {
        &self.config
    }

    /// The bucket of one n-gram.
    #[inline]
    pub fn bucket(&self, gram: &[u8]) -> Bucket {
        match self.config.hash {
            HashFamily::Fingerprint64 => Bucket {
                index: self.reduce.apply64(fingerprint64(gram)),
                sign: 1,
            },
            HashFamily::Murmur3 => self.murmur3_bucket(murmur3_x86_32(gram, MURMUR3_SEED)),
        }
    }

    /// [`bucket`](Self::bucket) of `padded[..len]` (all of `padded` if
    /// shorter), hashed as the extractors hash an n-gram with the bytes
    /// after it in its buffer: the same bucket, found without a branch on
    /// the length where the hash and the padding allow (see `gram_bucket`).
    pub fn bucket_padded(&self, padded: &[u8], len: usize) -> Bucket {
        self.gram_bucket(Gram::new(padded, len.min(padded.len())))
    }

    /// [`bucket`](Self::bucket) of a [`Gram`]. With MurmurHash3, a short
    /// n-gram of words or characters, whose lengths vary from one to the
    /// next, takes the hash with no branch on the length (which its
    /// padding allows); n-grams of bytes (all of their width's length, so
    /// the general hash's branches are predicted) do not: 0.84x on byte
    /// 4-grams. Out of line, as `bucket` was: inlined, the short hash made
    /// the loops that make n-grams too large for their callbacks to be
    /// inlined (byte 4-grams, which never take it, ran 0.90x).
    #[inline(never)]
    fn gram_bucket(&self, gram: Gram<'_>) -> Bucket {
        match gram.padded().first_chunk::<16>() {
            Some(head) if self.short_murmur3 && gram.len() <= 16 => {
                self.murmur3_bucket(murmur3_x86_32_short(head, gram.len(), MURMUR3_SEED))
            }
            _ => self.bucket(gram.bytes()),
        }
    }

    /// The bucket and sign of an n-gram of MurmurHash3 `hash`, as
    /// scikit-learn derives them from the hash read as `i32`.
    #[inline(always)]
    fn murmur3_bucket(&self, hash: u32) -> Bucket {
        let h = hash as i32;
        let index = if h == i32::MIN {
            sklearn_bucket_of_i32_min(self.config.num_buckets)
        } else {
            self.reduce.apply32(h.unsigned_abs())
        };
        Bucket {
            index,
            sign: if h >= 0 { 1 } else { -1 },
        }
    }

    /// Calls `f` with the bytes of every n-gram of `doc`, in output order,
    /// until `f` breaks. Tokens are found as the n-grams are consumed, so
    /// stopping early skips the rest of the document (each width after the
    /// first scans again from the start; the non-`whitespace`/`word`/`byte`
    /// tokenizers first check whether `doc` is ASCII, which costs little).
    pub fn for_each_gram(&self, doc: &[u8], mut f: impl FnMut(&[u8]) -> ControlFlow<()>) {
        with_gram_scratch(|gram_scratch| {
            let _ = self.grams(doc, Order::Output, gram_scratch, &mut |_, gram| {
                f(gram.bytes())
            });
        });
    }

    /// Every n-gram of `doc`, with its group, in `order`.
    fn grams<'d>(
        &self,
        doc: &'d [u8],
        order: Order,
        gram_scratch: &mut GramScratch<'_, 'd>,
        f: &mut impl FnMut(usize, Gram<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let buffer = &mut *gram_scratch.buffer;
        let widths = &self.config.widths[..];
        let lowercase = self.config.lowercase;
        let space = Some(b' ');
        match self.config.tokenizer {
            Tokenizer::Whitespace => {
                self.ascii_words(doc, ByteClass::Whitespace, 1, order, gram_scratch, f)
            }
            Tokenizer::Word => self.ascii_words(doc, ByteClass::NonWord, 1, order, gram_scratch, f),
            Tokenizer::Byte => byte_ngrams(doc, lowercase, widths, &mut |gram| f(0, gram)),
            // On ASCII, characters are bytes.
            Tokenizer::Char if doc.is_ascii() => {
                byte_ngrams(doc, lowercase, widths, &mut |gram| f(0, gram))
            }
            Tokenizer::Char => with_char_buffers(|text, starts| {
                passes(widths, order, |widths| {
                    char_ngrams(doc, lowercase, widths, text, starts, f)
                })
            }),
            // On ASCII, Python's `\w` is `[A-Za-z0-9_]` and `str.lower()` is
            // ASCII lowercasing, which keeps every byte's class.
            Tokenizer::SklearnWord if doc.is_ascii() => {
                self.ascii_words(doc, ByteClass::NonWord, 2, order, gram_scratch, f)
            }
            Tokenizer::SklearnWord => joined(space, doc.len(), widths, order, buffer, f, || {
                SklearnWords::new(doc, lowercase)
            }),
            Tokenizer::SklearnChar if doc.is_ascii() => {
                let mut buffer = Vec::new();
                passes(widths, order, |widths| {
                    ascii_collapsed_ngrams(doc, lowercase, widths, &mut buffer, &mut |k, gram| {
                        f(k, Gram::exact(gram))
                    })
                })
            }
            Tokenizer::SklearnChar => {
                let text = String::from_utf8_lossy(doc);
                joined(None, doc.len(), widths, order, buffer, f, || {
                    PythonChars::new(&text, lowercase)
                })
            }
            Tokenizer::SklearnCharWb => {
                char_wb_ngrams(doc, lowercase, widths, &mut |gram| f(0, gram))
            }
        }
    }

    /// n-grams of the runs of non-`class` bytes of at least `min_len` bytes,
    /// joined with " ", as [`joined`] gives them. A pass of unigrams alone that
    /// keeps the text's case hands out slices of the text itself, with the rest
    /// of the document after each (a hash reads whole words past the token):
    /// no token is copied. Measured on the README pipeline's job (the first
    /// 1,024 whitespace ids of each file, mostly unigrams), the FX took 40 ms
    /// instead of 56.
    fn ascii_words<'d>(
        &self,
        doc: &'d [u8],
        class: ByteClass,
        min_len: usize,
        order: Order,
        gram_scratch: &mut GramScratch<'_, 'd>,
        f: &mut impl FnMut(usize, Gram<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let (widths, lowercase) = (&self.config.widths[..], self.config.lowercase);
        let GramScratch { buffer, words } = gram_scratch;
        passes(widths, token_order(order, doc.len()), |widths| {
            // One scanner for the batch (the hasher's tokenizer, so the
            // same class and minimum length), started over on each record.
            let words = match words {
                Some(words) => {
                    words.reset(doc);
                    words
                }
                None => words.insert(AsciiWords::new(doc, class, lowercase, min_len)),
            };
            if widths != [1] || lowercase {
                return buffer.emit_windows(Some(b' '), words, widths, f);
            }
            while let Some((start, end)) = words.next_range() {
                f(0, Gram::new(&doc[start..], end - start))?;
            }
            ControlFlow::Continue(())
        })
    }

    /// Appends the bucket id of every n-gram of `doc` to `ids`.
    pub fn ids(&self, doc: &[u8], ids: &mut Vec<i64>) {
        self.append_rows(std::slice::from_ref(&doc), ids, |_| ());
    }

    /// [`ids`](Self::ids) of each of `docs`, appended to `ids`, with
    /// `ids.len()` pushed to `row_ends` after each document. One stream of
    /// buckets serves the whole batch: on short records, starting a stream
    /// (and hashing its last, partial batch) per document cost as much as
    /// the n-grams themselves.
    pub fn id_rows(&self, docs: &[&[u8]], ids: &mut Vec<i64>, row_ends: &mut Vec<u64>) {
        row_ends.reserve(docs.len());
        self.append_rows(docs, ids, |end| row_ends.push(end));
    }

    /// The ids of `docs` appended to `ids`, calling `row_end(ids.len())`
    /// after each document. Every width's n-grams come from one pass over
    /// a document's tokens: a short document's in output order (straight
    /// to `ids`, a batch of hashes at a time), a longer one's grouped by
    /// width, the groups after the first waiting in buffers until the
    /// document ends. A single width is always in order (byte and character
    /// n-grams: one id per byte), so its ids take the first way.
    fn append_rows(&self, docs: &[&[u8]], ids: &mut Vec<i64>, mut row_end: impl FnMut(u64)) {
        // Room for a typical text's ids up front: growing from empty copies
        // the row a dozen times, and in TF's threads the reallocations cost
        // more than the copies (ragged word ids: +3-4% on one thread, 1.45x
        // -> 1.83x on two). Capped: a longer batch grows as before.
        let bytes: usize = docs.iter().map(|doc| doc.len()).sum();
        let typical = (bytes / TYPICAL_BYTES_PER_TOKEN + docs.len()) * self.config.widths.len();
        ids.reserve(typical.min(MAX_IDS_RESERVED));
        with_later_ids(|later| {
            later.resize_with(self.config.widths.len() - 1, Vec::new);
            // Every id pushed so far; each lands in `ids`, in order.
            let start = ids.len();
            let mut buckets = BucketStream::new(self, RowIds::new(ids, later));
            with_gram_scratch(|gram_scratch| {
                for doc in docs {
                    let mut waiting = false;
                    let _ = self.grams(doc, Order::OnePass, gram_scratch, &mut |group, gram| {
                        buckets.push(group, gram);
                        waiting |= group > 0;
                        ControlFlow::Continue(())
                    });
                    let end = start + buckets.pushed();
                    if waiting {
                        if buckets.sink().appends_later() {
                            // The last document's groups still wait: rare,
                            // as it takes a long document of few n-grams.
                            buckets.flush();
                        }
                        buckets.sink().append_later_at(end);
                    }
                    row_end(end as u64);
                }
            });
            buckets.finish();
            for buffer in later.iter_mut() {
                // A huge document's buffers are not kept for the thread.
                buffer.shrink_to(KEEP_LATER_IDS);
            }
        });
    }

    /// The ids of `docs`, written in place in the order `grams` gives them
    /// (the output's: each width in turn), into `out`, sized by `id_count`
    /// (byte and character n-grams, whose widths are passes over the
    /// document with no tokenizing to repeat).
    fn write_ids_in_order(&self, docs: &[&[u8]], out: &mut [i64]) -> Result<()> {
        let room = out.len();
        let (mut slots, mut ids) = (out.iter_mut(), 0usize);
        let mut buckets = BucketStream::new(self, |_, bucket: Bucket| {
            if let Some(slot) = slots.next() {
                *slot = bucket.index as i64;
            }
            ids += 1;
        });
        with_gram_scratch(|gram_scratch| {
            for doc in docs {
                let _ = self.grams(doc, Order::Output, gram_scratch, &mut |_, gram| {
                    buckets.push(0, gram);
                    ControlFlow::Continue(())
                });
            }
        });
        buckets.finish();
        match ids == room {
            true => Ok(()),
            false => Err(id_count_mismatch(room, ids)),
        }
    }
}

/// Bytes per token assumed when [`NgramHasher::ids`] reserves room (code
/// and prose average 5-8 per whitespace token).
const TYPICAL_BYTES_PER_TOKEN: usize = 6;

/// The most ids [`NgramHasher::ids`] reserves room for up front (8 MiB).
const MAX_IDS_RESERVED: usize = 1 << 20;

/// Capacity (ids) of the buffers of [`NgramHasher::ids`] kept between
/// documents.
const KEEP_LATER_IDS: usize = 1 << 16;

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
        let width = out.len();
        if width > 0 {
            let mut buckets = BucketStream::new(&self.hasher, |at, bucket: Bucket| {
                if let Some(slot) = out.get_mut(at) {
                    *slot = bucket.index as i64;
                }
            });
            with_gram_scratch(|gram_scratch| {
                let _ = self
                    .hasher
                    .grams(doc, Order::Output, gram_scratch, &mut |_, gram| {
                        buckets.push(written, gram);
                        written += 1;
                        if written == width {
                            ControlFlow::Break(())
                        } else {
                            ControlFlow::Continue(())
                        }
                    });
            });
            buckets.finish();
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

    /// One stream of buckets for the whole batch, as
    /// [`NgramHasher::id_rows`] does: a bucket's tag is its slot in `out`.
    fn write_rows(&self, docs: &[&[u8]], out: &mut [i64]) -> Result<()> {
        let width = self.max_tokens;
        check_width(out.len(), docs.len().saturating_mul(width))?;
        let mut written_per_row = Vec::with_capacity(docs.len());
        let mut buckets = BucketStream::new(&self.hasher, |at, bucket: Bucket| {
            if let Some(slot) = out.get_mut(at) {
                *slot = bucket.index as i64;
            }
        });
        with_gram_scratch(|gram_scratch| {
            for (row, doc) in docs.iter().enumerate() {
                let first = row * width;
                let mut written = 0;
                let _ = self
                    .hasher
                    .grams(doc, Order::Output, gram_scratch, &mut |_, gram| {
                        buckets.push(first + written, gram);
                        written += 1;
                        if written == width {
                            ControlFlow::Break(())
                        } else {
                            ControlFlow::Continue(())
                        }
                    });
                written_per_row.push(written);
            }
        });
        buckets.finish();
        for (row, written) in out.chunks_exact_mut(width).zip(written_per_row) {
            row[written..].fill(self.pad_value);
        }
        Ok(())
    }

    /// An estimate, not a bound: the row is full after `max_tokens` ids,
    /// at most one token each, and a token with its separator rarely takes
    /// more than 16 bytes.
    fn work_bytes_hint(&self) -> Option<usize> {
        Some(self.max_tokens.saturating_mul(SEQUENCE_BYTES_PER_ID))
    }
}

/// Bytes of input per id assumed by [`NgramSequence`]'s work hint.
const SEQUENCE_BYTES_PER_ID: usize = 16;

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
        with_scratch(|scratch| self.counts_with(doc, row, scratch));
    }

    /// [`counts`](Self::counts) with the caller's buffers, reused from one
    /// document to the next.
    ///
    /// ```
    /// use rustfx::ngrams::*;
    /// use rustfx::output::SparseRow;
    /// let hasher = NgramHasher::new(NgramConfig {
    ///     tokenizer: Tokenizer::Whitespace,
    ///     widths: vec![1],
    ///     lowercase: false,
    ///     hash: HashFamily::Fingerprint64,
    ///     num_buckets: 1 << 20,
    /// })
    /// .unwrap();
    /// let options = CountOptions { binary: false, alternate_sign: false, norm: Norm::None };
    /// let counter = NgramCounter::new(hasher, options).unwrap();
    /// let (mut scratch, mut row) = (CountScratch::new(), SparseRow::default());
    /// counter.counts_with(b"to be or not to be", &mut row, &mut scratch);
    /// assert_eq!(row.values.iter().sum::<f32>(), 6.0);
    /// ```
    pub fn counts_with(&self, doc: &[u8], row: &mut SparseRow, scratch: &mut CountScratch) {
        let signed = self.options.alternate_sign;
        scratch.begin(self.hasher.config.num_buckets, signed);
        let mut buckets = BucketStream::new(&self.hasher, |_, bucket: Bucket| {
            scratch.add(bucket.index, bucket.sign < 0);
        });
        with_gram_scratch(|gram_scratch| {
            let _ = self
                .hasher
                .grams(doc, Order::OnePass, gram_scratch, &mut |_, gram| {
                    buckets.push(0, gram);
                    ControlFlow::Continue(())
                });
        });
        buckets.finish();
        // Sorted, so norms add up in scikit-learn's (CSR) order.
        let summed = scratch.finish();
        let binary = self.options.binary;
        let value = |sum: i64| if binary { 1.0 } else { sum as f64 };
        let scale = match self.options.norm {
            Norm::None => 1.0,
            Norm::L1 => summed.iter().map(|&(_, v)| value(v).abs()).sum::<f64>(),
            Norm::L2 => summed
                .iter()
                .map(|&(_, v)| value(v) * value(v))
                .sum::<f64>()
                .sqrt(),
        };
        // Two extends of exact length (each one allocation at most).
        row.indices.clear();
        row.indices.extend(summed.iter().map(|&(index, _)| index));
        row.values.clear();
        row.values.extend(summed.iter().map(|&(_, sum)| {
            let value = value(sum);
            (if scale > 0.0 { value / scale } else { value }) as f32
        }));
    }
}

thread_local! {
    static COUNT_SCRATCH: Cell<CountScratch> = Cell::new(CountScratch::new());
    static LATER_IDS: Cell<Vec<Vec<i64>>> = const { Cell::new(Vec::new()) };
    // A RefCell, not a Cell taken and put back: the buffer is 1 KiB of
    // token starts plus a Vec, and moving it per document showed in the
    // profile of short records.
    static TOKEN_BUFFER: RefCell<TokenBuffer> = const { RefCell::new(TokenBuffer::new()) };
    static CHAR_BUFFERS: RefCell<(Vec<u8>, Vec<usize>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Runs `f` with this thread's value of `key`. The value is taken out while
/// in use, so a nested call (or one during thread exit) gets a fresh one:
/// nothing here can panic.
fn with_thread_local<S: Default + 'static, T>(
    key: &'static LocalKey<Cell<S>>,
    f: impl FnOnce(&mut S) -> T,
) -> T {
    let mut value = key.try_with(Cell::take).unwrap_or_default();
    let out = f(&mut value);
    let _ = key.try_with(|cell| cell.set(value));
    out
}

fn with_scratch<T>(f: impl FnOnce(&mut CountScratch) -> T) -> T {
    with_thread_local(&COUNT_SCRATCH, f)
}

fn with_later_ids<T>(f: impl FnOnce(&mut Vec<Vec<i64>>) -> T) -> T {
    with_thread_local(&LATER_IDS, f)
}

/// Runs `f` with this thread's token buffer: a fresh one per document cost
/// an allocation and a 4 KiB clear, as much as the n-grams of a short
/// record (a URL, a log line). Batches take it once, not per document
/// (4% of whitespace ids of log lines). A buffer a huge token grew is not
/// kept.
fn with_gram_scratch<'d, T>(mut f: impl FnMut(&mut GramScratch<'_, 'd>) -> T) -> T {
    let kept = TOKEN_BUFFER.try_with(|cell| {
        let mut buffer = cell.try_borrow_mut().ok()?;
        let out = f(&mut GramScratch::new(&mut buffer));
        buffer.release_above(KEEP_TOKEN_BUFFER);
        Some(out)
    });
    match kept {
        Ok(Some(out)) => out,
        // A nested call, or one during thread exit: a fresh buffer.
        _ => f(&mut GramScratch::new(&mut TokenBuffer::new())),
    }
}

/// What the documents of a batch (with lifetime `'d`) reuse from one to
/// the next: this thread's token buffer, and a word scanner started over
/// on each (a new one clears an 824-byte array of edges: 1.7% of the
/// profile of whitespace ids of lines).
struct GramScratch<'b, 'd> {
    buffer: &'b mut TokenBuffer,
    words: Option<AsciiWords<'d>>,
}

impl<'b> GramScratch<'b, '_> {
    fn new(buffer: &'b mut TokenBuffer) -> Self {
        GramScratch {
            buffer,
            words: None,
        }
    }
}

/// Runs `f` with this thread's buffers of [`char_ngrams`] (bounded: a
/// block of text and its character starts).
fn with_char_buffers<T>(mut f: impl FnMut(&mut Vec<u8>, &mut Vec<usize>) -> T) -> T {
    let kept = CHAR_BUFFERS.try_with(|cell| {
        let mut buffers = cell.try_borrow_mut().ok()?;
        let (text, starts) = &mut *buffers;
        Some(f(text, starts))
    });
    match kept {
        Ok(Some(out)) => out,
        // A nested call, or one during thread exit: fresh buffers.
        _ => f(&mut Vec::new(), &mut Vec::new()),
    }
}

/// Bytes of token buffer kept by a thread between documents.
const KEEP_TOKEN_BUFFER: usize = 1 << 16;

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
        self.sum_into(doc, out, EXACT_F32_SUMS)
    }
}

impl NgramCounts {
    /// The row of `doc`, summed in `out` (of `width` values) when it has at
    /// most `exact_sums` n-grams (a parameter so tests reach both paths).
    fn sum_into(&self, doc: &[u8], out: &mut [f32], exact_sums: usize) -> Result<()> {
        out.fill(0.0);
        let hasher = &self.counter.hasher;
        let options = self.counter.options;
        let mut grams = 0usize;
        let mut outside = None;
        // Summed straight into the row: f32 holds every integer up to 2^24
        // exactly, and no partial sum exceeds the number of n-grams.
        let mut buckets = BucketStream::new(hasher, |_, bucket: Bucket| {
            // Every index is below num_buckets = out.len(); checked anyway,
            // and a broken invariant is reported, never written past.
            let Some(slot) = usize::try_from(bucket.index)
                .ok()
                .and_then(|i| out.get_mut(i))
            else {
                outside = Some(bucket.index);
                return;
            };
            if options.binary {
                *slot = 1.0;
            } else if options.alternate_sign {
                *slot += f32::from(bucket.sign);
            } else {
                *slot += 1.0;
            }
        });
        with_gram_scratch(|gram_scratch| {
            let _ = hasher.grams(doc, Order::OnePass, gram_scratch, &mut |_, gram| {
                buckets.push(0, gram);
                grams += 1;
                ControlFlow::Continue(())
            });
        });
        buckets.finish();
        if let Some(index) = outside {
            return Err(Error::new(
                ErrorKind::Internal,
                format!("bucket {index} out of range (a bug in rustfx)"),
            ));
        }
        if !options.binary && grams > exact_sums {
            // Some sum may have rounded: take the exact sparse row instead.
            let mut row = SparseRow::default();
            self.counter.counts(doc, &mut row);
            out.fill(0.0);
            for (&index, &value) in row.indices.iter().zip(&row.values) {
                if let Some(slot) = usize::try_from(index).ok().and_then(|i| out.get_mut(i)) {
                    *slot = value;
                }
            }
            return Ok(());
        }
        normalize_dense(out, options.norm);
        Ok(())
    }
}

/// The most n-grams whose counts f32 sums hold exactly (2^24).
const EXACT_F32_SUMS: usize = 1 << 24;

/// Where a [`BucketStream`] hands its buckets, each with its n-gram's tag:
/// any `FnMut(usize, Bucket)`, or a struct with more to do.
trait BucketSink {
    fn put(&mut self, tag: usize, bucket: Bucket);

    /// A batch of Fingerprint64 buckets (sign +1), in order.
    #[inline(always)]
    fn put_batch(&mut self, tags: &[usize], indices: &[u64]) {
        put_each(self, tags, indices);
    }
}

/// [`BucketSink::put_batch`] a bucket at a time.
#[inline(always)]
fn put_each<S: BucketSink + ?Sized>(sink: &mut S, tags: &[usize], indices: &[u64]) {
    for (&tag, &index) in tags.iter().zip(indices) {
        sink.put(tag, Bucket { index, sign: 1 });
    }
}

impl<F: FnMut(usize, Bucket)> BucketSink for F {
    #[inline(always)]
    fn put(&mut self, tag: usize, bucket: Bucket) {
        self(tag, bucket)
    }
}

/// The ids of [`NgramHasher::append_rows`]: group 0's go straight to
/// `ids`, the other groups' wait in `later` until the stream has handed out
/// their document's last id. Appending them then, rather than flushing the
/// stream at the end of the document, keeps one stream for a batch of
/// files too (a partial batch hashed per file cost 5% on 6 KB files).
struct RowIds<'a> {
    ids: &'a mut Vec<i64>,
    later: &'a mut Vec<Vec<i64>>,
    /// Ids handed out, counted as `append_rows` counts the pushed ones.
    handed: usize,
    /// When `handed` reaches it, `later` is appended (`usize::MAX`: never).
    append_at: usize,
}

impl<'a> RowIds<'a> {
    fn new(ids: &'a mut Vec<i64>, later: &'a mut Vec<Vec<i64>>) -> Self {
        let handed = ids.len();
        RowIds {
            ids,
            later,
            handed,
            append_at: usize::MAX,
        }
    }

    /// Whether groups wait to be appended.
    fn appends_later(&self) -> bool {
        self.append_at != usize::MAX
    }

    /// Appends the waiting groups once `end` ids have been handed out
    /// (the end of their document), now if they have.
    fn append_later_at(&mut self, end: usize) {
        self.append_at = end;
        if self.handed == end {
            self.append_later();
        }
    }

    fn append_later(&mut self) {
        for buffer in self.later.iter_mut() {
            self.ids.extend_from_slice(buffer);
            buffer.clear();
        }
        self.append_at = usize::MAX;
    }
}

impl BucketSink for RowIds<'_> {
    #[inline(always)]
    fn put(&mut self, group: usize, bucket: Bucket) {
        let id = bucket.index as i64;
        match group.checked_sub(1).and_then(|g| self.later.get_mut(g)) {
            Some(buffer) => buffer.push(id),
            None => self.ids.push(id),
        }
        self.handed += 1;
        if self.handed == self.append_at {
            self.append_later();
        }
    }

    /// A batch all of group 0 with no group waiting (short records) goes
    /// to `ids` in one extend.
    #[inline(always)]
    fn put_batch(&mut self, tags: &[usize], indices: &[u64]) {
        if self.append_at == usize::MAX && tags.iter().all(|&tag| tag == 0) {
            self.ids.extend(indices.iter().map(|&index| index as i64));
            self.handed += indices.len();
            return;
        }
        put_each(self, tags, indices);
    }
}

/// The buckets of a stream of n-grams, handed to `sink` in order, each
/// with the tag it was pushed with. Fingerprint64 n-grams are hashed a
/// batch at a time where that pays (see [`Fingerprint64Batch`]); any other
/// hash, one at a time. [`finish`](Self::finish) hands out the rest.
struct BucketStream<'h, S: BucketSink> {
    hasher: &'h NgramHasher,
    batch: Option<Fingerprint64Batch>,
    tags: [usize; FINGERPRINT64_BATCH],
    sink: S,
    /// n-grams handed to the sink: with the batch's, all pushed (counted a
    /// batch at a time, not with a store per n-gram).
    handed: usize,
}

impl<'h, S: BucketSink> BucketStream<'h, S> {
    fn new(hasher: &'h NgramHasher, sink: S) -> Self {
        let batched = hasher.config.hash == HashFamily::Fingerprint64
            && Fingerprint64Batch::pays()
            && !forced_one_at_a_time();
        BucketStream {
            hasher,
            batch: batched.then(Fingerprint64Batch::new),
            tags: [0; FINGERPRINT64_BATCH],
            sink,
            handed: 0,
        }
    }

    /// How many n-grams have been pushed.
    #[inline(always)]
    fn pushed(&self) -> usize {
        self.handed + self.batch.as_ref().map_or(0, Fingerprint64Batch::len)
    }

    #[inline(always)]
    fn push(&mut self, tag: usize, gram: Gram<'_>) {
        let Some(batch) = self.batch.as_mut() else {
            return self.push_one(tag, gram);
        };
        self.tags[batch.len() % FINGERPRINT64_BATCH] = tag;
        batch.push(gram.padded(), gram.len());
        if batch.is_full() {
            self.flush();
        }
    }

    /// Hashes `gram` now. Not inlined: the callers' closures stay small
    /// enough to be inlined where the n-grams are formed (a call per
    /// n-gram cost short records 20%).
    #[inline(never)]
    fn push_one(&mut self, tag: usize, gram: Gram<'_>) {
        self.sink.put(tag, self.hasher.gram_bucket(gram));
        self.handed += 1;
    }

    fn flush(&mut self) {
        if let Some(batch) = self.batch.as_mut() {
            let reduce = self.hasher.reduce;
            let hashes = batch.hashes();
            let mut indices = [0u64; FINGERPRINT64_BATCH];
            for (index, &hash) in indices.iter_mut().zip(hashes) {
                *index = reduce.apply64(hash);
            }
            let count = hashes.len();
            self.handed += count;
            self.sink.put_batch(&self.tags[..count], &indices[..count]);
        }
    }

    /// The sink, for what it holds: flush first to see every bucket.
    fn sink(&mut self) -> &mut S {
        &mut self.sink
    }

    fn finish(mut self) {
        self.flush();
    }
}

/// Whether a test asked for the path of CPUs without vector lanes.
fn forced_one_at_a_time() -> bool {
    #[cfg(test)]
    return tests::one_at_a_time();
    #[cfg(not(test))]
    false
}

/// n-grams of the tokens of `source()` joined with `joiner`: in output
/// order, one pass per width (each pass a fresh source), or all widths in
/// one pass, grouped by width, which for a document of `doc_len` bytes at
/// most [`SHORT_DOC`] is the output order too (see
/// [`TokenBuffer::emit_windows`]).
fn joined<S: TokenSource>(
    joiner: Option<u8>,
    doc_len: usize,
    widths: &[usize],
    order: Order,
    buffer: &mut TokenBuffer,
    f: &mut impl FnMut(usize, Gram<'_>) -> ControlFlow<()>,
    source: impl Fn() -> S,
) -> ControlFlow<()> {
    passes(widths, token_order(order, doc_len), |widths| {
        buffer.emit_windows(joiner, &mut source(), widths, f)
    })
}

/// How token n-grams of a document of `doc_len` bytes are formed for
/// `order`: in one pass whenever that gives the output order.
fn token_order(order: Order, doc_len: usize) -> Order {
    if doc_len <= SHORT_DOC {
        Order::OnePass
    } else {
        order
    }
}

/// Runs `pass` on `widths` in `order`: once on all of them, or once on
/// each in turn.
fn passes(
    widths: &[usize],
    order: Order,
    mut pass: impl FnMut(&[usize]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    match order {
        Order::OnePass => pass(widths),
        Order::Output => {
            for width in widths {
                pass(std::slice::from_ref(width))?;
            }
            ControlFlow::Continue(())
        }
    }
}

/// The ragged output of `hashed_ngrams`.
impl crate::extractor::RaggedIdsExtractor for NgramHasher {
    fn append_ids(&self, doc: &[u8], ids: &mut Vec<i64>) {
        self.ids(doc, ids);
    }

    fn append_id_rows(&self, docs: &[&[u8]], ids: &mut Vec<i64>, row_ends: &mut Vec<u64>) {
        self.id_rows(docs, ids, row_ends);
    }

    fn counts_ids_up_front(&self) -> bool {
        matches!(self.config.tokenizer, Tokenizer::Byte | Tokenizer::Char)
    }

    fn id_count(&self, doc: &[u8]) -> Option<usize> {
        // Every window of each width over the bytes or the characters.
        let units = match self.config.tokenizer {
            Tokenizer::Byte => doc.len(),
            Tokenizer::Char if doc.is_ascii() => doc.len(),
            Tokenizer::Char => match std::str::from_utf8(doc) {
                Ok(text) => text.chars().count(),
                // Text in a legacy encoding: mostly ASCII, cheap to count.
                Err(_) if doc.iter().filter(|&&b| b >= 0x80).count() <= doc.len() / 8 => {
                    lossy_char_count(doc)
                }
                // A binary, a compressed file: counting its characters is
                // a second decoding, 25% more than gathering the ids and
                // copying them (8 bytes each), which its batch does.
                Err(_) => return None,
            },
            _ => return None,
        };
        Some(window_count(&self.config.widths, units))
    }

    fn id_bound(&self, doc: &[u8]) -> Option<usize> {
        // A character takes a byte at least.
        self.counts_ids_up_front()
            .then(|| window_count(&self.config.widths, doc.len()))
    }

    fn write_id_rows(&self, docs: &[&[u8]], out: &mut [i64]) -> Result<()> {
        match self.config.tokenizer {
            Tokenizer::Byte | Tokenizer::Char => self.write_ids_in_order(docs, out),
            _ => write_id_rows_by_copy(self, docs, out),
        }
    }
}

/// The windows of each of `widths` over `units` bytes or characters.
fn window_count(widths: &[usize], units: usize) -> usize {
    widths.iter().map(|&w| (units + 1).saturating_sub(w)).sum()
}

/// The sparse output of `hashed_ngrams`: a row as wide as the buckets.
impl crate::extractor::SparseRowsExtractor for NgramCounter {
    fn width(&self) -> usize {
        usize::try_from(self.hasher.config().num_buckets).unwrap_or(usize::MAX)
    }

    fn write_sparse_row(&self, doc: &[u8], row: &mut SparseRow) {
        self.counts(doc, row);
    }
}
