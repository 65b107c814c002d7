//! The cxx bridge between the C++ TensorFlow kernels in `cpp/` and the core.
//!
//! Thin on purpose: an op's one `spec` attr (a [`FeatureSpec`]'s JSON) is
//! parsed, checked and built by the core (`new_extractor`), and the kernels
//! drive the built extractor through one call per layout, whatever the
//! dtype: values cross as the bytes of a tensor's buffer, and the kernels
//! read the dtype from the shared `DType` (cpp/dtypes.h maps it to
//! TensorFlow's). No extractor has an entry here: a new one is a registry
//! entry in the core. Closed sets of values the kernels need (`OnError`,
//! the layout, the dtype) cross as shared enums. Every entry runs inside [`guard`], so a Rust
//! panic never unwinds into C++: it becomes an error that names the
//! operation.
//!
//! [`FeatureSpec`]: rustfx::spec::FeatureSpec

use crate::cache_ops::{feature_cache_stats, new_op_cache, OpCache};
use crate::part::Part;
use rustfx::error::catch_panic;
use rustfx::extractor::{Extractor as CoreExtractor, RaggedOutput};
use rustfx::output::{DType, Layout, ValuesMut};
use rustfx::read::OnError;
use rustfx::{Error, ErrorKind, Result};

#[cxx::bridge(namespace = "rustfx")]
pub(crate) mod ffi {
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

    /// `read::OnError`.
    enum OnError {
        Raise,
        Empty,
    }

    /// How an extractor's output is laid out (`output::Layout`): which
    /// kernel serves it.
    enum Layout {
        /// Rustfx>DenseRows: `write_dense_rows`.
        Dense,
        /// Rustfx>Ragged (and the older Rustfx>RaggedIds, RaggedStrings):
        /// `extract_part`, or `write_row_splits` + `write_values`.
        Ragged,
        /// Rustfx>SparseRows: `extract_part`.
        Sparse,
    }

    /// The values' element type (`output::DType`); cpp/dtypes.h maps each to
    /// its TF_DataType and size, static-asserted against this list.
    enum DType {
        Float32,
        Int64,
        Int32,
        Int16,
        UInt16,
        UInt8,
        String,
    }

    /// One read into a caller's buffer: its outcome and the bytes read.
    struct ReadChunk {
        status: Status,
        len: usize,
    }

    // ---- C++ types Rust reads ----------------------------------------------

