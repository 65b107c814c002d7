//! The core on short records, with no TensorFlow: what `benches/records.py`
//! compares the ops with. Each spec runs over the records in batches of
//! 1024, as a kernel's chunk does (one batch call: `write_rows`,
//! `append_rows`, ...), and also one call per record (the per-row
//! calls the kernels made before), on one thread.
//!
//!     cargo bench --bench records -- RECORDS SPECS [REPEAT]
//!
//! RECORDS has one record per line, or is `@LIST`, a file listing one path
//! per line, each file a record (whole files: `benches/records.py`'s
//! "cliff" part); SPECS one FeatureSpec JSON per line.
//! Prints one line of JSON per spec: best-of-REPEAT seconds of each mode,
//! the records and their bytes, and a digest of the output (the same in
//! both modes, or the bench fails).
//!
//! For ragged `hashed_ngrams` ids it also times two floors, on the same
//! records: `scan_seconds`, one scan of each record for the n-grams of
//! the first width, nothing else (`for_each_gram`, each n-gram's length
//! summed; the other widths' n-grams are slices of the same tokens), and
//! `hash_seconds`, hashing every n-gram, found beforehand (not timed),
//! into ids, in batches as above: the faster of one at a time and the
//! kernels' other way where it applies (Fingerprint64 in AVX-512 lanes;
//! MurmurHash3 of short word or character n-grams with no branch on the
//! length). The ids cost at least the slower of the two floors, and
//! about their sum.

use rustfx::extractor::Extractor;
use rustfx::hashing::Fingerprint64Batch;
use rustfx::ngrams::{HashFamily, NgramConfig, NgramHasher};
use rustfx::output::{Batch, Offsets, Values};
use rustfx::spec::FeatureSpec;
use std::ops::ControlFlow;
use std::time::Instant;

/// Records per batch call, as a tf.data `batch(1024)` gives the kernel.
const BATCH: usize = 1024;

fn main() {
    // `cargo bench` appends `--bench`; positional arguments are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let (Some(records), Some(specs)) = (args.first(), args.get(1)) else {
        eprintln!("usage: cargo bench --bench records -- RECORDS SPECS [REPEAT]");
        std::process::exit(2);
    };
    let repeat: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(5);
    // `@LIST`: each file listed in LIST (one path per line) is a record.
    let files: Vec<Vec<u8>> = match records.strip_prefix('@') {
        Some(list) => std::fs::read_to_string(list)
            .expect("readable list")
            .lines()
            .map(|path| std::fs::read(path).expect("readable file"))
            .collect(),
        None => Vec::new(),
    };
    let text = match files.is_empty() {
        true => std::fs::read(records).expect("readable records"),
        false => Vec::new(),
    };
    let records: Vec<&[u8]> = match files.is_empty() {
        true => text
            .split(|&b| b == b'\n')
            .filter(|r| !r.is_empty())
            .collect(),
        false => files.iter().map(Vec::as_slice).collect(),
    };
    let bytes: usize = records.iter().map(|r| r.len()).sum();
    for spec in std::fs::read_to_string(specs)
        .expect("readable specs")
        .lines()
    {
        let (feature_spec, extractor) = rustfx::spec::load(spec).expect("valid spec");
        // Timed without the digest (it costs more than a histogram row),
        // then once more with it.
        let time = |batch: usize| {
            let best = best_of(repeat, || run(&extractor, &records, batch, None));
            let mut digest = Fnv::default();
            run(&extractor, &records, batch, Some(&mut digest));
            (best, digest.0)
        };
        let (batched, digest) = time(BATCH);
        let (per_record, per_record_digest) = time(1);
        assert_eq!(
            digest, per_record_digest,
            "batch and per-record outputs differ: {spec}"
        );
        let floors = match ragged_hasher(&feature_spec) {
            Some(hasher) => {
                let (scan, hash) = floors(&hasher, &records, repeat);
                format!(", \"scan_seconds\": {scan}, \"hash_seconds\": {hash}")
            }
            None => String::new(),
        };
        println!(
            "{{\"spec\": {spec}, \"records\": {}, \"bytes\": {bytes}, \"batched_seconds\": \
             {batched}, \"per_record_seconds\": {per_record}, \"digest\": {digest}{floors}}}",
            records.len()
        );
    }
}

/// The hasher of a ragged `hashed_ngrams` spec, as the registry builds it.
fn ragged_hasher(spec: &FeatureSpec) -> Option<NgramHasher> {
    let p = spec.params();
    if spec.extractor() != "hashed_ngrams" || p.str("output").ok()? != "ragged" {
        return None;
    }
    rustfx::registry::ngram_hasher(p).ok()
}

