//! The cxx bridge between the C++ TensorFlow kernels in `cpp/` and the core.
//!
//! Thin on purpose: a constructor per extractor turns typed parameters into
//! the core type (whose `new` checks every rule), and the kernels drive it
//! through a handful of calls. Closed sets of values cross as shared enums,
//! parsed from their names by the core's `from_name`, never compared as
//! strings. Every entry runs inside [`guard`], so a Rust panic never unwinds
//! into C++: it becomes an error that names the operation.
//!
//! Adding a fixed-width extractor: implement
//! [`RowExtractor`](crate::extractor::RowExtractor) in the core, and add one
//! `new_*` constructor below returning the row type of its value type
//! (`FloatRows`, `Int32Rows` or `Int64Rows`); the C++ `RowKernel` does the rest.

use crate::byte_features::{ByteEntropyHistogram, ByteHistogram, EmptyInput, StringFeatures};
use crate::byte_sequence::{ByteSequence, Sampling};
use crate::ember2024::general::GeneralFileInfo;
use crate::ember2024::strings::Ember2024Strings;
use crate::ember2024::{parse_groups, EmberFeatures};
use crate::extractor::RowExtractor;
use crate::ngrams::{
    CountOptions, HashFamily, NgramConfig, NgramCounter, NgramCounts, NgramHasher, NgramSequence,
    Norm, SparseRow, Tokenizer,
};
use crate::read::OnError;
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

    /// `ngrams::Tokenizer`.
    enum Tokenizer {
        Whitespace,
        Word,
        Char,
        Byte,
        SklearnWord,
        SklearnChar,
        SklearnCharWb,
    }

    /// `ngrams::HashFamily`.
    enum HashFamily {
        Fingerprint64,
        Murmur3,
    }

    /// `ngrams::Norm`.
    enum Norm {
        None,
        L1,
        L2,
    }

    /// `byte_features::EmptyInput`.
    enum EmptyInput {
        Zeros,
        Nan,
    }

    /// `byte_sequence::Sampling`.
    enum Sampling {
        Head,
        HeadTail,
    }

    /// `read::OnError`.
    enum OnError {
        Raise,
        Empty,
    }

    /// The attributes every hashed n-gram op has.
    struct NgramParams {
        tokenizer: Tokenizer,
        widths: Vec<i64>,
        lowercase: bool,
        hash: HashFamily,
        num_buckets: i64,
    }

    /// One read into a caller's buffer: its outcome and the bytes read.
    struct ReadChunk {
        status: Status,
        len: usize,
    }

    /// The weighting attributes of the counts outputs.
    struct CountParams {
        binary: bool,
        alternate_sign: bool,
        norm: Norm,
    }

    // ---- Rust functions the kernels call ------------------------------------

    extern "Rust" {
        // Names of closed sets of values (the core's `from_name`).
        fn parse_tokenizer(name: &str) -> Result<Tokenizer>;
        fn parse_hash_family(name: &str) -> Result<HashFamily>;
        fn parse_norm(name: &str) -> Result<Norm>;
        fn parse_empty_input(name: &str) -> Result<EmptyInput>;
        fn parse_sampling(name: &str) -> Result<Sampling>;
        fn parse_on_error(name: &str) -> Result<OnError>;

        /// A validated fixed-width extractor of float32 rows.
        type FloatRows;
        fn width(self: &FloatRows) -> usize;
        fn work_bytes_hint(self: &FloatRows) -> u64;
        fn write_row(self: &FloatRows, doc: &[u8], out: &mut [f32]) -> Result<()>;

        /// A validated fixed-width extractor of int32 rows.
        type Int32Rows;
        fn width(self: &Int32Rows) -> usize;
        fn work_bytes_hint(self: &Int32Rows) -> u64;
        fn write_row(self: &Int32Rows, doc: &[u8], out: &mut [i32]) -> Result<()>;

        /// A validated fixed-width extractor of int64 rows.
        type Int64Rows;
        fn width(self: &Int64Rows) -> usize;
        fn work_bytes_hint(self: &Int64Rows) -> u64;
        fn write_row(self: &Int64Rows, doc: &[u8], out: &mut [i64]) -> Result<()>;

        // Fixed-width extractors, one constructor each.
        fn new_byte_histogram(empty: EmptyInput) -> Result<Box<FloatRows>>;
        fn new_byte_entropy_histogram(
            window: i64,
            step: i64,
            empty: EmptyInput,
        ) -> Result<Box<FloatRows>>;
        fn new_string_features() -> Result<Box<FloatRows>>;
        fn new_general_file_info() -> Result<Box<FloatRows>>;
        fn new_ember2024_string_features() -> Result<Box<FloatRows>>;
        /// `groups`: comma-separated group names, "" for all.
        fn new_ember_features(feature_version: i64, groups: &str) -> Result<Box<FloatRows>>;
        fn ember_feature_names(feature_version: i64, groups: &str) -> Result<Vec<String>>;
        fn new_byte_sequence(
            max_len: i64,
            shift: i64,
            pad_value: i64,
            sampling: Sampling,
        ) -> Result<Box<Int32Rows>>;
        fn new_ngram_sequence(
            params: &NgramParams,
            max_tokens: i64,
            pad_value: i64,
        ) -> Result<Box<Int64Rows>>;
        fn new_ngram_counts(params: &NgramParams, counts: &CountParams) -> Result<Box<FloatRows>>;

        /// Hashed n-gram ids of any length (the ragged output).
        type NgramRagged;
        fn new_ngram_ragged(params: &NgramParams) -> Result<Box<NgramRagged>>;
        fn append_ids(self: &NgramRagged, doc: &[u8], ids: &mut Vec<i64>) -> Result<()>;

        /// Bags of hashed n-grams as sparse rows (the sparse output).
        type NgramSparse;
        fn new_ngram_sparse(params: &NgramParams, counts: &CountParams)
            -> Result<Box<NgramSparse>>;
        /// Replaces `indices` and `values` with the sparse row of `doc`.
        fn write_counts(
            self: &NgramSparse,
            doc: &[u8],
            indices: &mut Vec<u64>,
            values: &mut Vec<f32>,
        ) -> Result<()>;

        fn check_max_bytes(max_bytes: i64) -> Result<()>;

        /// Where an extractor op's documents come from: its input strings,
        /// or the files they name (`read::DocumentSource`).
        type DocumentSource;
        fn new_document_source(
            read_files: bool,
            max_bytes: i64,
            on_error: OnError,
        ) -> Result<Box<DocumentSource>>;
        fn reads_files(self: &DocumentSource) -> bool;
        /// The file at `path`, read into `buffer` by the source's rules (a
        /// file that cannot be read is empty with on_error='empty'); any
        /// status but Ok fails the op.
        fn read_document(self: &DocumentSource, path: &[u8], buffer: &mut Vec<u8>) -> Status;

        /// A file opened by `read_files`' rules (or the error that stopped
        /// it), read straight into the output tensor's buffer.
        type FileReader;
        fn open_file(path: &[u8]) -> Box<FileReader>;
        fn status(self: &FileReader) -> Status;
        fn size_hint(self: &FileReader) -> u64;
        fn read_into(self: &mut FileReader, buf: &mut [u8]) -> ReadChunk;
        fn read_rest(self: &mut FileReader, limit: u64, out: &mut Vec<u8>) -> Status;
    }
}