    unsafe extern "C++" {
        include!("rustfx/cpp/document_chunk.h");
        /// A run of documents: elements of a string tensor, or one file
        /// just read (cpp/document_chunk.h).
        type DocumentChunk;
        fn len(self: &DocumentChunk) -> usize;
        /// Writes document `i` to `docs[i]`, for each `i < len()` (`docs`
        /// holds `len()`): one call per chunk, not per document (a call
        /// each was 3% of whitespace ids of log lines).
        fn fill<'a>(self: &'a DocumentChunk, docs: &mut [&'a [u8]]);

        include!("rustfx/cpp/chunk_work.h");
        /// An op call's work on one chunk of its batch (cpp/chunk_work.h),
        /// which `run_chunks` runs on its threads. `run` catches every
        /// error itself.
        type ChunkWork;
        fn run(self: &ChunkWork, chunk: usize);
    }

    // ---- Rust functions the kernels call ------------------------------------

    extern "Rust" {
        fn parse_on_error(name: &str) -> Result<OnError>;

        /// An extractor built from a spec (the op's `spec` attr), checked by
        /// the core: a bad spec or an output version of another build is
        /// an error with the core's message.
        type Extractor;
        fn new_extractor(spec: &str) -> Result<Box<Extractor>>;
        fn layout(self: &Extractor) -> Layout;
        fn dtype(self: &Extractor) -> DType;
        /// Values per row (dense), dense width (sparse), 0 (ragged).
        fn width(self: &Extractor) -> usize;
        /// At most how many bytes of a document its output costs,
        /// `u64::MAX` for the whole document.
        fn work_bytes_hint(self: &Extractor) -> u64;
        /// Rough cycles per input byte (the registry's figure).
        fn cost_per_byte(self: &Extractor) -> i64;
        // Each call serves a chunk of documents (the kernels' unit of
        // work), not one: on short records a call per document costs as
        // much as the work.
        /// Writes the dense rows of `docs` end to end into `out`, the bytes
        /// of values of the extractor's dtype (a tensor's buffer).
        fn write_dense_rows(self: &Extractor, docs: &DocumentChunk, out: &mut [u8]) -> Result<()>;
        /// The ragged or sparse rows of `docs` (a chunk's part of the output).
        fn extract_part(self: &Extractor, docs: &DocumentChunk) -> Result<Box<Part>>;
        /// `part` refilled with the rows of `docs`, its buffers reused.
        fn refill_part(self: &Extractor, docs: &DocumentChunk, part: &mut Part) -> Result<()>;
        /// The rows of `docs` appended to `part`'s (a chunk whose files are
        /// read and extracted one by one).
        fn append_part(self: &Extractor, docs: &DocumentChunk, part: &mut Part) -> Result<()>;
        /// Whether the extractor may count a document's ragged values before
        /// extracting them (byte and character n-grams, byte sequences):
        /// then `write_row_splits` may size the output, and `write_values`
        /// writes each chunk's values straight into it.
        fn counts_up_front(self: &Extractor) -> bool;
        /// The row splits of all of `docs` (`docs.len() + 1` of them, from
        /// 0); false, with `row_splits` unspecified, when a document's values
        /// cannot be counted up front.
        fn write_row_splits(
            self: &Extractor,
            docs: &DocumentChunk,
            row_splits: &mut [i64],
        ) -> Result<bool>;
        /// At most how many values all of `docs` have, from their lengths
        /// alone; `u64::MAX` when that is unknown. What to size the output
        /// by when `write_row_splits` cannot count.
        fn max_values(self: &Extractor, docs: &DocumentChunk) -> Result<u64>;
        /// The ragged values of `docs`, end to end, into `out`: the bytes of
        /// exactly as many values of the extractor's dtype.
        fn write_values(self: &Extractor, docs: &DocumentChunk, out: &mut [u8]) -> Result<()>;

        /// A chunk's ragged or sparse rows (`output::Batch`).
        type Part;
        /// Where each document's values end (cumulative, one per document:
        /// the batch's `Offsets` after the first).
        fn row_ends(self: &Part) -> &[i64];
        /// How many values (strings: how many strings).
        fn value_count(self: &Part) -> usize;
        /// The values' bytes (numbers: native-endian; strings: end to end).
        fn value_bytes(self: &Part) -> &[u8];
        /// Where each string ends in `value_bytes` (strings only).
        fn string_ends(self: &Part) -> &[i64];
        /// Each value's column (sparse rows only).
        fn indices(self: &Part) -> &[u64];
        /// Ok, or why the part's first unreadable file could not be read
        /// (a cached chunk read with on_error Raise; its row: `error_row`).
        fn error(self: &Part) -> Status;
        fn error_row(self: &Part) -> usize;

        /// The feature cache an extractor op reads and fills (its `cache_*`
        /// attrs, src/cache_ops.rs): the process's cache of `dir`, or none
        /// (`dir` empty; or it could not be opened: said once on stderr).
        /// Bad options are an error with the core's message.
        type OpCache;
        fn new_op_cache(
            spec: &str,
            dir: &[u8],
            key: &str,
            max_bytes: i64,
            read_only: bool,
            read_max_bytes: i64,
            on_error: OnError,
        ) -> Result<Box<OpCache>>;
        /// Whether it has a cache to read.
        fn active(self: &OpCache) -> bool;
        /// The rows of the files `paths` names (read by the op's rules),
        /// each looked up by the cache's key, the misses extracted and
        /// queued to be stored.
        fn extract_files(self: &OpCache, paths: &DocumentChunk) -> Result<Box<Part>>;
        /// Rustfx>FeatureCacheStats: the figures of the process's cache of
        /// `dir` (`rustfx_cache::Stats::NAMES`), its queued rows committed;
        /// an error only for bad options.
        fn feature_cache_stats(
            dir: &[u8],
            key: &str,
            max_bytes: i64,
            read_only: bool,
        ) -> Result<Vec<u64>>;

        /// Runs `work` on every chunk `c < chunks`, on at most `threads`
        /// threads, the caller's included (`op_threads::run_chunks`).
        fn run_chunks(work: &ChunkWork, chunks: usize, threads: usize);
        /// The threads an op call may use (`op_threads::default_threads`).
        fn default_threads() -> usize;

        fn check_max_bytes(max_bytes: i64) -> Result<()>;

        /// SHA-256 of `data` as 64 lowercase hex digits (`sha256::sha256_hex`),
        /// for Rustfx>Sha256.
        fn sha256_hex(data: &[u8]) -> Result<String>;
        /// The feature cache's content key of `data` (its BLAKE3) as 64
        /// lowercase hex digits, for Rustfx>ContentKey.
        fn content_key_hex(data: &[u8]) -> Result<String>;

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

pub(crate) type BridgeResult<T> = std::result::Result<T, String>;

/// Runs `f`, turning a panic into an Internal error naming `what`.
pub(crate) fn guard<T>(what: &str, f: impl FnOnce() -> Result<T>) -> BridgeResult<T> {
    catch_panic(what, f).map_err(|e| e.to_string())
}

fn parse_on_error(name: &str) -> BridgeResult<ffi::OnError> {
    guard("parse_on_error", || {
        Ok(match OnError::from_name(name)? {
            OnError::Raise => ffi::OnError::Raise,
            OnError::Empty => ffi::OnError::Empty,
        })
    })
}

impl ffi::OnError {
    /// A cxx enum can hold any discriminant: another one is a bug.
    pub(crate) fn to_core(self) -> Result<OnError> {
        match self {
            ffi::OnError::Raise => Ok(OnError::Raise),
            ffi::OnError::Empty => Ok(OnError::Empty),
            _ => Err(Error::new(
                ErrorKind::Internal,
                format!("invalid OnError value {} (a bug in rustfx)", self.repr),
            )),
        }
    }
}

// ---- Extractors ----------------------------------------------------------------

/// A built extractor and the registry's cost figure.
pub struct Extractor {
    extractor: CoreExtractor,
    cost_per_byte: i64,
}

fn new_extractor(spec: &str) -> BridgeResult<Box<Extractor>> {
    guard("new_extractor", || {
        let (spec, extractor) = rustfx::spec::load(spec)?;
        Ok(Box::new(Extractor {
            extractor,
            cost_per_byte: i64::from(spec.entry().cost_per_byte),
        }))
    })
}

impl Extractor {
    fn layout(&self) -> ffi::Layout {
        match self.extractor.output().layout {
            Layout::Dense => ffi::Layout::Dense,
            Layout::Ragged => ffi::Layout::Ragged,
            Layout::Sparse => ffi::Layout::Sparse,
        }
    }

    /// The bridge's one dtype table: an arm per dtype.
    fn dtype(&self) -> ffi::DType {
        match self.extractor.output().dtype {
            DType::Float32 => ffi::DType::Float32,
            DType::Int64 => ffi::DType::Int64,
            DType::Int32 => ffi::DType::Int32,
            DType::Int16 => ffi::DType::Int16,
            DType::UInt16 => ffi::DType::UInt16,
            DType::UInt8 => ffi::DType::UInt8,
            DType::String => ffi::DType::String,
        }
    }

    fn width(&self) -> usize {
        self.extractor.output().width.unwrap_or(0)
    }

    fn work_bytes_hint(&self) -> u64 {
        self.extractor
            .work_bytes_hint()
            .map_or(u64::MAX, |n| n as u64)
    }

    fn cost_per_byte(&self) -> i64 {
        self.cost_per_byte
    }

    // Dense rows (and countable ragged values) go straight into the output
    // tensor; the other rows through a part (the core's batch), which the
    // kernel copies out.

    fn write_dense_rows(&self, docs: &ffi::DocumentChunk, out: &mut [u8]) -> BridgeResult<()> {
        guard("write_dense_rows", || {
            let out = ValuesMut::from_bytes(self.extractor.output().dtype, out)?;
            self.extractor.write_dense_rows(&documents(docs), out)
        })
    }

    fn extract_part(&self, docs: &ffi::DocumentChunk) -> BridgeResult<Box<Part>> {
        guard("extract_part", || {
            Ok(Box::new(Part::new(
                self.extractor.extract_batch(&documents(docs))?,
            )))
        })
    }

    fn refill_part(&self, docs: &ffi::DocumentChunk, part: &mut Part) -> BridgeResult<()> {
        guard("refill_part", || {
            self.extractor
                .extract_batch_into(&documents(docs), &mut part.batch)
        })
    }

    fn append_part(&self, docs: &ffi::DocumentChunk, part: &mut Part) -> BridgeResult<()> {
        guard("append_part", || {
            self.extractor
                .append_batch(&documents(docs), &mut part.batch)
        })
    }

    fn counts_up_front(&self) -> bool {
        self.extractor
            .as_ragged()
            .is_some_and(|e| e.counts_up_front())
    }

    fn write_row_splits(
        &self,
        docs: &ffi::DocumentChunk,
        row_splits: &mut [i64],
    ) -> BridgeResult<bool> {
        guard("write_row_splits", || {
            let e = self.ragged("write_row_splits")?;
            let (first, rest) = row_splits
                .split_first_mut()
                .filter(|(_, rest)| rest.len() == docs.len())
                .ok_or_else(|| Error::new(ErrorKind::Internal, "row_splits of the wrong size"))?;
            *first = 0;
            let mut end = 0i64;
            for (split, doc) in rest.iter_mut().zip(documents(docs)) {
                let Some(count) = e.value_count(doc) else {
                    return Ok(false);
                };
                end = i64::try_from(count)
                    .ok()
                    .and_then(|count| end.checked_add(count))
                    .ok_or_else(|| Error::invalid_argument("more values than int64 counts"))?;
                *split = end;
            }
            Ok(true)
        })
    }

    fn max_values(&self, docs: &ffi::DocumentChunk) -> BridgeResult<u64> {
        guard("max_values", || {
            let e = self.ragged("max_values")?;
            Ok(documents(docs)
                .iter()
                .map(|doc| {
                    e.value_bound(doc)
                        .and_then(|bound| u64::try_from(bound).ok())
                })
                .try_fold(0u64, |total, bound| total.checked_add(bound?))
                .unwrap_or(u64::MAX))
        })
    }

    fn write_values(&self, docs: &ffi::DocumentChunk, out: &mut [u8]) -> BridgeResult<()> {
        guard("write_values", || {
            let out = ValuesMut::from_bytes(self.extractor.output().dtype, out)?;
            self.ragged("write_values")?
                .write_values(&documents(docs), out)
        })
    }

    /// The ragged extractor, for the calls that serve ragged rows only.
    fn ragged(&self, call: &str) -> Result<&dyn RaggedOutput> {
        self.extractor.as_ragged().ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                format!(
                    "{call} on an extractor of output {:?} (a bug in rustfx)",
                    self.extractor.output()
                ),
            )
        })
    }
}

