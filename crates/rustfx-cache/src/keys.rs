//! An entry's key: the document's ([`DocKey`], of its content or of its
//! file's metadata, [`CacheKey`]) and the spec's ([`spec_digest`]).
//!
//! Both are BLAKE3 digests (the `blake3` crate, BUILD_NOTES.md,
//! "Dependencies"): a warm content-keyed epoch is bound by hashing every
//! file, and BLAKE3 picks AVX-512, AVX2, SSE4.1 or NEON at run time, so it
//! is fast on every CPU, where SHA-256 is fast only on CPUs with the SHA
//! extensions (docs/feature_cache.md, "What the keys cost, where users run it"). The scheme is part of
//! every spec digest ([`KEY_SCHEME`]): entries stored under another one
//! (rustfx's SHA-256 keys before it) are never found, so they miss, never
//! hit wrongly, and the cap ages them out.

use rustfx::spec::FeatureSpec;
use rustfx::{Error, ErrorKind, Result};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The keys' scheme, hashed into every spec digest.
pub const KEY_SCHEME: &str = "rustfx-cache keys 2: blake3";

/// How a file's entry is found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CacheKey {
    /// The BLAKE3 of the bytes extracted: a changed file is always a
    /// miss. Costs reading and hashing every file.
    #[default]
    Content,
    /// The file's path, device, inode, size, mtime and ctime (and the
    /// `max_bytes` it is read with): no read on a hit. **Risk**: a file
    /// rewritten at the same size within one tick of the file system's
    /// timestamps (a few milliseconds on Linux) keeps all of them, and its
    /// old features are served. Documents given as bytes are keyed by
    /// content whatever this says.
    Stat,
}

impl CacheKey {
    /// Every accepted name.
    pub const NAMES: &'static [&'static str] = &["content", "stat"];

    /// The key named `name` ("content" or "stat").
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "content" => Ok(CacheKey::Content),
            "stat" => Ok(CacheKey::Stat),
            _ => Err(Error::invalid_argument(format!(
                "a feature cache's key must be one of {}, got '{name}'",
                Self::NAMES.join(", ")
            ))),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            CacheKey::Content => "content",
            CacheKey::Stat => "stat",
        }
    }
}

/// One document's key: a BLAKE3 of its content ([`DocKey::of_content`]),
/// or of its file's metadata ([`DocKey::of_file_stat`]). A content key is
/// the file's plain BLAKE3 (what `b3sum` prints), the one corpus
/// extraction writes beside the features (its `content_key` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DocKey(pub [u8; 32]);

impl DocKey {
    /// The content key of `contents`: their BLAKE3.
    pub fn of_content(contents: &[u8]) -> DocKey {
        DocKey(*blake3::hash(contents).as_bytes())
    }

    /// The stat key of the file at `path` read with `max_bytes`: a BLAKE3
    /// of a tagged record of the path, device, inode, size, mtime and ctime
    /// (nanoseconds) and `max_bytes` (a file longer than it is extracted
    /// truncated). It never equals a content key. Errors as reading does
    /// (symlinks followed).
    pub fn of_file_stat(path: &[u8], max_bytes: u64) -> Result<DocKey> {
        let os_path = Path::new(std::ffi::OsStr::from_bytes(path));
        let meta = std::fs::metadata(os_path).map_err(|e| {
            let kind = match e.kind() {
                std::io::ErrorKind::NotFound => ErrorKind::NotFound,
                std::io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
                _ => ErrorKind::Io,
            };
            Error::new(kind, format!("cannot stat {}: {e}", os_path.display()))
        })?;
        let mut h = blake3::Hasher::new();
        h.update(b"rustfx-cache stat key 1\0");
        h.update(&(path.len() as u64).to_le_bytes());
        h.update(path);
        for field in [
            meta.dev(),
            meta.ino(),
            meta.size(),
            meta.mtime() as u64,
            meta.mtime_nsec() as u64,
            meta.ctime() as u64,
            meta.ctime_nsec() as u64,
            max_bytes,
        ] {
            h.update(&field.to_le_bytes());
        }
        Ok(DocKey(*h.finalize().as_bytes()))
    }
}

/// The spec's digest, half of every entry's key: the BLAKE3 of
/// [`KEY_SCHEME`] and the spec's canonical JSON, which holds every
/// parameter (defaults filled in), the output and the output version.
pub fn spec_digest(spec: &FeatureSpec) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(KEY_SCHEME.as_bytes());
    h.update(b"\0");
    h.update(spec.to_json().as_bytes());
    *h.finalize().as_bytes()
}
