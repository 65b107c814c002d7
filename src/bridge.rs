//! The cxx bridge between the C++ TensorFlow kernels in `cpp/` and the core.
//!
//! Thin on purpose: each function converts parameters, calls the core and
//! turns its errors into `Result` (which cxx throws as `rust::Error`, caught
//! by the kernel) or into a [`Status`] with a TensorFlow code. Every entry
//! runs inside [`guard`], so a Rust panic never unwinds into C++: it becomes
//! an error that names the operation.

use crate::byte_features::{
    byte_histogram, string_features, EmptyInput, EntropyHistogram, BYTE_ENTROPY_HISTOGRAM_DIM,
    BYTE_HISTOGRAM_DIM, MAX_WINDOW, STRING_FEATURES_DIM,
};
use crate::byte_sequence::{ByteSequence, Sampling};
use crate::ngrams::{
    CountOptions, HashFamily, NgramConfig, NgramHasher, Norm, SparseRow, Tokenizer,
};
use crate::{Error, ErrorKind, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};

#[cxx::bridge(namespace = "rustfx")]
mod ffi {
    // ---- Shared types -------------------------------------------------------

    /// A TensorFlow status code (the values of `absl::StatusCode`).
    #[repr(i32)]
    enum StatusCode {
        Ok = 0,
        Unknown = 2,
        InvalidArgument = 3,
        NotFound = 5,
        PermissionDenied = 7,
        Internal = 13,
    }

    /// Outcome of an operation on one element.
    struct Status {
        code: StatusCode,
        message: String,
    }

    /// Attributes of the hashed n-gram ops. `output` is "ids", "sequence",
    /// "dense_counts" or "sparse_counts"; fields of other outputs are ignored.
    struct NgramParams {
        tokenizer: String,
        widths: Vec<i64>,
        lowercase: bool,
        hash: String,
        num_buckets: i64,
        output: String,
        max_tokens: i64,
        pad_value: i64,
        binary: bool,
        alternate_sign: bool,
        norm: String,
    }

    /// Attributes of the fixed-width byte feature ops. `kind` is "histogram",
    /// "entropy_histogram" (uses window, step) or "strings".
    struct ByteFeatureParams {
        kind: String,
        window: i64,
        step: i64,
        empty: String,
    }

    /// Attributes of the byte sequence op.
    struct ByteSequenceParams {
        max_len: i64,
        shift: i64,
        pad_value: i64,
        sampling: String,
    }

    // ---- Rust functions the kernels call ------------------------------------

    extern "Rust" {
        /// A validated n-gram hasher; immutable, shared by all Compute calls.
        type NgramOp;
        fn new_ngram_op(params: &NgramParams) -> Result<Box<NgramOp>>;
        fn append_ids(self: &NgramOp, doc: &[u8], ids: &mut Vec<i64>) -> Result<()>;
        fn write_sequence(self: &NgramOp, doc: &[u8], pad: i64, out: &mut [i64]) -> Result<()>;
        fn append_counts(
            self: &NgramOp,
            doc: &[u8],
            indices: &mut Vec<i64>,
            values: &mut Vec<f32>,
        ) -> Result<()>;

        /// A validated byte feature extractor with a fixed output width.
        type ByteFeatureOp;
        fn new_byte_feature_op(params: &ByteFeatureParams) -> Result<Box<ByteFeatureOp>>;
        fn width(self: &ByteFeatureOp) -> usize;
        fn write_row(self: &ByteFeatureOp, doc: &[u8], out: &mut [f32]) -> Result<()>;

        /// A validated byte sequence extractor.
        type ByteSequenceOp;
        fn new_byte_sequence_op(params: &ByteSequenceParams) -> Result<Box<ByteSequenceOp>>;
        fn max_len(self: &ByteSequenceOp) -> usize;
        fn write_row(self: &ByteSequenceOp, doc: &[u8], out: &mut [i32]) -> Result<()>;

        fn check_max_bytes(max_bytes: i64) -> Result<()>;
        fn read_file(path: &[u8], max_bytes: i64, contents: &mut Vec<u8>) -> Status;
    }
}

pub use ffi::{ByteFeatureParams, ByteSequenceParams, NgramParams, Status, StatusCode};

/// The largest `max_tokens` of the sequence output (per element).
pub const MAX_SEQUENCE_TOKENS: i64 = 1 << 24;

/// The most buckets of the dense counts output (4 MiB of float32 per row).
pub const MAX_DENSE_BUCKETS: i64 = 1 << 20;

type BridgeResult<T> = std::result::Result<T, String>;

