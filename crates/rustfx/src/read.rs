//! Bounded, non-blocking file reading for untrusted paths.
//!
//! [`read_file`] never blocks on a FIFO or device, never reads more than
//! `max_bytes` (longer files are truncated, the usual convention for raw-byte
//! models), and reports failures with an [`ErrorKind`] that maps onto a
//! TensorFlow status code and a message that names the path.
//!
//! ```
//! use rustfx::read::read_file;
//! use rustfx::ErrorKind;
//! use std::os::unix::ffi::OsStrExt;
//!
//! let dir = std::env::temp_dir().join(format!("rustfx-read-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("sample.bin");
//! std::fs::write(&path, b"MZ\x90\x00 and the rest")?;
//! let path = path.as_os_str().as_bytes();
//!
//! assert_eq!(read_file(path, 1 << 20)?, b"MZ\x90\x00 and the rest");
//! assert_eq!(read_file(path, 4)?, b"MZ\x90\x00"); // truncated at max_bytes
//!
//! let missing = read_file(b"/nonexistent/rustfx/file", 1 << 20).unwrap_err();
//! assert_eq!(missing.kind(), ErrorKind::NotFound);
//! assert!(missing.to_string().contains("/nonexistent/rustfx/file"));
//!
//! // A directory is refused at once, as a FIFO or a device would be.
//! let refused = read_file(dir.as_os_str().as_bytes(), 1 << 20).unwrap_err();
//! assert_eq!(refused.kind(), ErrorKind::InvalidArgument);
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::{Error, ErrorKind, Result};
use std::fs::File;
use std::io::{ErrorKind as IoKind, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The largest `max_bytes` accepted: one element of a string tensor is
/// capped at 2 GiB - 1 so an int32 length never overflows downstream.
pub const MAX_READ_BYTES: u64 = (1 << 31) - 1;

/// What `read_files` and every program read of a file by default, 64 MiB:
/// the one definition (the ops' Python wrappers and corpus extraction take
/// it from the core's C ABI, the CLIs from here).
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;

/// The longest path accepted, in bytes (Linux `PATH_MAX`, with its NUL).
pub const MAX_PATH_BYTES: usize = 4095;

/// What a batch read does with a path that cannot be read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OnError {
    /// Fail the whole batch with the error of the first failing element.
    #[default]
    Raise,
    /// Give the failing element empty contents and report it in its status,
    /// so one corrupt file cannot stop a run.
    Empty,
}

crate::names::named_values!(OnError, "on_error", {
    Raise => "raise",
    Empty => "empty",
});

/// Checks a `max_bytes` parameter.
pub fn check_max_bytes(max_bytes: i64) -> Result<u64> {
    if max_bytes < 0 || max_bytes as u64 > MAX_READ_BYTES {
        return Err(Error::invalid_argument(format!(
            "max_bytes must be in [0, {MAX_READ_BYTES}], got {max_bytes}"
        )));
    }
    Ok(max_bytes as u64)
}

/// Reads at most `max_bytes` bytes of the regular file at `path`.
///
/// The path is taken as raw bytes (Linux paths need not be UTF-8). Symlinks
/// are followed; a dangling one is `NotFound`, a loop `InvalidArgument`.
/// Directories, FIFOs, sockets and devices are `InvalidArgument`: the file is
/// opened with `O_NONBLOCK`, so even a FIFO with no writer returns at once.
/// The size from `fstat` is only a hint (files under /proc say 0, a file may
/// grow or shrink while being read): reading stops at end of file or at
/// `max_bytes`, whichever comes first.
pub fn read_file(path: &[u8], max_bytes: u64) -> Result<Vec<u8>> {
    let mut contents = Vec::new();
    read_file_into(path, max_bytes, &mut contents)?;
    Ok(contents)
}

/// [`read_file`] into `out`, whose contents it replaces (with nothing on
/// error).
/// A caller reading many files reuses one buffer: once it has grown to a
/// typical file, a read allocates nothing (the path is decoded for a
/// message only on error).
pub fn read_file_into(path: &[u8], max_bytes: u64, out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    let (file, size_hint) = open_regular(path)?;
    out.reserve(usize::try_from(size_hint.min(max_bytes)).unwrap_or(0));
    if let Err(e) = (&file).take(max_bytes).read_to_end(out) {
        out.clear();
        return Err(io_error(&e, &shown(path), "cannot read"));
    }
    Ok(())
}

/// Where an extractor op's documents come from: its input strings, or the
/// files they name (`rustfx.files` in Python), each read like
/// [`read_file`] by the thread that extracts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocumentSource {
    /// The input strings are the documents.
    Contents,
    /// The input strings are paths.
    Files {
        /// At most this many bytes of each file.
        max_bytes: u64,
        /// What a file that cannot be read becomes.
        on_error: OnError,
    },
}