type BridgeResult<T> = std::result::Result<T, String>;

/// Runs `f`, turning a panic into an Internal error naming `what`.
fn guard<T>(what: &str, f: impl FnOnce() -> Result<T>) -> BridgeResult<T> {
    guard_kind(what, f).map_err(|e| e.to_string())
}

/// [`guard`], keeping the error's kind (for a [`ffi::Status`]).
fn guard_kind<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(outcome) => outcome,
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Error::new(
                ErrorKind::Internal,
                format!("internal error (a bug in rustfx) in {what}: panic: {detail}"),
            ))
        }
    }
}

// ---- Shared enums ----------------------------------------------------------

/// Pairs a shared enum with its core enum: `parse` (the core's `from_name`,
/// for C++), `From<core>` (an exhaustive match: a new core variant does not
/// compile until it has a shared one) and `from_ffi`. A cxx enum can hold
/// any discriminant, so `from_ffi` has a fallback, reported as a bug.
macro_rules! shared_enum {
    ($parse:ident, $ty:ident { $($variant:ident),+ $(,)? }) => {
        fn $parse(name: &str) -> BridgeResult<ffi::$ty> {
            guard(stringify!($parse), || $ty::from_name(name).map(ffi::$ty::from))
        }

        impl From<$ty> for ffi::$ty {
            fn from(value: $ty) -> Self {
                match value {
                    $($ty::$variant => ffi::$ty::$variant,)+
                }
            }
        }

        // Not every shared enum comes back to Rust (OnError stays in C++).
        #[allow(dead_code)]
        impl ffi::$ty {
            fn to_core(self) -> Result<$ty> {
                match self {
                    $(ffi::$ty::$variant => Ok($ty::$variant),)+
                    _ => Err(Error::new(
                        ErrorKind::Internal,
                        format!("invalid {} value {} (a bug in rustfx)", stringify!($ty), self.repr),
                    )),
                }
            }
        }
    };
}

