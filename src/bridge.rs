//! The cxx bridge between the C++ TensorFlow kernels in `cpp/` and the core.
//!
//! Thin on purpose: an op's one `spec` attr (a [`FeatureSpec`]'s JSON) is
//! parsed, checked and built by the core (`new_extractor`), and the kernels
//! drive the built extractor through one call per output kind. No
//! extractor has an entry here: a new one is a registry entry in the core.
//! Closed sets of values the kernels need (`OnError`, the output kind)
//! cross as shared enums. Every entry runs inside [`guard`], so a Rust
//! panic never unwinds into C++: it becomes an error that names the
//! operation.
//!
//! [`FeatureSpec`]: rustfx::spec::FeatureSpec

use rustfx::error::catch_panic;
use rustfx::extractor::RaggedIdsExtractor;
use rustfx::extractor::{DType, Extractor as CoreExtractor, OutputKind, OutputSpec};
use rustfx::output::Batch;
use rustfx::read::OnError;
use rustfx::{Error, ErrorKind, Result};
use std::mem::take;

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

    /// `read::OnError`.
    enum OnError {
        Raise,
        Empty,
    }

    /// What a built extractor outputs: which op serves it, and which
    /// `Extractor` call fills that op's outputs.
    enum OutputKind {
        /// `write_f32_row`: Rustfx>DenseRows with Tout=float.
        Float32Rows,
        /// `write_i32_row`: Rustfx>DenseRows with Tout=int32.
        Int32Rows,
        /// `write_i64_row`: Rustfx>DenseRows with Tout=int64.
        Int64Rows,
        /// `append_ids`: Rustfx>RaggedIds.
        RaggedIds,
        /// `write_sparse_row`: Rustfx>SparseRows.
        SparseRows,
        /// `append_strings`: Rustfx>RaggedStrings.
        RaggedStrings,
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
        fn output_kind(self: &Extractor) -> OutputKind;
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
        /// Writes the rows of `docs` end to end into `out`.
        fn write_f32_rows(self: &Extractor, docs: &DocumentChunk, out: &mut [f32]) -> Result<()>;
        fn write_i32_rows(self: &Extractor, docs: &DocumentChunk, out: &mut [i32]) -> Result<()>;
        fn write_i64_rows(self: &Extractor, docs: &DocumentChunk, out: &mut [i64]) -> Result<()>;
        /// Appends the ids of each of `docs` to `ids`, pushing `ids.len()`
        /// to `row_ends` after each.
        fn append_id_rows(
            self: &Extractor,
            docs: &DocumentChunk,
            ids: &mut Vec<i64>,
            row_ends: &mut Vec<u64>,
        ) -> Result<()>;
        /// Whether the extractor may count a document's ids before
        /// extracting them (byte and character n-grams):
        /// then `write_row_splits` may size the output, and
        /// `write_id_rows` writes each chunk's ids straight into it.
        fn counts_ids_up_front(self: &Extractor) -> bool;
        /// The row splits of all of `docs` (`docs.len() + 1` of them, from
        /// 0); false, with `row_splits` unspecified, when a document's ids
        /// cannot be counted up front.
        fn write_row_splits(
            self: &Extractor,
            docs: &DocumentChunk,
            row_splits: &mut [i64],
        ) -> Result<bool>;
        /// At most how many ids all of `docs` have, from their lengths
        /// alone (byte and character n-grams: a window per byte at most);
        /// `u64::MAX` when that is unknown. What to size the output by
        /// when `write_row_splits` cannot count.
        fn max_ids(self: &Extractor, docs: &DocumentChunk) -> Result<u64>;
        /// The ids of `docs`, end to end, into `out`, which holds exactly
        /// as many.
        fn write_id_rows(self: &Extractor, docs: &DocumentChunk, out: &mut [i64]) -> Result<()>;
        /// Appends the sparse row of each of `docs` (indices sorted) to
        /// `indices` and `values`, pushing `indices.len()` to `row_ends`
        /// after each.
        fn append_sparse_rows(
            self: &Extractor,
            docs: &DocumentChunk,
            indices: &mut Vec<u64>,
            values: &mut Vec<f32>,
            row_ends: &mut Vec<u64>,
        ) -> Result<()>;
        /// Appends each string of each of `docs` to `bytes`, pushing
        /// `bytes.len()` to `ends` after each string and `ends.len()` to
        /// `row_ends` after each document.
        fn append_string_rows(
            self: &Extractor,
            docs: &DocumentChunk,
            bytes: &mut Vec<u8>,
            ends: &mut Vec<u64>,
            row_ends: &mut Vec<u64>,
        ) -> Result<()>;

        /// Runs `work` on every chunk `c < chunks`, on at most `threads`
        /// threads, the caller's included (`op_threads::run_chunks`).
        fn run_chunks(work: &ChunkWork, chunks: usize, threads: usize);
        /// The threads an op call may use (`op_threads::default_threads`).
        fn default_threads() -> usize;

        fn check_max_bytes(max_bytes: i64) -> Result<()>;

        /// SHA-256 of `data` as 64 lowercase hex digits (`sha256::sha256_hex`),
        /// for Rustfx>Sha256.
        fn sha256_hex(data: &[u8]) -> Result<String>;

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
    fn to_core(self) -> Result<OnError> {
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
    /// Which op serves the extractor: the bridge's form of its output spec.
    fn output_kind(&self) -> ffi::OutputKind {
        match self.extractor.output() {
            OutputSpec {
                kind: OutputKind::Dense,
                dtype: DType::Int32,
                ..
            } => ffi::OutputKind::Int32Rows,
            OutputSpec {
                kind: OutputKind::Dense,
                dtype: DType::Int64,
                ..
            } => ffi::OutputKind::Int64Rows,
            OutputSpec {
                kind: OutputKind::Dense,
                ..
            } => ffi::OutputKind::Float32Rows,
            OutputSpec {
                kind: OutputKind::Ragged,
                dtype: DType::String,
                ..
            } => ffi::OutputKind::RaggedStrings,
            OutputSpec {
                kind: OutputKind::Ragged,
                ..
            } => ffi::OutputKind::RaggedIds,
            OutputSpec {
                kind: OutputKind::Sparse,
                ..
            } => ffi::OutputKind::SparseRows,
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

    // Dense rows go straight into the output tensor; the other kinds
    // through the core's batch, into the kernel's rust::Vec buffers (moved,
    // not copied).

    fn write_f32_rows(&self, docs: &ffi::DocumentChunk, out: &mut [f32]) -> BridgeResult<()> {
        guard("write_f32_rows", || {
            self.extractor.write_dense_rows(&documents(docs), out)
        })
    }

    fn write_i32_rows(&self, docs: &ffi::DocumentChunk, out: &mut [i32]) -> BridgeResult<()> {
        guard("write_i32_rows", || {
            self.extractor.write_dense_rows(&documents(docs), out)
        })
    }

    fn write_i64_rows(&self, docs: &ffi::DocumentChunk, out: &mut [i64]) -> BridgeResult<()> {
        guard("write_i64_rows", || {
            self.extractor.write_dense_rows(&documents(docs), out)
        })
    }

    fn append_id_rows(
        &self,
        docs: &ffi::DocumentChunk,
        ids: &mut Vec<i64>,
        row_ends: &mut Vec<u64>,
    ) -> BridgeResult<()> {
        guard("append_id_rows", || {
            let mut batch = Batch::RaggedIds {
                ids: take(ids),
                row_ends: take(row_ends),
            };
            self.extractor.append_batch(&documents(docs), &mut batch)?;
            let Batch::RaggedIds {
                ids: got,
                row_ends: ends,
            } = batch
            else {
                return Err(self.wrong_kind("append_id_rows"));
            };
            (*ids, *row_ends) = (got, ends);
            Ok(())
        })
    }

    fn counts_ids_up_front(&self) -> bool {
        self.extractor
            .ragged_ids()
            .is_some_and(|e| e.counts_ids_up_front())
    }

    fn write_row_splits(
        &self,
        docs: &ffi::DocumentChunk,
        row_splits: &mut [i64],
    ) -> BridgeResult<bool> {
        guard("write_row_splits", || {
            let e = self.ragged_ids("write_row_splits")?;
            let (first, rest) = row_splits
                .split_first_mut()
                .filter(|(_, rest)| rest.len() == docs.len())
                .ok_or_else(|| Error::new(ErrorKind::Internal, "row_splits of the wrong size"))?;
            *first = 0;
            let mut end = 0i64;
            for (split, doc) in rest.iter_mut().zip(documents(docs)) {
                let Some(count) = e.id_count(doc) else {
                    return Ok(false);
                };
                end = i64::try_from(count)
                    .ok()
                    .and_then(|count| end.checked_add(count))
                    .ok_or_else(|| Error::invalid_argument("more ids than int64 counts"))?;
                *split = end;
            }
            Ok(true)
        })
    }

    fn max_ids(&self, docs: &ffi::DocumentChunk) -> BridgeResult<u64> {
        guard("max_ids", || {
            let e = self.ragged_ids("max_ids")?;
            Ok(documents(docs)
                .iter()
                .map(|doc| e.id_bound(doc).and_then(|bound| u64::try_from(bound).ok()))
                .try_fold(0u64, |total, bound| total.checked_add(bound?))
                .unwrap_or(u64::MAX))
        })
    }

    fn write_id_rows(&self, docs: &ffi::DocumentChunk, out: &mut [i64]) -> BridgeResult<()> {
        guard("write_id_rows", || {
            self.ragged_ids("write_id_rows")?
                .write_id_rows(&documents(docs), out)
        })
    }

    fn append_sparse_rows(
        &self,
        docs: &ffi::DocumentChunk,
        indices: &mut Vec<u64>,
        values: &mut Vec<f32>,
        row_ends: &mut Vec<u64>,
    ) -> BridgeResult<()> {
        guard("append_sparse_rows", || {
            let mut batch = Batch::SparseRows {
                width: 0,
                indices: take(indices),
                values: take(values),
                row_ends: take(row_ends),
            };
            self.extractor.append_batch(&documents(docs), &mut batch)?;
            let Batch::SparseRows {
                indices: i,
                values: v,
                row_ends: ends,
                ..
            } = batch
            else {
                return Err(self.wrong_kind("append_sparse_rows"));
            };
            (*indices, *values, *row_ends) = (i, v, ends);
            Ok(())
        })
    }

    fn append_string_rows(
        &self,
        docs: &ffi::DocumentChunk,
        bytes: &mut Vec<u8>,
        ends: &mut Vec<u64>,
        row_ends: &mut Vec<u64>,
    ) -> BridgeResult<()> {
        guard("append_string_rows", || {
            let mut batch = Batch::RaggedStrings {
                bytes: take(bytes),
                string_ends: take(ends),
                row_ends: take(row_ends),
            };
            self.extractor.append_batch(&documents(docs), &mut batch)?;
            let Batch::RaggedStrings {
                bytes: b,
                string_ends: s,
                row_ends: r,
            } = batch
            else {
                return Err(self.wrong_kind("append_string_rows"));
            };
            (*bytes, *ends, *row_ends) = (b, s, r);
            Ok(())
        })
    }

    /// The ragged-ids extractor, for the calls that serve RaggedIds only.
    fn ragged_ids(&self, call: &str) -> Result<&dyn RaggedIdsExtractor> {
        self.extractor
            .ragged_ids()
            .ok_or_else(|| self.wrong_kind(call))
    }

    /// The error of a call that does not serve the extractor's output kind
    /// (or whose batch came back in another layout): the kernels check the
    /// kind first, so this is a bug.
    fn wrong_kind(&self, call: &str) -> Error {
        Error::new(
            ErrorKind::Internal,
            format!(
                "{call} on an extractor of output {:?} (a bug in rustfx)",
                self.extractor.output()
            ),
        )
    }
}

/// The documents of a chunk as the core takes them: one allocation per
/// chunk, not per document.
fn documents(chunk: &ffi::DocumentChunk) -> Vec<&[u8]> {
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
