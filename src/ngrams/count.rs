//! Summing n-grams per bucket without allocating per document.
//!
//! Sparse rows: a [`CountScratch`] records each n-gram's bucket (and sign)
//! as it comes, radix-sorts a batch of them and sums the runs of equal
//! buckets, which leaves the distinct buckets sorted as the row needs them.
//! Each step streams through memory with no data-dependent branch but the
//! end of a run; a hash table of the distinct buckets (tried: 20% slower on
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
    /// The batch: per n-gram `bucket << 1 | negative` when signed, else
    /// `bucket`.
    keys: Vec<u64>,
    /// The radix sort's second buffer and digit counts.
    spare: Vec<u64>,
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

/// Capacity (distinct buckets) of the sum buffers kept between documents.
const KEEP_SUMS: usize = 1 << 16;
/// n-grams per batch: 1 MiB of keys (and as much spare), enough for most
/// documents in one.
const BATCH: usize = 1 << 17;

impl CountScratch {
    /// Empty buffers; they grow on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Readies the buffers for a document whose buckets are below
    /// `num_buckets`, with signs when `signed`.
    pub(super) fn begin(&mut self, num_buckets: u64, signed: bool) {
        self.keys.clear();
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
        self.keys.push(key);
        if self.keys.len() == BATCH {
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
        if self.keys.is_empty() {
            return;
        }
        self.sort_keys();
        // Runs of equal buckets become one sum each: +1 per key, -1 for a
        // negative one (the low bit, when signed).
        let shift = u32::from(self.signed);
        let negative = u64::from(self.signed);
        let value = |key: u64| 1 - 2 * (key & negative) as i64;
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        if let Some((&first, rest)) = self.keys.split_first() {
            let (mut bucket, mut sum) = (first >> shift, value(first));
            for &key in rest {
                if key >> shift == bucket {
                    sum += value(key);
                } else {
                    batch.push((bucket, sum));
                    (bucket, sum) = (key >> shift, value(key));
                }
            }
            batch.push((bucket, sum));
        }
        if self.sums.is_empty() {
            std::mem::swap(&mut self.sums, &mut batch);
        } else {
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
        self.keys.clear();
    }

    /// Sorts `keys`: least-significant-digit radix sort, [`RADIX_BITS`] per
    /// pass and only as many passes as the keys have bits (two for a million
    /// buckets), all digits counted in one read; no comparisons, so no
    /// mispredicted branches. Short batches take a comparison sort.
    fn sort_keys(&mut self) {
        let n = self.keys.len();
        if n < 256 {
            self.keys.sort_unstable();
            return;
        }
        let passes = self.key_bits.div_ceil(RADIX_BITS).max(1) as usize;
        let bins = 1 << RADIX_BITS;
        let mask = (1u64 << RADIX_BITS) - 1;
        let mut counts = std::mem::take(&mut self.counts);
        counts.clear();
        counts.resize(passes * bins, 0);
        for &key in &self.keys {
            for (pass, counts) in counts.chunks_exact_mut(bins).enumerate() {
                counts[((key >> (pass as u32 * RADIX_BITS)) & mask) as usize] += 1;
            }
        }
        self.spare.clear();
        self.spare.resize(n, 0);
        for (pass, counts) in counts.chunks_exact_mut(bins).enumerate() {
            let shift = pass as u32 * RADIX_BITS;
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
            for &key in &self.keys {
                let slot = &mut counts[((key >> shift) & mask) as usize];
                self.spare[*slot as usize] = key;
                *slot += 1;
            }
            std::mem::swap(&mut self.keys, &mut self.spare);
        }
        self.counts = counts;
    }
}

/// Bits of key sorted per radix pass (an 8 KiB histogram).
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
