//! Byte-string hashes that match TensorFlow and scikit-learn bit for bit.
//!
//! * [`fingerprint64`](fn@fingerprint64) is TensorFlow's `Fingerprint64`
//!   (`tensorflow/core/platform/fingerprint.h`), which is farmhash's
//!   `farmhashna::Hash64`. It is what `tf.strings.to_hash_bucket_fast`
//!   reduces modulo the number of buckets, so
//!   `fingerprint64(s) % m == tf.strings.to_hash_bucket_fast(s, m)`.
//! * [`murmur3_x86_32`] is MurmurHash3_x86_32, the function behind
//!   `sklearn.utils.murmurhash3_32` (and `HashingVectorizer` /
//!   `FeatureHasher`).
//!
//! Both are pure functions of the input bytes, independent of the host's
//! endianness and of the input's alignment, contain no `unsafe`, and do not
//! panic on any input. Golden vectors produced by the real TensorFlow and
//! scikit-learn live in `tests/golden/` (see `tests/golden/generate.py`).

mod fingerprint64;
mod fingerprint64_batch;
mod murmur3;
#[cfg(test)]
mod tests;

pub use fingerprint64::fingerprint64;
pub use fingerprint64_batch::{Fingerprint64Batch, FINGERPRINT64_BATCH};
pub use murmur3::{murmur3_x86_32, murmur3_x86_32_short, sklearn_bucket_of_i32_min};
