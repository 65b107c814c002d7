"""Reading files in Rust: bounded, non-blocking, errors that name the path."""

import collections
import functools

import tensorflow as tf
from tensorflow.python.eager.context import eager_mode as _eager_mode

from rustfx import cached
from rustfx._common import Files, no_autograph, ops, path_strings, strings
from rustfx.cached import FeatureCache

__all__ = ["read_files", "files", "sha256", "content_key", "Files", "ReadStatus", "DEFAULT_MAX_BYTES",
           "FeatureCache"]

from rustfx_core import DEFAULT_MAX_BYTES

ReadStatus = collections.namedtuple("ReadStatus", ["codes", "messages"])
ReadStatus.__doc__ = """Per-element outcome of read_files: `codes` (int32,
a tf.errors code, 0 = OK) and `messages` (string, empty when OK)."""


@no_autograph
def read_files(paths, *, max_bytes=DEFAULT_MAX_BYTES, on_error="raise",
               with_status=False, name=None):
    """Reads files in Rust: never blocks, never reads more than max_bytes.

    Args:
      paths: tf.string tensor of any shape (or what converts to one); a
        path is bytes, and a str is os.fsencode'd, so a file name that is
        not UTF-8 is read by its exact bytes.
      max_bytes: read at most this many bytes of each file; longer files are
        truncated (in [0, 2**31 - 1]).
      on_error: "raise" fails on the first bad path (in element order) with
        NotFound / PermissionDenied / InvalidArgument naming it; "empty"
        yields b"" for it instead, so one corrupt file cannot kill a run.
      with_status: also return a ReadStatus saying which elements failed.

    Returns:
      contents (tf.string, the shape of paths), and a ReadStatus if
      with_status.
    """
    paths = path_strings(paths, "paths")
    check_read_parameters(max_bytes, on_error)
    with tf.name_scope(name or "read_files"):
        contents, codes, messages = ops.Rustfx_ReadFiles(
            paths=paths, max_bytes=max_bytes, on_error=on_error)
    if with_status:
        return contents, ReadStatus(codes, messages)
    return contents


def files(paths, *, max_bytes=DEFAULT_MAX_BYTES, on_error="raise", cache=None):
    """The files at `paths`, for an extractor to read itself: pass the
    result to any extractor in place of its contents.

        rustfx.hashed_ngrams(rustfx.files(paths, max_bytes=2**20), ...)

    gives what `hashed_ngrams(read_files(paths, max_bytes=2**20), ...)`
    gives, in one op: each file is read (by read_files' rules) into a buffer
    of the thread that extracts it, so no batch of contents is ever held in
    memory, at no extra cost (0-14% faster over README's pipeline runs). If
    several extractors take the same files, one read_files is shared by
    them instead: each op given files() reads them itself. A file that cannot
    be read fails the op with on_error="raise" (the same error read_files
    raises), and is an empty document with on_error="empty"; for per-file
    status codes, use read_files(..., with_status=True).

    Args:
      paths: tf.string tensor of any shape (str paths os.fsencode'd, as
        for read_files); the output has its shape.
      max_bytes, on_error: as for read_files.
      cache: a rustfx.FeatureCache: the op looks each file's features up
        by its key and the spec, and extracts and stores them on a miss,
        the same rows bit for bit (rustfx/cached.py says how, and what a
        SavedModel of such a graph holds).
    """
    check_read_parameters(max_bytes, on_error)
    if cache is not None:
        cached.check(cache)
    return Files(paths, max_bytes, on_error, cache)


@functools.lru_cache(maxsize=256)
def _check_read_parameters(max_bytes, on_error):
    # The kernel's constructor checks them with the core's rules and
    # messages; in a graph it is only built when the graph runs (a TF C API
    # shape function cannot read int or string attrs), so build it once
    # here, eagerly, on no paths.
    with tf.init_scope(), _eager_mode():
        ops.Rustfx_ReadFiles(paths=tf.constant([], tf.string), max_bytes=max_bytes,
                             on_error=on_error)


def check_read_parameters(max_bytes, on_error):
    """InvalidArgumentError with the core's message unless `max_bytes` and
    `on_error` are what read_files accepts."""
    try:
        _check_read_parameters(max_bytes, on_error)
    except TypeError:  # unhashable: not an int or a string anyway
        _check_read_parameters.__wrapped__(max_bytes, on_error)


@no_autograph
def sha256(contents, *, name=None):
    """The SHA-256 of each element of `contents` (tf.string, any shape), as
    64 lowercase hex digits: what hashlib.sha256(x).hexdigest() gives.
    Computed in Rust (rustfx's core, crates/rustfx/src/sha256.rs); corpus extraction
    (rustfx.corpus) writes it in its rows' sha256 column."""
    return ops.Rustfx_Sha256(input=strings(contents, "contents"), name=name)


@no_autograph
def content_key(contents, *, name=None):
    """The feature cache's content key of each element of `contents`
    (tf.string, any shape): its BLAKE3, as 64 lowercase hex digits (what
    b3sum prints, and the content_key column of a corpus job's rows)."""
    return ops.Rustfx_ContentKey(input=strings(contents, "contents"), name=name)
