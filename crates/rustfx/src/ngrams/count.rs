//! Summing n-grams per bucket without allocating per document.
//!
//! Sparse rows: a [`CountScratch`] records each n-gram's bucket (and sign)
//! as it comes, as a 32-bit key whenever the buckets allow, radix-sorts a
//! batch of them and sums the runs of equal buckets, which leaves the
//! distinct buckets sorted as the row needs them. Each step streams through
//! memory with no data-dependent branch (not even at the end of a run, which
//! on text comes about every other key); a hash table of the distinct buckets (tried: 20% slower on
//! text) pays a cache miss on most lookups once it outgrows the L1, and
//! still has to be sorted at the end. Batches bound the memory for huge
//! documents; their sums are merged.
//!
//! Dense rows sum straight into the output row; see [`normalize_dense`] for
//! why that gives the sparse path's values exactly.

use super::Norm;

/// Reusable buffers for counting n-grams: pass one to
/// [`NgramCounter::counts_with`](super::NgramCounter::counts_with) to count
/// many documents with no allocation per document once it has grown.
/// [`NgramCounter::counts`](super::NgramCounter::counts) uses one per
/// thread.
#[derive(Clone, Debug, Default)]
pub struct CountScratch {
    /// The batch, per n-gram `bucket << 1 | negative` when signed, else
    /// `bucket`: in `narrow` when keys fit 32 bits (up to 2^31 buckets,
    /// half the memory traffic of `wide`), else in `wide`.
    narrow: Keys<u32>,
    wide: Keys<u64>,
    /// The radix sort's digit counts.
    counts: Vec<u32>,
    signed: bool,
    /// Keys are below `1 << key_bits`.
    key_bits: u32,
    /// The sums of the batches so far, sorted by bucket.
    sums: Vec<(u64, i64)>,
    /// A batch's sums, and where they are merged into `sums`.
    batch: Vec<(u64, i64)>,
    merged: Vec<(u64, i64)>,
}

/// A batch of keys and the radix sort's second buffer.
#[derive(Clone, Debug, Default)]
struct Keys<K> {
    keys: Vec<K>,
    spare: Vec<K>,
}

/// Capacity (distinct buckets) of the sum buffers kept between documents.
const KEEP_SUMS: usize = 1 << 16;
/// n-grams per batch: 1 MiB of keys or less (and as much spare), enough for
/// most documents in one.
pub(super) const BATCH: usize = 1 << 17;

impl CountScratch {
    /// Empty buffers; they grow on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Readies the buffers for a document whose buckets are below
    /// `num_buckets`, with signs when `signed`.
    pub(super) fn begin(&mut self, num_buckets: u64, signed: bool) {
        self.narrow.keys.clear();
        self.wide.keys.clear();
        self.sums.clear();
        // A huge document's sums are not kept for the thread.
        for sums in [&mut self.sums, &mut self.batch, &mut self.merged] {
            sums.shrink_to(KEEP_SUMS);
        }
        self.signed = signed;
        let largest = num_buckets.saturating_sub(1) << u32::from(signed) | u64::from(signed);
        self.key_bits = u64::BITS - largest.leading_zeros();
    }

    /// Records one n-gram of `bucket` (below the `num_buckets` of
    /// [`begin`](Self::begin)), negative or not.
    #[inline(always)]
    pub(super) fn add(&mut self, bucket: u64, negative: bool) {
        let key = if self.signed {
            bucket << 1 | u64::from(negative)
        } else {
            bucket
        };
        let batched = if self.key_bits <= u32::BITS {
            // Lossless: the key is below 1 << key_bits.
            self.narrow.keys.push(key as u32);
            self.narrow.keys.len()
        } else {
            self.wide.keys.push(key);
            self.wide.keys.len()
        };
        if batched == BATCH {
            self.flush();
        }
    }

    /// The document's `(bucket, sum)` pairs sorted by bucket: each sum is
    /// the number of n-grams of the bucket, or with signs the positive ones
    /// less the negative ones.
    pub(super) fn finish(&mut self) -> &[(u64, i64)] {
        self.flush();
        &self.sums
    }

    /// Sorts the batch and adds its sums to `sums`.
    fn flush(&mut self) {
        let mut batch = std::mem::take(&mut self.batch);
        let (key_bits, signed) = (self.key_bits, self.signed);
        if key_bits <= u32::BITS {
            self.narrow
                .sum_runs(&mut self.counts, key_bits, signed, &mut batch);
        } else {
            self.wide
                .sum_runs(&mut self.counts, key_bits, signed, &mut batch);
        }
        if self.sums.is_empty() {
            std::mem::swap(&mut self.sums, &mut batch);
        } else if !batch.is_empty() {
            self.merged.clear();
            let mut old = self.sums.iter().copied().peekable();
            for &(bucket, sum) in &batch {
                while let Some(&entry) = old.peek().filter(|e| e.0 < bucket) {
                    self.merged.push(entry);
                    old.next();
                }
                match old.peek() {
                    Some(&(b, s)) if b == bucket => {
                        self.merged.push((bucket, s + sum));
                        old.next();
                    }
                    _ => self.merged.push((bucket, sum)),
                }
            }
            self.merged.extend(old);
            std::mem::swap(&mut self.sums, &mut self.merged);
        }
        self.batch = batch;
    }
}

/// A radix-sortable key: `u32` or `u64`.
trait Key: Copy + Default + Ord {
    fn get(self) -> u64;
}

impl Key for u32 {
    #[inline(always)]
    fn get(self) -> u64 {
        u64::from(self)
    }
}

