//! Fuzz target `read_file`: path handling of `rustfx::read::read_file`.
//!
//! SAFETY OF THE FUZZER ITSELF: the fuzzer must never read a huge file, open a
//! device with side effects or block. So fuzzer-made paths are always
//! confined to a private fixture directory (created on the first call under
//! the system temp dir): a leading `/` is kept but the directory is put in
//! front of it, and every `..` component is replaced by `_`, so no path can
//! climb out. The only things outside reachable are the fixed specials below
//! (`/dev/zero`, `/dev/null`, `/proc/self/status`, `/`) and the fixture's
//! symlinks to them. `max_bytes` is at most 64 KiB, the largest fixture file.
//!
//! Fixtures: a regular file, an empty file, a 64 KiB file, a directory with a
//! file in it, a FIFO with no writer, a Unix socket, a symlink loop, a
//! self-link, a dangling link, links to the FIFO, to the directory, to
//! `/dev/zero`, `/dev/null` and `/proc/self/status`.
//!
//! Checks: no panic and no blocking (libFuzzer's -timeout catches a hang);
//! `Ok` never holds more than `max_bytes`; for a regular file inside the
//! fixture directory the bytes equal `std::fs::read` truncated to
//! `max_bytes`; a path that `std::fs::metadata` reports missing is
//! `NotFound`; non-regular files are `InvalidArgument` with a message; the
//! known fixtures give their documented error kind; `check_max_bytes` accepts
//! exactly `[0, MAX_READ_BYTES]`; a `DocumentSource` reading files (what an
//! op given `rustfx.files` does) gives the same bytes through a reused
//! buffer, the same error, or with on_error="empty" an empty document.
#![no_main]
// Each `unsafe` block says why it is sound (clippy checks it).
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

use libfuzzer_sys::fuzz_target;
use rustfx::read::{
    check_max_bytes, read_file, DocumentSource, OnError, MAX_PATH_BYTES, MAX_READ_BYTES,
};
use rustfx::ErrorKind;
use std::cell::RefCell;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::OnceLock;

const BIG: usize = 64 * 1024;

struct Fixture {
    dir: PathBuf,
    /// Keeps the socket's listener alive for the whole run.
    _socket: std::os::unix::net::UnixListener,
}

static FIXTURE: OnceLock<Fixture> = OnceLock::new();

/// Removes the fixture directory when libFuzzer exits normally.
extern "C" fn remove_fixture() {
    if let Some(fx) = FIXTURE.get() {
        let _ = std::fs::remove_dir_all(&fx.dir);
    }
}

fn fixture() -> &'static Fixture {
    FIXTURE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("rustfx-fuzz-read-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("dir")).unwrap();
        // Canonical, so the `starts_with` check below sees through /tmp links.
        let dir = std::fs::canonicalize(&dir).unwrap();
        std::fs::write(dir.join("file"), b"hello, fuzzer\n").unwrap();
        std::fs::write(dir.join("empty"), b"").unwrap();
        let big: Vec<u8> = (0..BIG).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(dir.join("big"), big).unwrap();
        std::fs::write(dir.join("dir/inner"), b"inner").unwrap();
        let fifo = std::ffi::CString::new(dir.join("fifo").as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "mkfifo");
        let socket = std::os::unix::net::UnixListener::bind(dir.join("socket")).unwrap();
        let link = |target: &str, name: &str| {
            std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
        };
        link("loop_b", "loop_a");
        link("loop_a", "loop_b");
        link("self", "self");
        link("nowhere", "dangling");
        link("fifo", "fifo_link");
        link("dir", "dir_link");
        link("file", "file_link");
        link("/dev/zero", "zero");
        link("/dev/null", "null");
        link("/proc/self/status", "proc_status");
        // SAFETY: registers a plain extern "C" fn with no arguments.
        unsafe { libc::atexit(remove_fixture) };
        Fixture {
            dir,
            _socket: socket,
        }
    })
}

/// Specials chosen by a selector byte, outside the fixture directory.
const SPECIALS: &[&[u8]] = &[
    b"/dev/zero",
    b"/dev/null",
    b"/proc/self/status",
    b"/",
    b"",
    b"a\0b",
    b"/dev/zero\0",
];

/// Replaces every `..` component by `_` so the path cannot leave the fixture.
fn sanitize(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    for (i, component) in path.split(|&b| b == b'/').enumerate() {
        if i > 0 {
            out.push(b'/');
        }
        if component == b".." {
            out.push(b'_');
        } else {
            out.extend_from_slice(component);
        }
    }
    out
}

fn expected_kind(relative: &[u8]) -> Option<ErrorKind> {
    Some(match relative {
        b"dir" | b"dir/" | b"dir_link" | b"fifo" | b"fifo_link" | b"socket" | b"loop_a"
        | b"loop_b" | b"self" | b"zero" | b"null" | b"." | b"" => ErrorKind::InvalidArgument,
        b"dangling" | b"missing" => ErrorKind::NotFound,
        b"file/x" | b"file_link/x" => ErrorKind::InvalidArgument, // ENOTDIR
        _ => return None,
    })
}