shared_enum!(
    parse_tokenizer,
    Tokenizer {
        Whitespace,
        Word,
        Char,
        Byte,
        SklearnWord,
        SklearnChar,
        SklearnCharWb,
    }
);
shared_enum!(
    parse_hash_family,
    HashFamily {
        Fingerprint64,
        Murmur3
    }
);
shared_enum!(parse_norm, Norm { None, L1, L2 });
shared_enum!(parse_empty_input, EmptyInput { Zeros, Nan });
shared_enum!(parse_sampling, Sampling { Head, HeadTail });
shared_enum!(parse_on_error, OnError { Raise, Empty });

// ---- Fixed-width extractors --------------------------------------------------

/// Defines an opaque row type over any [`RowExtractor`] of one value type.
macro_rules! row_type {
    ($name:ident, $value:ty) => {
        /// A validated fixed-width extractor behind the bridge.
        pub struct $name(Box<dyn RowExtractor<Value = $value>>);

        impl $name {
            fn boxed(extractor: impl RowExtractor<Value = $value> + 'static) -> Box<Self> {
                Box::new($name(Box::new(extractor)))
            }

            fn width(&self) -> usize {
                self.0.width()
            }

            /// The extractor's work hint, `u64::MAX` for "the whole document".
            fn work_bytes_hint(&self) -> u64 {
                self.0.work_bytes_hint().map_or(u64::MAX, |n| n as u64)
            }

            fn write_row(&self, doc: &[u8], out: &mut [$value]) -> BridgeResult<()> {
                guard(stringify!($name), || self.0.write_row(doc, out))
            }
        }
    };
}

row_type!(FloatRows, f32);
row_type!(Int32Rows, i32);
row_type!(Int64Rows, i64);

/// A size parameter as `usize`; a negative value maps to 0, which every
/// core constructor rejects with its own message.
fn size(value: i64) -> usize {
    usize::try_from(value).unwrap_or(0)
}

/// An int32 parameter, or an error naming it.
fn int32(name: &str, value: i64) -> Result<i32> {
    i32::try_from(value)
        .map_err(|_| Error::invalid_argument(format!("{name} must fit in int32, got {value}")))
}

fn new_byte_histogram(empty: ffi::EmptyInput) -> BridgeResult<Box<FloatRows>> {
    guard("new_byte_histogram", || {
        Ok(FloatRows::boxed(ByteHistogram::new(empty.to_core()?)))
    })
}

fn new_byte_entropy_histogram(
    window: i64,
    step: i64,
    empty: ffi::EmptyInput,
) -> BridgeResult<Box<FloatRows>> {
    guard("new_byte_entropy_histogram", || {
        // Sizes beyond usize (none on 64-bit) and negative ones map to 0.
        let extractor = ByteEntropyHistogram::new(size(window), size(step), empty.to_core()?)?;
        Ok(FloatRows::boxed(extractor))
    })
}