/// The documents of a chunk as the core takes them: one allocation per
/// chunk, not per document.
pub(crate) fn documents(chunk: &ffi::DocumentChunk) -> Vec<&[u8]> {
    let mut docs: Vec<&[u8]> = vec![&[]; chunk.len()];
    chunk.fill(&mut docs);
    docs
}

// ---- Threads -------------------------------------------------------------------

// SAFETY: `ChunkWork::run` is a const method of an object that only reads
// its captured state and writes each chunk's own part of the outputs (or
// records an error under a mutex): cpp/chunk_work.h says so where the type
// is defined. Sharing `&ChunkWork` between the pool's threads is what
// `run_chunks` does.
#[allow(unsafe_code)]
unsafe impl Sync for ffi::ChunkWork {}

fn run_chunks(work: &ffi::ChunkWork, chunks: usize, threads: usize) {
    crate::op_threads::run_chunks(chunks, threads, &|c| work.run(c));
}

fn default_threads() -> usize {
    crate::op_threads::default_threads()
}

// ---- Reading files -------------------------------------------------------------

fn check_max_bytes(max_bytes: i64) -> BridgeResult<()> {
    guard("check_max_bytes", || {
        rustfx::read::check_max_bytes(max_bytes).map(|_| ())
    })
}

fn sha256_hex(data: &[u8]) -> BridgeResult<String> {
    guard("sha256", || Ok(rustfx::sha256::sha256_hex(data)))
}