/// Runs `f`, turning a panic into an Internal error naming `what`.
fn guard<T>(what: &str, f: impl FnOnce() -> Result<T>) -> BridgeResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(e.to_string()),
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(format!(
                "internal error (a bug in rustfx) in {what}: panic: {detail}"
            ))
        }
    }
}

/// The core n-gram hasher behind the bridge, with its count options.
pub struct NgramOp {
    hasher: NgramHasher,
    counts: CountOptions,
}

fn new_ngram_op(params: &NgramParams) -> BridgeResult<Box<NgramOp>> {
    guard("new_ngram_op", || {
        let hasher = NgramHasher::new(ngram_config(params)?)?;
        let counts = CountOptions {
            binary: params.binary,
            alternate_sign: params.alternate_sign,
            norm: Norm::from_name(&params.norm)?,
        };
        match params.output.as_str() {
            "ids" => {}
            "sequence" => check_sequence(params)?,
            "dense_counts" | "sparse_counts" => {
                if params.output == "dense_counts" && params.num_buckets > MAX_DENSE_BUCKETS {
                    return Err(Error::invalid_argument(format!(
                        "num_buckets must be in [1, {MAX_DENSE_BUCKETS}] for dense counts \
                         (one float32 row per element), got {}; use output='sparse'",
                        params.num_buckets
                    )));
                }
                if counts.alternate_sign && hasher.config().hash != HashFamily::Murmur3 {
                    return Err(Error::invalid_argument(
                        "alternate_sign=True needs hash='murmur3' (Fingerprint64 has no sign)",
                    ));
                }
            }
            other => {
                return Err(Error::invalid_argument(format!(
                "output must be one of ids, sequence, dense_counts, sparse_counts, got '{other}'"
            )))
            }
        }
        Ok(Box::new(NgramOp { hasher, counts }))
    })
}

fn ngram_config(params: &NgramParams) -> Result<NgramConfig> {
    let widths = params
        .widths
        .iter()
        // A negative width maps to 0, which NgramHasher::new rejects.
        .map(|&w| usize::try_from(w).unwrap_or(0))
        .collect();
    Ok(NgramConfig {
        tokenizer: Tokenizer::from_name(&params.tokenizer)?,
        widths,
        lowercase: params.lowercase,
        hash: HashFamily::from_name(&params.hash)?,
        // A negative count maps to 0, which NgramHasher::new rejects.
        num_buckets: u64::try_from(params.num_buckets).unwrap_or(0),
    })
}

fn check_sequence(params: &NgramParams) -> Result<()> {
    let (max_tokens, pad) = (params.max_tokens, params.pad_value);
    if !(1..=MAX_SEQUENCE_TOKENS).contains(&max_tokens) {
        return Err(Error::invalid_argument(format!(
            "max_tokens must be in [1, {MAX_SEQUENCE_TOKENS}], got {max_tokens}"
        )));
    }
    if (0..params.num_buckets).contains(&pad) {
        return Err(Error::invalid_argument(format!(
            "pad_value must not be a bucket id: it must be < 0 or >= num_buckets ({}), got {pad}",
            params.num_buckets
        )));
    }
    Ok(())
}

impl NgramOp {
    fn append_ids(&self, doc: &[u8], ids: &mut Vec<i64>) -> BridgeResult<()> {
        guard("hashed_ngrams", || {
            self.hasher.ids(doc, ids);
            Ok(())
        })
    }

    fn write_sequence(&self, doc: &[u8], pad: i64, out: &mut [i64]) -> BridgeResult<()> {
        guard("hashed_ngrams (sequence)", || {
            self.hasher.sequence(doc, pad, out);
            Ok(())
        })
    }

    fn append_counts(
        &self,
        doc: &[u8],
        indices: &mut Vec<i64>,
        values: &mut Vec<f32>,
    ) -> BridgeResult<()> {
        guard("hashed_ngrams (counts)", || {
            let mut row = SparseRow::default();
            self.hasher.counts(doc, &self.counts, &mut row);
            indices.extend(row.indices.iter().map(|&i| i as i64));
            values.extend_from_slice(&row.values);
            Ok(())
        })
    }
}

/// One of the EMBER-compatible byte features, with its empty-input policy.
pub struct ByteFeatureOp {
    feature: ByteFeature,
    empty: EmptyInput,
}

enum ByteFeature {
    Histogram,
    EntropyHistogram(EntropyHistogram),
    Strings,
}

