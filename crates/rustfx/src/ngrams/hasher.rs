//! [`NgramHasher`]: the bucket ids of every n-gram of a document, as a
//! ragged row, and the n-grams themselves.

use super::config::{
    HashFamily, NgramConfig, Tokenizer, MAX_MURMUR3_BUCKETS, MAX_NGRAM_WIDTH, MAX_NGRAM_WIDTHS,
};
use super::grams::Order;
use super::hash::{Bucket, BucketStream, Reduce};
use super::scratch::{with_gram_scratch, with_later_ids};
use super::sink::RowIds;
use super::utf8::lossy_char_count;
use crate::extractor::{value_count_mismatch, write_values_by_copy};
use crate::output::Offsets;
use crate::{Error, Result};
use std::ops::ControlFlow;

/// Tokenizes, forms n-grams and hashes them. Immutable, so one hasher can
/// serve many threads at once.
#[derive(Clone, Debug)]
pub struct NgramHasher {
    pub(super) config: NgramConfig,
    pub(super) reduce: Reduce,
    /// MurmurHash3 whose n-grams' lengths vary: see `gram_bucket`.
    pub(super) short_murmur3: bool,
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

    /// Appends the bucket id of every n-gram of `doc` to `ids`.
    pub fn ids(&self, doc: &[u8], ids: &mut Vec<i64>) {
        self.append_rows(std::slice::from_ref(&doc), ids, |_| ());
    }

    /// [`ids`](Self::ids) of each of `docs`, appended to `ids`, with
    /// `ids.len()` pushed to `offsets` after each document. One stream of
    /// buckets serves the whole batch: on short records, starting a stream
    /// (and hashing its last, partial batch) per document cost as much as
    /// the n-grams themselves.
    pub fn id_rows(&self, docs: &[&[u8]], ids: &mut Vec<i64>, offsets: &mut Offsets) {
        offsets.reserve(docs.len());
        self.append_rows(docs, ids, |end| offsets.push(end));
    }

    /// The ids of `docs` appended to `ids`, calling `row_end(ids.len())`
    /// after each document. Every width's n-grams come from one pass over
    /// a document's tokens: a short document's in output order (straight
    /// to `ids`, a batch of hashes at a time), a longer one's grouped by
    /// width, the groups after the first waiting in buffers until the
    /// document ends. A single width is always in order (byte and character
    /// n-grams: one id per byte), so its ids take the first way.
    fn append_rows(&self, docs: &[&[u8]], ids: &mut Vec<i64>, mut row_end: impl FnMut(usize)) {
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
                    row_end(end);
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
    /// (the output's: each width in turn), into `out`, sized by `value_count`
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
            false => Err(value_count_mismatch(room, ids)),
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

/// The ragged output of `hashed_ngrams`.
impl crate::extractor::RaggedExtractor for NgramHasher {
    type Value = i64;

    fn append_values(&self, doc: &[u8], ids: &mut Vec<i64>) {
        self.ids(doc, ids);
    }

    fn append_rows(&self, docs: &[&[u8]], ids: &mut Vec<i64>, offsets: &mut Offsets) {
        self.id_rows(docs, ids, offsets);
    }

    fn counts_up_front(&self) -> bool {
        matches!(self.config.tokenizer, Tokenizer::Byte | Tokenizer::Char)
    }

    fn value_count(&self, doc: &[u8]) -> Option<usize> {
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

    fn value_bound(&self, doc: &[u8]) -> Option<usize> {
        // A character takes a byte at least.
        self.counts_up_front()
            .then(|| window_count(&self.config.widths, doc.len()))
    }

    fn write_values(&self, docs: &[&[u8]], out: &mut [i64]) -> Result<()> {
        match self.config.tokenizer {
            Tokenizer::Byte | Tokenizer::Char => self.write_ids_in_order(docs, out),
            _ => write_values_by_copy(self, docs, out),
        }
    }
}

/// The windows of each of `widths` over `units` bytes or characters.
fn window_count(widths: &[usize], units: usize) -> usize {
    widths.iter().map(|&w| (units + 1).saturating_sub(w)).sum()
}
