"""FeatureCache: each document's features, kept on disk under its content
and the spec, shared by processes (the Rust crate rustfx-cache, through the
C ABI; docs/feature_cache.md).

    cache = rustfx_core.FeatureCache("/data/fx-cache", max_bytes=20 << 30)
    rows = cache.extract(spec, documents)   # == rustfx_core.extract(spec, documents)

An entry's key is the BLAKE3 of the document's bytes plus a BLAKE3 of the
spec's canonical JSON (every parameter and the output version) and of the
keys' scheme, so a changed file or spec is a miss, never stale, and entries
of an older rustfx (SHA-256 keys) are never read. key="stat" keys files given
to extract_files by their path and metadata instead (no read on a hit),
with a risk: a file rewritten at the same size within one tick of the file
system's timestamps is served its old features. Entries that fail their
checksum are deleted and recomputed.

What is trusted: rows are stored from the core's own extraction, or by
put_rows from rows the caller vouches for. fill_from_corpus stores a corpus
job's rows only if each matches the row digest the job wrote beside it
(row_digests: the spec, the content key and the row's bytes), and refuses a
shard with any row that does not: an edited value or key, or bit rot, is
never stored. A digest finds damage, not a forger who can run rustfx;
whoever can write the shards could write the cache's directory too.

Misses are stored by the handle's writer thread (Rust, crates/rustfx-cache)
in batched transactions: extract() never waits for SQLite's write lock, a
handle reads its own queued rows at once, flush() waits until they are
committed, and stats() and close() flush first.
"""

import ctypes
import os

import numpy as np

from rustfx_core import _abi
from rustfx_core._abi import DEFAULT_MAX_BYTES, RowsHandle
from rustfx_core.digests import arrow_rows, row_digests
from rustfx_core.extraction import documents as _as_documents
from rustfx_core.spec import FeatureSpec

__all__ = ["FeatureCache", "row_digests"]

#: What stats() returns, in the C ABI's order (rustfx_cache_stats).
STATS = ("hits", "misses", "corrupt", "evicted", "dropped", "errors", "entries", "bytes",
         "read_only")


def figures_dict(figures):
    """stats()' dict of the core's figures (read_only as a bool)."""
    stats = dict(zip(STATS, (int(v) for v in figures)))
    stats["read_only"] = bool(stats["read_only"])
    return stats