/// The fastest of `repeat` runs of `f`, in seconds.
fn best_of(repeat: usize, mut f: impl FnMut()) -> f64 {
    (0..repeat)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Best-of-`repeat` seconds of the two floors (see the module's comment):
/// one scan for the first width's n-grams, and hashing n-grams found
/// beforehand into ids, a batch at a time.
fn floors(hasher: &NgramHasher, records: &[&[u8]], repeat: usize) -> (f64, f64) {
    let first_width = NgramHasher::new(NgramConfig {
        widths: hasher.config().widths[..1].to_vec(),
        ..hasher.config().clone()
    })
    .expect("a valid hasher's first width");
    let scan = best_of(repeat, || {
        let mut total = 0;
        for doc in records {
            first_width.for_each_gram(doc, |gram| {
                total += gram.len();
                ControlFlow::Continue(())
            });
        }
        std::hint::black_box(total);
    });
    // Every n-gram's bytes, back to back, and where each batch's end.
    let (mut grams, mut ends, mut batch_ends) = (Vec::new(), Vec::new(), Vec::new());
    for docs in chunks(records, BATCH) {
        for doc in docs {
            hasher.for_each_gram(doc, |gram| {
                grams.extend_from_slice(gram);
                ends.push(grams.len());
                ControlFlow::Continue(())
            });
        }
        batch_ends.push(ends.len());
    }
    // Slack, so the lanes may read 16 bytes from any n-gram.
    grams.resize(grams.len() + 16, 0);
    // As the kernels reduce a hash: a mask when the count is a power of 2.
    let num_buckets = hasher.config().num_buckets;
    let reduce = |h: u64| match num_buckets.is_power_of_two() {
        true => h & (num_buckets - 1),
        false => h % num_buckets,
    };
    // The kernels' other ways, where they apply: Fingerprint64 in AVX-512
    // lanes; MurmurHash3 as `bucket_padded` finds it (short n-grams of
    // words or characters with no branch on the length).
    let lanes = hasher.config().hash == HashFamily::Fingerprint64 && Fingerprint64Batch::pays();
    let padded = hasher.config().hash == HashFamily::Murmur3;
    // Each way in a loop of its own, so none pays for the others' tests.
    let hash = |fast: bool| {
        best_of(repeat, || {
            let mut ids: Vec<i64> = Vec::new();
            let mut lane_batch = Fingerprint64Batch::new();
            let (mut first, mut start) = (0, 0);
            for &batch_end in &batch_ends {
                ids.clear();
                let batch = &ends[first..batch_end];
                if fast && lanes {
                    for &end in batch {
                        if lane_batch.is_full() {
                            ids.extend(lane_batch.hashes().iter().map(|&h| reduce(h) as i64));
                        }
                        lane_batch.push(&grams[start..], end - start);
                        start = end;
                    }
                    ids.extend(lane_batch.hashes().iter().map(|&h| reduce(h) as i64));
                } else if fast && padded {
                    for &end in batch {
                        ids.push(hasher.bucket_padded(&grams[start..], end - start).index as i64);
                        start = end;
                    }
                } else {
                    for &end in batch {
                        ids.push(hasher.bucket(&grams[start..end]).index as i64);
                        start = end;
                    }
                }
                first = batch_end;
                std::hint::black_box(&ids);
            }
        })
    };
    let hash = match lanes || padded {
        true => hash(false).min(hash(true)),
        false => hash(false),
    };
    (scan, hash)
}

/// Runs `extractor` over `records` in calls of `batch` records through the
/// core's batch interface, into one batch reused from call to call, as a
/// kernel's chunk buffers are. Adds every value to `digest`, if given.
fn run(extractor: &Extractor, records: &[&[u8]], batch: usize, mut digest: Option<&mut Fnv>) {
    let mut out = extractor.extract_batch(&[]).expect("an empty batch");
    for docs in chunks(records, batch) {
        extractor
            .extract_batch_into(docs, &mut out)
            .expect("a batch");
        if let Some(d) = digest.as_deref_mut() {
            d.add_batch(&out);
        }
        std::hint::black_box(&out);
    }
}

/// `records` in chunks of at most `batch` records and, past the first
/// record, at most 64 KiB of input, as the kernels chunk their input (whole
/// files would otherwise make chunks of megabytes).
fn chunks<'r>(records: &'r [&'r [u8]], batch: usize) -> impl Iterator<Item = &'r [&'r [u8]]> {
    const CHUNK_BYTES: usize = 64 << 10;
    let mut rest = records;
    std::iter::from_fn(move || {
        let (mut n, mut bytes) = (0, 0);
        while n < rest.len().min(batch) && (n == 0 || bytes + rest[n].len() <= CHUNK_BYTES) {
            bytes += rest[n].len();
            n += 1;
        }
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        (!chunk.is_empty()).then_some(chunk)
    })
}

/// [`run`] for a fixed-width extractor: `bits` turns a value into what the
/// digest takes.
/// FNV-1a over 64-bit values.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn add(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x0100_0000_01b3);
    }

    /// Every value of `batch`, row by row (the bench's conversion of the
    /// core's batch).
    fn add_batch(&mut self, batch: &Batch) {
        let values = batch.values();
        let size = values.dtype().size().unwrap_or(1);
        // A number's bits, or a string's length.
        let value = |at: usize| -> u64 {
            match values {
                Values::String(s) => s.offsets.range(at).len() as u64,
                _ => {
                    let mut bits = [0u8; 8];
                    bits[..size].copy_from_slice(&values.as_bytes()[at * size..(at + 1) * size]);
                    u64::from_le_bytes(bits)
                }
            }
        };
        match batch {
            Batch::Dense { .. } => (0..values.len()).for_each(|at| self.add(value(at))),
            Batch::Ragged { offsets, .. } => self.add_rows(offsets, value),
            Batch::Sparse {
                indices, offsets, ..
            } => self.add_rows(offsets, |at| indices[at] ^ value(at)),
        }
    }

    /// Each row at `offsets`, row by row: `value(at)` of each value, then
    /// the row's length. The same whatever the batch the rows were in.
    fn add_rows(&mut self, offsets: &Offsets, mut value: impl FnMut(usize) -> u64) {
        for range in offsets.ranges() {
            let length = range.len() as u64;
            range.for_each(|at| self.add(value(at)));
            self.add(length);
        }
    }
}