fn content_key_hex(data: &[u8]) -> BridgeResult<String> {
    guard("content_key", || {
        Ok(rustfx_cache::DocKey::of_content(data)
            .0
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect())
    })
}

/// `read::DocumentSource` behind the bridge.
pub struct DocumentSource(rustfx::read::DocumentSource);

fn new_document_source(
    read_files: bool,
    max_bytes: i64,
    on_error: ffi::OnError,
) -> BridgeResult<Box<DocumentSource>> {
    guard("new_document_source", || {
        let on_error = on_error.to_core()?;
        rustfx::read::DocumentSource::new(read_files, max_bytes, on_error)
            .map(|source| Box::new(DocumentSource(source)))
    })
}

impl DocumentSource {
    fn reads_files(&self) -> bool {
        matches!(self.0, rustfx::read::DocumentSource::Files { .. })
    }

    fn read_document(&self, path: &[u8], buffer: &mut Vec<u8>) -> ffi::Status {
        status_of(catch_panic("read_files", || {
            self.0.read_document(path, buffer).map(|_| ())
        }))
    }
}

/// An opened file, or why it could not be opened.
pub struct FileReader(Result<rustfx::read::OpenFile>);

fn open_file(path: &[u8]) -> Box<FileReader> {
    Box::new(FileReader(catch_panic("read_files", || {
        rustfx::read::OpenFile::open(path)
    })))
}