fn new_byte_feature_op(params: &ByteFeatureParams) -> BridgeResult<Box<ByteFeatureOp>> {
    guard("new_byte_feature_op", || {
        let empty = match params.empty.as_str() {
            "zeros" => EmptyInput::Zeros,
            "nan" => EmptyInput::Nan,
            other => {
                return Err(Error::invalid_argument(format!(
                    "empty must be 'zeros' or 'nan', got '{other}'"
                )))
            }
        };
        let feature = match params.kind.as_str() {
            "histogram" => ByteFeature::Histogram,
            "entropy_histogram" => {
                let size = |name: &str, v: i64| {
                    usize::try_from(v).map_err(|_| {
                        Error::invalid_argument(format!(
                            "{name} must be in [1, {MAX_WINDOW}], got {v}"
                        ))
                    })
                };
                ByteFeature::EntropyHistogram(EntropyHistogram::new(
                    size("window", params.window)?,
                    size("step", params.step)?,
                )?)
            }
            "strings" => ByteFeature::Strings,
            other => {
                return Err(Error::invalid_argument(format!(
                    "unknown byte feature '{other}'"
                )))
            }
        };
        Ok(Box::new(ByteFeatureOp { feature, empty }))
    })
}

impl ByteFeatureOp {
    fn width(&self) -> usize {
        match self.feature {
            ByteFeature::Histogram => BYTE_HISTOGRAM_DIM,
            ByteFeature::EntropyHistogram(_) => BYTE_ENTROPY_HISTOGRAM_DIM,
            ByteFeature::Strings => STRING_FEATURES_DIM,
        }
    }

    fn write_row(&self, doc: &[u8], out: &mut [f32]) -> BridgeResult<()> {
        guard("byte features", || {
            let (got, width) = (out.len(), self.width());
            let wrong_width = || {
                Error::new(
                    ErrorKind::Internal,
                    format!("output row has {got} values, expected {width}"),
                )
            };
            match &self.feature {
                ByteFeature::Histogram => {
                    byte_histogram(doc, self.empty, out.try_into().map_err(|_| wrong_width())?)
                }
                ByteFeature::EntropyHistogram(h) => {
                    h.compute(doc, self.empty, out.try_into().map_err(|_| wrong_width())?)
                }
                ByteFeature::Strings => {
                    string_features(doc, self.empty, out.try_into().map_err(|_| wrong_width())?)
                }
            }
            Ok(())
        })
    }
}

/// A MalConv-style byte sequence extractor.
pub struct ByteSequenceOp(ByteSequence);

fn new_byte_sequence_op(params: &ByteSequenceParams) -> BridgeResult<Box<ByteSequenceOp>> {
    guard("new_byte_sequence_op", || {
        let sampling = match params.sampling.as_str() {
            "head" => Sampling::Head,
            "head_tail" => Sampling::HeadTail,
            other => {
                return Err(Error::invalid_argument(format!(
                    "sampling must be 'head' or 'head_tail', got '{other}'"
                )))
            }
        };
        let int32 = |name: &str, v: i64| {
            i32::try_from(v)
                .map_err(|_| Error::invalid_argument(format!("{name} must fit in int32, got {v}")))
        };
        // A negative or huge max_len maps to 0, which ByteSequence::new rejects.
        let max_len = usize::try_from(params.max_len).unwrap_or(0);
        Ok(Box::new(ByteSequenceOp(ByteSequence::new(
            max_len,
            int32("shift", params.shift)?,
            int32("pad_value", params.pad_value)?,
            sampling,
        )?)))
    })
}

impl ByteSequenceOp {
    fn max_len(&self) -> usize {
        self.0.max_len()
    }

    fn write_row(&self, doc: &[u8], out: &mut [i32]) -> BridgeResult<()> {
        guard("byte_sequence", || self.0.write(doc, out))
    }
}

fn check_max_bytes(max_bytes: i64) -> BridgeResult<()> {
    guard("check_max_bytes", || {
        crate::read::check_max_bytes(max_bytes).map(|_| ())
    })
}

fn read_file(path: &[u8], max_bytes: i64, contents: &mut Vec<u8>) -> Status {
    let outcome = guard("read_files", || {
        let max = crate::read::check_max_bytes(max_bytes)?;
        Ok(match crate::read::read_file(path, max) {
            Ok(bytes) => {
                *contents = bytes;
                Status {
                    code: StatusCode::Ok,
                    message: String::new(),
                }
            }
            Err(e) => Status {
                code: status_code(e.kind()),
                message: e.to_string(),
            },
        })
    });
    outcome.unwrap_or_else(|message| Status {
        code: StatusCode::Internal,
        message,
    })
}

fn status_code(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::InvalidArgument => StatusCode::InvalidArgument,
        ErrorKind::NotFound => StatusCode::NotFound,
        ErrorKind::PermissionDenied => StatusCode::PermissionDenied,
        ErrorKind::Io => StatusCode::Unknown,
        ErrorKind::Internal => StatusCode::Internal,
    }
}