impl DocumentSource {
    /// The source an op's `read_files`, `read_max_bytes` and
    /// `read_on_error` attributes describe; the last two only mean
    /// something with `read_files`.
    pub fn new(read_files: bool, max_bytes: i64, on_error: OnError) -> Result<Self> {
        if read_files {
            let max_bytes = check_max_bytes(max_bytes)?;
            return Ok(DocumentSource::Files {
                max_bytes,
                on_error,
            });
        }
        if max_bytes != 0 || on_error != OnError::default() {
            return Err(Error::invalid_argument(format!(
                "read_max_bytes ({max_bytes}) and read_on_error ('{}') apply only when the \
                 input holds paths (read_files=true)",
                on_error.name()
            )));
        }
        Ok(DocumentSource::Contents)
    }

    /// The document `input` stands for: `input` itself, or the file it
    /// names, read into `buffer`. A file that cannot be read is an error
    /// with [`OnError::Raise`], empty with [`OnError::Empty`].
    pub fn read_document<'a>(&self, input: &'a [u8], buffer: &'a mut Vec<u8>) -> Result<&'a [u8]> {
        match *self {
            DocumentSource::Contents => Ok(input),
            DocumentSource::Files {
                max_bytes,
                on_error,
            } => match read_file_into(input, max_bytes, buffer) {
                Ok(()) => Ok(buffer),
                Err(_) if on_error == OnError::Empty => Ok(&[]),
                Err(e) => Err(e),
            },
        }
    }
}

/// A regular file opened for [`read_file`]'s bounded reads, for callers that
/// read into their own buffer (the TensorFlow kernel reads straight into the
/// output tensor): [`OpenFile::read_into`] a buffer sized by
/// [`OpenFile::size_hint`], then [`OpenFile::read_rest`] for whatever the
/// hint missed.
#[derive(Debug)]
pub struct OpenFile {
    file: File,
    size_hint: u64,
    path: String,
}

impl OpenFile {
    /// Opens the regular file at `path`, with every check of [`read_file`].
    pub fn open(path: &[u8]) -> Result<Self> {
        let (file, size_hint) = open_regular(path)?;
        Ok(OpenFile {
            file,
            size_hint,
            path: shown(path),
        })
    }

    /// The size `fstat` reported: only a hint (0 for /proc files; the file
    /// may grow or shrink while it is read).
    pub fn size_hint(&self) -> u64 {
        self.size_hint
    }

    /// Reads into `buf` until it is full or the file ends; returns how many
    /// bytes were read.
    pub fn read_into(&mut self, buf: &mut [u8]) -> Result<usize> {
        let mut filled = 0;
        while let Some(rest) = buf.get_mut(filled..).filter(|r| !r.is_empty()) {
            match self.file.read(rest) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => return Err(io_error(&e, &self.path, "cannot read")),
            }
        }
        Ok(filled)
    }

    /// Appends the rest of the file to `out`, at most `limit` more bytes.
    pub fn read_rest(&mut self, limit: u64, out: &mut Vec<u8>) -> Result<()> {
        (&mut self.file)
            .take(limit)
            .read_to_end(out)
            .map(|_| ())
            .map_err(|e| io_error(&e, &self.path, "cannot read"))
    }
}

/// The regular file at `path`, opened without blocking, and the size
/// `fstat` reported for it. Allocates nothing unless it fails.
fn open_regular(path: &[u8]) -> Result<(File, u64)> {
    if path.is_empty() {
        return Err(Error::invalid_argument("empty path"));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(Error::invalid_argument(format!(
            "path is {} bytes long, more than the {MAX_PATH_BYTES} allowed: '{}...'",
            path.len(),
            shown(&path[..64])
        )));
    }
    if path.contains(&0) {
        return Err(Error::invalid_argument(format!(
            "path contains a NUL byte: '{}'",
            shown(path).escape_default()
        )));
    }
    let os_path = Path::new(std::ffi::OsStr::from_bytes(path));
    // stat before open: opening a FIFO, socket or device can itself have
    // effects (it releases a writer blocked on the FIFO, arms a watchdog).
    let meta = std::fs::metadata(os_path).map_err(|e| io_error(&e, &shown(path), "cannot stat"))?;
    check_regular(&meta, path)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(os_path)
        .map_err(|e| io_error(&e, &shown(path), "cannot open"))?;
    // The path may have been swapped for something else since the stat:
    // check what was opened (O_NONBLOCK means the open itself never waits).
    let meta = file
        .metadata()
        .map_err(|e| io_error(&e, &shown(path), "cannot stat"))?;
    check_regular(&meta, path)?;
    Ok((file, meta.len()))
}