fn new_string_features() -> BridgeResult<Box<FloatRows>> {
    guard("new_string_features", || {
        Ok(FloatRows::boxed(StringFeatures))
    })
}

fn new_general_file_info() -> BridgeResult<Box<FloatRows>> {
    guard("new_general_file_info", || {
        Ok(FloatRows::boxed(GeneralFileInfo))
    })
}

fn new_ember_features(feature_version: i64, groups: &str) -> BridgeResult<Box<FloatRows>> {
    guard("new_ember_features", || {
        let extractor = EmberFeatures::new(feature_version, &parse_groups(groups)?)?;
        Ok(FloatRows::boxed(extractor))
    })
}

fn ember_feature_names(feature_version: i64, groups: &str) -> BridgeResult<Vec<String>> {
    guard("ember_feature_names", || {
        Ok(EmberFeatures::new(feature_version, &parse_groups(groups)?)?.feature_names())
    })
}

fn new_ember2024_string_features() -> BridgeResult<Box<FloatRows>> {
    guard("new_ember2024_string_features", || {
        Ok(FloatRows::boxed(Ember2024Strings::new()?))
    })
}

fn new_byte_sequence(
    max_len: i64,
    shift: i64,
    pad_value: i64,
    sampling: ffi::Sampling,
) -> BridgeResult<Box<Int32Rows>> {
    guard("new_byte_sequence", || {
        let extractor = ByteSequence::new(
            size(max_len),
            int32("shift", shift)?,
            int32("pad_value", pad_value)?,
            sampling.to_core()?,
        )?;
        Ok(Int32Rows::boxed(extractor))
    })
}

// ---- Hashed n-grams ----------------------------------------------------------

fn ngram_hasher(params: &ffi::NgramParams) -> Result<NgramHasher> {
    NgramHasher::new(NgramConfig {
        tokenizer: params.tokenizer.to_core()?,
        widths: params.widths.iter().map(|&w| size(w)).collect(),
        lowercase: params.lowercase,
        hash: params.hash.to_core()?,
        // A negative count maps to 0, which NgramHasher::new rejects.
        num_buckets: u64::try_from(params.num_buckets).unwrap_or(0),
    })
}

fn ngram_counter(params: &ffi::NgramParams, counts: &ffi::CountParams) -> Result<NgramCounter> {
    let options = CountOptions {
        binary: counts.binary,
        alternate_sign: counts.alternate_sign,
        norm: counts.norm.to_core()?,
    };
    NgramCounter::new(ngram_hasher(params)?, options)
}

fn new_ngram_sequence(
    params: &ffi::NgramParams,
    max_tokens: i64,
    pad_value: i64,
) -> BridgeResult<Box<Int64Rows>> {
    guard("new_ngram_sequence", || {
        let extractor = NgramSequence::new(ngram_hasher(params)?, size(max_tokens), pad_value)?;
        Ok(Int64Rows::boxed(extractor))
    })
}

fn new_ngram_counts(
    params: &ffi::NgramParams,
    counts: &ffi::CountParams,
) -> BridgeResult<Box<FloatRows>> {
    guard("new_ngram_counts", || {
        let extractor = NgramCounts::new(ngram_counter(params, counts)?)?;
        Ok(FloatRows::boxed(extractor))
    })
}

/// The hasher behind the ragged output.
pub struct NgramRagged(NgramHasher);

fn new_ngram_ragged(params: &ffi::NgramParams) -> BridgeResult<Box<NgramRagged>> {
    guard("new_ngram_ragged", || {
        Ok(Box::new(NgramRagged(ngram_hasher(params)?)))
    })
}

impl NgramRagged {
    fn append_ids(&self, doc: &[u8], ids: &mut Vec<i64>) -> BridgeResult<()> {
        guard("hashed_ngrams", || {
            self.0.ids(doc, ids);
            Ok(())
        })
    }
}

/// The counter behind the sparse output.
pub struct NgramSparse(NgramCounter);