impl FileReader {
    fn status(&self) -> ffi::Status {
        status_of(self.0.as_ref().map(|_| ()).map_err(Error::clone))
    }

    fn size_hint(&self) -> u64 {
        self.0.as_ref().map_or(0, rustfx::read::OpenFile::size_hint)
    }

    fn read_into(&mut self, buf: &mut [u8]) -> ffi::ReadChunk {
        let read = catch_panic("read_files", || match &mut self.0 {
            Ok(file) => file.read_into(buf),
            Err(e) => Err(e.clone()),
        });
        ffi::ReadChunk {
            len: *read.as_ref().unwrap_or(&0),
            status: status_of(read.map(|_| ())),
        }
    }

    fn read_rest(&mut self, limit: u64, out: &mut Vec<u8>) -> ffi::Status {
        status_of(catch_panic("read_files", || match &mut self.0 {
            Ok(file) => file.read_rest(limit, out),
            Err(e) => Err(e.clone()),
        }))
    }
}

pub(crate) fn status_of(outcome: Result<()>) -> ffi::Status {
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

// The kernels' status codes are the core's table (`error::STATUS_CODES`),
// checked when this compiles.
const _: () = {
    use ErrorKind::*;
    assert!(ffi::StatusCode::Ok.repr == rustfx::error::OK_STATUS);
    assert!(ffi::StatusCode::InvalidArgument.repr == InvalidArgument.status_code());
    assert!(ffi::StatusCode::NotFound.repr == NotFound.status_code());
    assert!(ffi::StatusCode::PermissionDenied.repr == PermissionDenied.status_code());
    assert!(ffi::StatusCode::Unknown.repr == Io.status_code());
    assert!(ffi::StatusCode::Internal.repr == Internal.status_code());
};

fn status_code(kind: ErrorKind) -> ffi::StatusCode {
    ffi::StatusCode {
        repr: kind.status_code(),
    }
}