/// InvalidArgument naming `path` unless `meta` is a regular file's.
fn check_regular(meta: &std::fs::Metadata, path: &[u8]) -> Result<()> {
    let file_type = meta.file_type();
    if file_type.is_file() {
        return Ok(());
    }
    let what = if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    };
    Err(Error::invalid_argument(format!(
        "'{}' is {what}; only regular files can be read",
        shown(path)
    )))
}

/// A path as messages show it: its UTF-8 as it is, each byte that is not
/// UTF-8 as `\xHH`, so a name such as `bad\xffname` is told apart from
/// others (a lossy conversion would print U+FFFD for any such byte).
pub fn shown(path: &[u8]) -> String {
    let mut text = String::with_capacity(path.len());
    for chunk in path.utf8_chunks() {
        text.push_str(chunk.valid());
        for byte in chunk.invalid() {
            text.push_str(&format!("\\x{byte:02x}"));
        }
    }
    text
}

/// The error of `doing` (`cannot open`) on the file `path` (as [`shown`]).
fn io_error(e: &std::io::Error, path: &str, doing: &str) -> Error {
    let kind = match e.kind() {
        IoKind::NotFound => ErrorKind::NotFound,
        IoKind::PermissionDenied => ErrorKind::PermissionDenied,
        _ => match e.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::ENAMETOOLONG) | Some(libc::ENOTDIR) => {
                ErrorKind::InvalidArgument
            }
            Some(libc::ENXIO) | Some(libc::ENODEV) => ErrorKind::InvalidArgument,
            _ => ErrorKind::Io,
        },
    };
    Error::new(kind, format!("{doing} '{path}': {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn messages_show_each_byte_that_is_not_utf8_as_hex() {
        assert_eq!(shown(b"bad\xffname/\xc3\xa9"), "bad\\xffname/\u{e9}");
        let error = read_file(b"/nonexistent/bad\xffname", 1).unwrap_err();
        assert!(
            error.to_string().contains("'/nonexistent/bad\\xffname'"),
            "{error}"
        );
    }

    /// A fresh directory for one test, removed when the test ends (on
    /// success or panic).
    struct TempDir(std::path::PathBuf);

    impl std::ops::Deref for TempDir {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn temp_dir(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("rustfx-read-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn bytes(p: &Path) -> &[u8] {
        p.as_os_str().as_bytes()
    }

    #[test]
    fn open_file_reads_into_a_buffer_then_the_rest() {
        let dir = temp_dir("open");
        let p = dir.join("f");
        let data: Vec<u8> = (0..100u8).collect();
        std::fs::write(&p, &data).unwrap();
        // A buffer shorter than the file (the file grew after the stat).
        let mut f = OpenFile::open(bytes(&p)).unwrap();
        assert_eq!(f.size_hint(), 100);
        let mut head = [0u8; 40];
        assert_eq!(f.read_into(&mut head).unwrap(), 40);
        let mut rest = Vec::new();
        f.read_rest(30, &mut rest).unwrap();
        assert_eq!([&head[..], &rest[..]].concat(), &data[..70]);
        f.read_rest(1000, &mut rest).unwrap();
        assert_eq!([&head[..], &rest[..]].concat(), data);
        // A buffer longer than the file (the file shrank).
        let mut f = OpenFile::open(bytes(&p)).unwrap();
        let mut big = [7u8; 150];
        assert_eq!(f.read_into(&mut big).unwrap(), 100);
        assert_eq!(&big[..100], &data[..]);
        assert_eq!(f.read_into(&mut big).unwrap(), 0);
        // The same checks as read_file.
        let e = OpenFile::open(bytes(&dir)).unwrap_err();
        assert!(e.message().contains("is a directory"), "{e}");
    }

    #[test]
    fn read_file_into_replaces_the_buffer_and_keeps_its_room() {
        let dir = temp_dir("into");
        let (long, short) = (dir.join("long"), dir.join("short"));
        std::fs::write(&long, vec![b'x'; 5000]).unwrap();
        std::fs::write(&short, b"abc").unwrap();
        let mut buffer = Vec::new();
        read_file_into(bytes(&long), 1 << 20, &mut buffer).unwrap();
        assert_eq!(buffer, vec![b'x'; 5000]);
        let room = buffer.capacity();
        read_file_into(bytes(&short), 1 << 20, &mut buffer).unwrap();
        assert_eq!(buffer, b"abc");
        assert_eq!(buffer.capacity(), room, "the buffer was reallocated");
        read_file_into(bytes(&long), 10, &mut buffer).unwrap();
        assert_eq!(buffer, b"xxxxxxxxxx");
        // A failed read leaves nothing of the previous file behind.
        let e = read_file_into(bytes(&dir.join("missing")), 10, &mut buffer).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(buffer.is_empty());
    }

    #[test]
    fn document_source_attrs() {
        assert_eq!(
            DocumentSource::new(false, 0, OnError::Raise).unwrap(),
            DocumentSource::Contents
        );
        assert_eq!(
            DocumentSource::new(true, 7, OnError::Empty).unwrap(),
            DocumentSource::Files {
                max_bytes: 7,
                on_error: OnError::Empty
            }
        );
        let e = DocumentSource::new(true, -1, OnError::Raise).unwrap_err();
        assert!(e.message().contains("max_bytes must be in [0, "), "{e}");
        for (max_bytes, on_error) in [(5, OnError::Raise), (0, OnError::Empty)] {
            let e = DocumentSource::new(false, max_bytes, on_error).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(
                e.message().contains("only when the input holds paths"),
                "{e}"
            );
        }
    }

    #[test]
    fn document_source_reads_by_its_rules() {
        let dir = temp_dir("source");
        let (file, missing) = (dir.join("f"), dir.join("missing"));
        std::fs::write(&file, b"contents").unwrap();
        let mut buffer = Vec::new();
        let contents = DocumentSource::Contents;
        assert_eq!(
            contents.read_document(b"as is", &mut buffer).unwrap(),
            b"as is"
        );
        let raise = DocumentSource::new(true, 4, OnError::Raise).unwrap();
        assert_eq!(
            raise.read_document(bytes(&file), &mut buffer).unwrap(),
            b"cont"
        );
        let e = raise
            .read_document(bytes(&missing), &mut buffer)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.message().contains("missing"), "{e}");
        let empty = DocumentSource::new(true, 4, OnError::Empty).unwrap();
        assert_eq!(
            empty.read_document(bytes(&missing), &mut buffer).unwrap(),
            b""
        );
        assert_eq!(empty.read_document(bytes(&dir), &mut buffer).unwrap(), b"");
    }

    #[test]
    fn reads_whole_and_truncated() {
        let dir = temp_dir("whole");
        let p = dir.join("f");
        std::fs::File::create(&p)
            .unwrap()
            .write_all(b"hello world")
            .unwrap();
        assert_eq!(read_file(bytes(&p), 100).unwrap(), b"hello world");
        assert_eq!(read_file(bytes(&p), 5).unwrap(), b"hello");
        assert_eq!(read_file(bytes(&p), 0).unwrap(), b"");
    }

    #[test]
    fn error_kinds_name_the_path() {
        let dir = temp_dir("kinds");
        let missing = dir.join("missing");
        let e = read_file(bytes(&missing), 10).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.message().contains("missing"), "{e}");

        let e = read_file(bytes(&dir), 10).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("directory"), "{e}");

        assert_eq!(
            read_file(b"", 10).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        assert_eq!(
            read_file(b"a\0b", 10).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        let long = vec![b'a'; MAX_PATH_BYTES + 1];
        assert_eq!(
            read_file(&long, 10).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }

    #[test]
    fn fifo_does_not_block() {
        let dir = temp_dir("fifo");
        let p = dir.join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&p)
            .status()
            .unwrap();
        assert!(made.success());
        let e = read_file(bytes(&p), 10).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("FIFO"), "{e}");
    }

    #[test]
    fn socket_is_named_as_such() {
        let dir = temp_dir("socket");
        let p = dir.join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&p).unwrap();
        let e = read_file(bytes(&p), 10).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("is a socket"), "{e}");
    }

    #[test]
    fn devices_and_proc() {
        let e = read_file(b"/dev/zero", 10).unwrap_err();
        assert!(e.message().contains("character device"), "{e}");
        // /proc files report size 0 but have contents.
        let status = read_file(b"/proc/self/status", 1 << 20).unwrap();
        assert!(status.starts_with(b"Name:"));
    }

    #[test]
    fn symlink_loop_and_dangling() {
        let dir = temp_dir("links");
        let a = dir.join("a");
        let b = dir.join("b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        assert_eq!(
            read_file(bytes(&a), 10).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        let d = dir.join("dangling");
        std::os::unix::fs::symlink(dir.join("nowhere"), &d).unwrap();
        assert_eq!(
            read_file(bytes(&d), 10).unwrap_err().kind(),
            ErrorKind::NotFound
        );
    }

    #[test]
    fn max_bytes_checked() {
        assert!(check_max_bytes(-1).is_err());
        assert!(check_max_bytes(MAX_READ_BYTES as i64 + 1).is_err());
        assert_eq!(check_max_bytes(7).unwrap(), 7);
    }
}