thread_local! {
    /// The buffer the ops' document sources reuse, holding the previous
    /// input's file: nothing of it may leak into the next document.
    static BUFFER: RefCell<Vec<u8>> = RefCell::new(b"stale bytes of another file".to_vec());
}

/// What an op reading its input's files sees: the bytes `read_file` gives,
/// through a reused buffer; with on_error="empty", an unreadable file is
/// an empty document.
fn check_document_sources(path: &[u8], max_bytes: u64, want: &rustfx::Result<Vec<u8>>) {
    BUFFER.with_borrow_mut(|buffer| {
        for on_error in [OnError::Raise, OnError::Empty] {
            let source = DocumentSource::new(true, max_bytes as i64, on_error).unwrap();
            let got = source.read_document(path, buffer).map(<[u8]>::to_vec);
            match (want, got, on_error) {
                // /proc/self/status changes between two reads.
                (Ok(want), Ok(got), _) => assert!(&got == want || changes(path)),
                (Err(want), Err(got), OnError::Raise) => {
                    assert_eq!((got.kind(), got.message()), (want.kind(), want.message()))
                }
                (Err(_), Ok(got), OnError::Empty) => assert!(got.is_empty()),
                (want, got, _) => panic!("read_file gave {want:?}, the source {got:?}"),
            }
        }
    });
}

/// Whether the file at `path` is one of the kernel's, whose contents
/// change from one read to the next.
fn changes(path: &[u8]) -> bool {
    let os = std::path::Path::new(std::ffi::OsStr::from_bytes(path));
    std::fs::canonicalize(os).is_ok_and(|c| c.starts_with("/proc"))
}

fuzz_target!(|data: &[u8]| {
    let fx = fixture();
    if data.len() < 3 {
        return;
    }
    let (head, rest) = data.split_at(3);
    let max_bytes = u64::from(u16::from_le_bytes([head[0], head[1]])) % (BIG as u64 + 2);
    let selector = head[2];

    // check_max_bytes on an i64 made from the input.
    let raw = i64::from_le_bytes(std::array::from_fn(|i| *rest.get(i).unwrap_or(&0)));
    for v in [raw, raw >> 32, raw.wrapping_neg(), max_bytes as i64] {
        let ok = (0..=MAX_READ_BYTES as i64).contains(&v);
        match check_max_bytes(v) {
            Ok(m) => {
                assert!(ok, "check_max_bytes accepted {v}");
                assert_eq!(m, v as u64);
            }
            Err(e) => {
                assert!(!ok, "check_max_bytes rejected {v}");
                assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            }
        }
    }

    let (path, relative): (Vec<u8>, Option<Vec<u8>>) = if selector >= 0xf0 {
        let special = SPECIALS[usize::from(selector - 0xf0) % SPECIALS.len()];
        (special.to_vec(), None)
    } else {
        let rel = sanitize(rest);
        let mut p = fx.dir.as_os_str().as_bytes().to_vec();
        if !rel.starts_with(b"/") {
            p.push(b'/');
        }
        p.extend_from_slice(&rel);
        (p, Some(rel))
    };

    let result = read_file(&path, max_bytes);
    let shown = String::from_utf8_lossy(&path).into_owned();
    check_document_sources(&path, max_bytes, &result);
    match &result {
        Ok(bytes) => assert!(bytes.len() as u64 <= max_bytes, "read more than max_bytes"),
        Err(e) => assert!(!e.message().is_empty()),
    }
    if path.is_empty() || path.contains(&0) || path.len() > MAX_PATH_BYTES {
        assert_eq!(
            result.as_ref().map_err(|e| e.kind()).err(),
            Some(ErrorKind::InvalidArgument),
            "{shown:?}"
        );
        return;
    }
    let os = std::path::Path::new(std::ffi::OsStr::from_bytes(&path));
    let in_fixture = std::fs::canonicalize(os).is_ok_and(|c| c.starts_with(&fx.dir));
    match std::fs::metadata(os) {
        Ok(meta) if meta.is_file() && in_fixture => {
            let mut want = std::fs::read(os).unwrap();
            want.truncate(max_bytes as usize);
            assert_eq!(result.as_ref().ok(), Some(&want), "{shown:?}");
        }
        Ok(meta) if !meta.is_file() => {
            let e = result.as_ref().expect_err("a non-regular file was read");
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{shown:?}: {e}");
        }
        Err(m) if m.kind() == std::io::ErrorKind::NotFound => {
            let e = result.as_ref().expect_err("a missing path was read");
            assert_eq!(e.kind(), ErrorKind::NotFound, "{shown:?}: {e}");
        }
        _ => {}
    }
    if let Some(kind) = relative.as_deref().and_then(expected_kind) {
        let e = result.as_ref().expect_err("fixture must fail");
        assert_eq!(e.kind(), kind, "{shown:?}: {e}");
    }
    if relative.as_deref() == Some(b"file") || relative.as_deref() == Some(b"file_link") {
        let want = &b"hello, fuzzer\n"[..(max_bytes as usize).min(14)];
        assert_eq!(result.as_deref().ok(), Some(want));
    }
});