class FeatureCache:
    """A feature cache in `directory` (created if missing): at most
    `max_bytes` of entries (None: the core's default, 10 GiB; the least
    recently used are evicted down to 90% of it after a put that passes
    it), keyed by "content" (default) or
    "stat". ValueError with the core's message for bad options or a
    directory that holds no feature cache. Used from one thread at a time;
    any number of processes may share the directory.

    read_only=True opens it to read only: hits are served, misses extracted
    and never stored, nothing written (a cache filled once and shared by
    many trainers; ValueError if it holds no cache). A cache that cannot be
    written (a read-only file system, no permission) is opened so without
    it, and says so once; stats()["read_only"] tells."""

    def __init__(self, directory, max_bytes=None, key="content", read_only=False):
        library = _abi.lib()
        raw = os.fsencode(directory)
        key_bytes = str(key).encode("utf-8", "surrogatepass")
        cap = None
        if max_bytes is not None:
            # Clamped: the core refuses anything that far out, naming the range.
            cap = ctypes.pointer(ctypes.c_uint64(max(0, min(2**64 - 1, int(max_bytes)))))
        message = ctypes.c_void_p()
        self._handle = library.rustfx_cache_open(raw, len(raw), cap, key_bytes,
                                                 len(key_bytes), bool(read_only),
                                                 ctypes.byref(message))
        if not self._handle:
            raise ValueError(_abi.taken_message(message))
        self._free = library.rustfx_cache_free
        self.directory, self.max_bytes, self.key = directory, max_bytes, key
        self.read_only = bool(read_only)

    def __del__(self):
        if getattr(self, "_handle", None):
            self._free(self._handle)
            self._handle = None

    def close(self):
        """Closes the database (also done when the object is collected)."""
        self.__del__()

    def _batch(self, spec, function, *args):
        """The Batch of `function(handle, spec, *args)`'s rows (spec: a
        FeatureSpec, or its JSON or dict)."""
        spec = FeatureSpec.from_json(spec)
        text = spec.to_json().encode()
        message = ctypes.c_void_p()
        handle = function(self._handle, text, len(text), *args, ctypes.byref(message))
        return spec.rows.batch(RowsHandle.taken(handle, message))

    def extract(self, spec, documents):
        """rustfx_core.extract(spec, documents), bit for bit (documents as
        rustfx_core.extract takes them): each document looked up by its
        content, the misses extracted by the core and stored."""
        docs = _as_documents(documents)
        return self._batch(spec, _abi.lib().rustfx_cache_extract, docs.handle)

    def extract_files(self, spec, paths, *, max_bytes=DEFAULT_MAX_BYTES):
        """rustfx_core.extract(spec, rustfx_core.read_files(paths,
        max_bytes=max_bytes)), bit for bit: each file looked up by the
        cache's key (key="content": every file read and hashed; "stat":
        only the misses read). A file that cannot be read is an empty
        document (null in Arrow), never stored."""
        return self.extract_files_with_codes(spec, paths, max_bytes=max_bytes)[0]

    def extract_files_with_codes(self, spec, paths, *, max_bytes=DEFAULT_MAX_BYTES):
        """extract_files' rows, and the read status of each file (int32, a
        tf.errors code, 0 = read)."""
        raw = [p if isinstance(p, bytes) else os.fsencode(p) for p in paths]
        ends = np.cumsum([len(p) for p in raw], dtype=np.uint64)
        codes = np.zeros(len(raw), np.int32)
        joined = b"".join(raw)
        rows = self._batch(spec, _abi.lib().rustfx_cache_extract_files, joined, len(joined),
                           ends.ctypes.data, len(raw), max_bytes, codes.ctypes.data)
        return rows, codes

    def get(self, spec, document):
        """The stored features of one document (bytes) for `spec`, as
        rustfx_core.extract gives them for that one document, or None."""
        docs = _as_documents([document])
        found = (ctypes.c_bool * 1)()
        rows = self._batch(spec, _abi.lib().rustfx_cache_get, docs.handle, found)
        return rows if found[0] else None

    def put(self, spec, documents):
        """Extracts `documents` (as rustfx_core.extract takes them) with the
        core and stores their rows, replacing what was stored, in one
        transaction."""
        docs = _as_documents(documents)
        spec = FeatureSpec.from_json(spec)
        text = spec.to_json().encode()
        message = ctypes.c_void_p()
        if not _abi.lib().rustfx_cache_put(self._handle, text, len(text), docs.handle,
                                           ctypes.byref(message)):
            raise RuntimeError(_abi.taken_message(message))

    def put_rows(self, spec, digests, rows):
        """Stores rows the core extracted elsewhere (a corpus job's) for
        `spec`, one per document: `digests`, the documents' content keys
        (BLAKE3, 32 bytes each, end to end: Documents.content_keys(raw=True)),
        and `rows`, an Arrow array in the layout of the spec's rows (a
        Batch, a corpus shard's column; rustfx_core.outputs). Read by the
        core with no Python pass per row, and checked whole against the
        spec before anything is stored (RuntimeError with the core's
        message otherwise); one transaction. The caller vouches for the
        rows: fill_from_corpus checks each row's digest (row_digests)
        first."""
        spec = FeatureSpec.from_json(spec)
        text = spec.to_json().encode()
        schema, array, schema_at, array_at, _ = arrow_rows(rows, digests)
        message = ctypes.c_void_p()
        if not _abi.lib().rustfx_cache_put_rows(self._handle, text, len(text), bytes(digests),
                                                schema_at, array_at, ctypes.byref(message)):
            raise RuntimeError(_abi.taken_message(message))
        del schema, array

    def fill_from_corpus(self, output):
        """Stores every read row of a corpus job's Parquet shards (OUT of
        `python -m rustfx.corpus`, a directory or URI) under its content_key and
        each feature's spec: features extracted on a cluster are then what
        training reads. Returns {"rows", "skipped", "shards"}. Needs
        pyarrow (rustfx[ray])."""
        from rustfx_core.corpus.fill import fill
        return fill(self, output)

    def flush(self):
        """Waits until every row this handle queued is committed;
        RuntimeError with the message of the last write if it failed."""
        message = ctypes.c_void_p()
        if not _abi.lib().rustfx_cache_flush(self._handle, ctypes.byref(message)):
            raise RuntimeError(_abi.taken_message(message))

    def stats(self):
        """{"hits", "misses", "corrupt", "evicted", "dropped", "errors"}:
        what this handle did (dropped: rows not stored, the writer's queue
        full; errors: lookups and writes that failed, each a miss or a row
        not stored); {"entries", "bytes"}: what the cache holds, every
        process's, once this handle's queued rows are committed;
        "read_only": whether misses go unstored (asked for, or the cache
        cannot be written)."""
        figures = (ctypes.c_uint64 * len(STATS))()
        message = ctypes.c_void_p()
        if not _abi.lib().rustfx_cache_stats(self._handle, figures, ctypes.byref(message)):
            raise RuntimeError(_abi.taken_message(message))
        return figures_dict(figures)