fn new_ngram_sparse(
    params: &ffi::NgramParams,
    counts: &ffi::CountParams,
) -> BridgeResult<Box<NgramSparse>> {
    guard("new_ngram_sparse", || {
        Ok(Box::new(NgramSparse(ngram_counter(params, counts)?)))
    })
}

impl NgramSparse {
    fn write_counts(
        &self,
        doc: &[u8],
        indices: &mut Vec<u64>,
        values: &mut Vec<f32>,
    ) -> BridgeResult<()> {
        guard("hashed_ngrams (sparse)", || {
            // The kernel's own vectors become the row: no copy.
            let mut row = SparseRow {
                indices: std::mem::take(indices),
                values: std::mem::take(values),
            };
            self.0.counts(doc, &mut row);
            (*indices, *values) = (row.indices, row.values);
            Ok(())
        })
    }
}

// ---- Reading files -------------------------------------------------------------

fn check_max_bytes(max_bytes: i64) -> BridgeResult<()> {
    guard("check_max_bytes", || {
        crate::read::check_max_bytes(max_bytes).map(|_| ())
    })
}

/// `read::DocumentSource` behind the bridge.
pub struct DocumentSource(crate::read::DocumentSource);

fn new_document_source(
    read_files: bool,
    max_bytes: i64,
    on_error: ffi::OnError,
) -> BridgeResult<Box<DocumentSource>> {
    guard("new_document_source", || {
        let on_error = on_error.to_core()?;
        crate::read::DocumentSource::new(read_files, max_bytes, on_error)
            .map(|source| Box::new(DocumentSource(source)))
    })
}

impl DocumentSource {
    fn reads_files(&self) -> bool {
        matches!(self.0, crate::read::DocumentSource::Files { .. })
    }

    fn read_document(&self, path: &[u8], buffer: &mut Vec<u8>) -> ffi::Status {
        status_of(guard_kind("read_files", || {
            self.0.read_document(path, buffer).map(|_| ())
        }))
    }
}

/// An opened file, or why it could not be opened.
pub struct FileReader(Result<crate::read::OpenFile>);

fn open_file(path: &[u8]) -> Box<FileReader> {
    Box::new(FileReader(guard_kind("read_files", || {
        crate::read::OpenFile::open(path)
    })))
}

impl FileReader {
    fn status(&self) -> ffi::Status {
        status_of(self.0.as_ref().map(|_| ()).map_err(Error::clone))
    }

    fn size_hint(&self) -> u64 {
        self.0.as_ref().map_or(0, crate::read::OpenFile::size_hint)
    }

    fn read_into(&mut self, buf: &mut [u8]) -> ffi::ReadChunk {
        let read = guard_kind("read_files", || match &mut self.0 {
            Ok(file) => file.read_into(buf),
            Err(e) => Err(e.clone()),
        });
        ffi::ReadChunk {
            len: *read.as_ref().unwrap_or(&0),
            status: status_of(read.map(|_| ())),
        }
    }

    fn read_rest(&mut self, limit: u64, out: &mut Vec<u8>) -> ffi::Status {
        status_of(guard_kind("read_files", || match &mut self.0 {
            Ok(file) => file.read_rest(limit, out),
            Err(e) => Err(e.clone()),
        }))
    }
}

fn status_of(outcome: Result<()>) -> ffi::Status {
    match outcome {
        Ok(()) => ffi::Status {
            code: ffi::StatusCode::Ok,
            message: String::new(),
        },
        Err(e) => ffi::Status {
            code: status_code(e.kind()),
            message: e.to_string(),
        },
    }
}

fn status_code(kind: ErrorKind) -> ffi::StatusCode {
    match kind {
        ErrorKind::InvalidArgument => ffi::StatusCode::InvalidArgument,
        ErrorKind::NotFound => ffi::StatusCode::NotFound,
        ErrorKind::PermissionDenied => ffi::StatusCode::PermissionDenied,
        ErrorKind::Io => ffi::StatusCode::Unknown,
        ErrorKind::Internal => ffi::StatusCode::Internal,
    }
}
