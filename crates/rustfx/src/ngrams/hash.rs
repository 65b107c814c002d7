//! From an n-gram to its bucket: the configured hash, reduced to
//! `0..num_buckets`, and for Murmur3 its sign. A [`BucketStream`] hashes
//! the n-grams of a document (or a batch of them) as they come, a batch of
//! Fingerprint64 hashes at a time where that pays, and hands each bucket to
//! a [`BucketSink`].

use super::config::HashFamily;
use super::hasher::NgramHasher;
use super::sink::BucketSink;
use super::window::Gram;
use crate::hashing::{
    fingerprint64, murmur3_x86_32, murmur3_x86_32_short, sklearn_bucket_of_i32_min,
};
use crate::hashing::{Fingerprint64Batch, FINGERPRINT64_BATCH};

/// scikit-learn's seed for MurmurHash3 (`HashingVectorizer`, `FeatureHasher`).
const MURMUR3_SEED: u32 = 0;

/// One n-gram's bucket and, for Murmur3, its sign.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// The bucket index, in `0..num_buckets`.
    pub index: u64,
    /// +1 or -1 (scikit-learn's `alternate_sign`); always +1 for Fingerprint64.
    pub sign: i8,
}

/// How a hash becomes a bucket index, chosen once for `num_buckets`.
#[derive(Clone, Copy, Debug)]
pub(super) enum Reduce {
    /// A power of two: `h & mask`, no division.
    Mask(u64),
    /// Murmur3 buckets fit 32 bits (a 32-bit division is cheaper).
    Mod32(u32),
    Mod64(u64),
}

impl Reduce {
    pub(super) fn new(num_buckets: u64) -> Self {
        if num_buckets.is_power_of_two() {
            Reduce::Mask(num_buckets - 1)
        } else if let Ok(n) = u32::try_from(num_buckets) {
            Reduce::Mod32(n)
        } else {
            Reduce::Mod64(num_buckets)
        }
    }

    #[inline(always)]
    pub(super) fn apply64(self, h: u64) -> u64 {
        match self {
            Reduce::Mask(mask) => h & mask,
            Reduce::Mod32(n) => h % u64::from(n),
            Reduce::Mod64(n) => h % n,
        }
    }

    #[inline(always)]
    pub(super) fn apply32(self, h: u32) -> u64 {
        match self {
            Reduce::Mask(mask) => u64::from(h) & mask,
            Reduce::Mod32(n) => u64::from(h % n),
            Reduce::Mod64(n) => u64::from(h) % n,
        }
    }
}

impl NgramHasher {
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
}

/// The buckets of a stream of n-grams, handed to `sink` in order, each
/// with the tag it was pushed with. Fingerprint64 n-grams are hashed a
/// batch at a time where that pays (see [`Fingerprint64Batch`]); any other
/// hash, one at a time. [`finish`](Self::finish) hands out the rest.
pub(super) struct BucketStream<'h, S: BucketSink> {
    hasher: &'h NgramHasher,
    batch: Option<Fingerprint64Batch>,
    tags: [usize; FINGERPRINT64_BATCH],
    sink: S,
    /// n-grams handed to the sink: with the batch's, all pushed (counted a
    /// batch at a time, not with a store per n-gram).
    handed: usize,
}

impl<'h, S: BucketSink> BucketStream<'h, S> {
    pub(super) fn new(hasher: &'h NgramHasher, sink: S) -> Self {
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
    pub(super) fn pushed(&self) -> usize {
        self.handed + self.batch.as_ref().map_or(0, Fingerprint64Batch::len)
    }

    #[inline(always)]
    pub(super) fn push(&mut self, tag: usize, gram: Gram<'_>) {
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

    pub(super) fn flush(&mut self) {
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
    pub(super) fn sink(&mut self) -> &mut S {
        &mut self.sink
    }

    pub(super) fn finish(mut self) {
        self.flush();
    }
}

/// Whether a test asked for the path of CPUs without vector lanes.
fn forced_one_at_a_time() -> bool {
    #[cfg(test)]
    return super::tests::one_at_a_time();
    #[cfg(not(test))]
    false
}