impl Key for u64 {
    #[inline(always)]
    fn get(self) -> u64 {
        self
    }
}

impl<K: Key> Keys<K> {
    /// Sorts the keys (below `1 << key_bits`), then replaces `sums` with
    /// one `(bucket, sum)` per run of equal buckets, in order, and empties
    /// the batch. A sum adds +1 per key, -1 for a negative one (the low bit
    /// when `signed`).
    fn sum_runs(
        &mut self,
        counts: &mut Vec<u32>,
        key_bits: u32,
        signed: bool,
        sums: &mut Vec<(u64, i64)>,
    ) {
        self.sort(counts, key_bits);
        let shift = u32::from(signed);
        let negative = u64::from(signed);
        // With no branch on where runs end (which is where a loop that
        // tests it mispredicts, about every other key on text): every key
        // writes its run's sum so far to the run's slot; a new run starts
        // a slot. No bucket is u64::MAX (num_buckets <= i64::MAX).
        sums.clear();
        sums.resize(self.keys.len(), (0, 0));
        let (mut runs, mut previous, mut sum) = (0, u64::MAX, 0i64);
        for &key in &self.keys {
            let bucket = key.get() >> shift;
            let value = 1 - 2 * (key.get() & negative) as i64;
            let new = bucket != previous;
            // `sum` restarts at a new run: & 0 when new, & !0 when not.
            sum = value + (sum & (i64::from(new) - 1));
            runs += usize::from(new);
            sums[runs - 1] = (bucket, sum);
            previous = bucket;
        }
        sums.truncate(runs);
        self.keys.clear();
    }

    /// Sorts the keys: least-significant-digit radix sort, as many passes
    /// of at most [`RADIX_BITS`] as the keys need (two for a million
    /// buckets), the bits spread evenly over them (so two of 10 bits, not 11
    /// and 9: fewer digits to count per pass); no comparisons, so no
    /// mispredicted branches. Short batches take a comparison sort.
    fn sort(&mut self, counts: &mut Vec<u32>, key_bits: u32) {
        let n = self.keys.len();
        if n < 256 {
            self.keys.sort_unstable();
            return;
        }
        let passes = key_bits.div_ceil(RADIX_BITS).max(1);
        let bits = key_bits.div_ceil(passes).max(1);
        let bins = 1 << bits;
        let mask = (1u64 << bits) - 1;
        counts.clear();
        counts.resize(passes as usize * bins, 0);
        // A read of the keys per pass (from the L1 or L2) keeps the inner
        // loop free of the per-pass indexing.
        for (pass, counts) in counts.chunks_exact_mut(bins).enumerate() {
            let shift = pass as u32 * bits;
            for &key in &self.keys[..] {
                counts[((key.get() >> shift) & mask) as usize] += 1;
            }
        }
        self.spare.clear();
        self.spare.resize(n, K::default());
        for (pass, counts) in counts.chunks_exact_mut(bins).enumerate() {
            let shift = pass as u32 * bits;
            if counts.contains(&(n as u32)) {
                // Every key has the same digit here: nothing would move.
                continue;
            }
            let mut at = 0;
            for count in counts.iter_mut() {
                let keys = *count;
                *count = at;
                at += keys;
            }
            // Slices, so that the vectors' lengths stay in registers.
            let spare = &mut self.spare[..];
            for &key in &self.keys[..] {
                let slot = &mut counts[((key.get() >> shift) & mask) as usize];
                spare[*slot as usize] = key;
                *slot += 1;
            }
            std::mem::swap(&mut self.keys, &mut self.spare);
        }
    }
}

/// The most bits of key sorted per radix pass (an 8 KiB histogram).
const RADIX_BITS: u32 = 11;

/// Applies `norm` to a dense row of counts, giving the values the sparse
/// path gives. That path adds its stored values in ascending index order in
/// f64; here every value is an integer of magnitude at most 2^24 (counts of
/// at most 2^24 n-grams, or the 1s of `binary`), so each partial sum of
/// absolute values (at most 2^24) or squares (at most 2^48) is exact in
/// f64, the order does not matter, and integer sums give the same norm.
/// Each value is then divided in f64 and rounded to f32; zeros (buckets
/// never seen, or whose signs cancelled) stay zero.
pub(super) fn normalize_dense(row: &mut [f32], norm: Norm) {
    let mut sum = 0u64;
    // `as i64` is exact: the values are integers.
    match norm {
        Norm::None => return,
        Norm::L1 => for_nonzero_chunks(row, |chunk| {
            sum += chunk
                .iter()
                .map(|&v| (v as i64).unsigned_abs())
                .sum::<u64>();
        }),
        Norm::L2 => for_nonzero_chunks(row, |chunk| {
            sum += chunk
                .iter()
                .map(|&v| (v as i64 * v as i64).unsigned_abs())
                .sum::<u64>();
        }),
    }
    let scale = if norm == Norm::L2 {
        (sum as f64).sqrt()
    } else {
        sum as f64
    };
    if scale > 0.0 {
        for_nonzero_chunks(row, |chunk| {
            for v in chunk {
                *v = (f64::from(*v) / scale) as f32;
            }
        });
    }
}

/// Calls `f` on each 16-value chunk of `row` that is not all zeros (dense
/// rows of many buckets are mostly zeros).
fn for_nonzero_chunks(row: &mut [f32], mut f: impl FnMut(&mut [f32])) {
    for chunk in row.chunks_mut(16) {
        if chunk.iter().fold(0, |bits, v| bits | v.to_bits()) != 0 {
            f(chunk);
        }
    }
}
