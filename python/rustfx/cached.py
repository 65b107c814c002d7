"""Extraction through a FeatureCache: `rustfx.files(paths, cache=cache)`
(docs/stalls.md, "The feature cache").

    cache = rustfx.FeatureCache("/data/fx-cache", max_bytes=20 << 30)
    ds = ds.map(lambda p: rustfx.ember_features(rustfx.files(p, cache=cache)))

Every extractor function, `rustfx.extract` and the Keras layers given such
files give what they give without the cache, bit for bit: each file is
looked up under its content's SHA-256 and the spec's digest, and the misses
are extracted by the core and stored while the epoch streams, so later
epochs and later runs read instead of extracting.

Why not in the kernel: rustfx's kernels are stateless, and a kernel that
opened a database would hold state across calls and make a SavedModel
depend on a directory. The lookup runs in `tf.numpy_function` instead,
which calls the C ABI (ctypes releases the GIL during the call, so
tf.data's parallel map calls run together; each thread has its own
database handle). The price: a graph with a cached extraction cannot be
saved (numpy_function is not serializable). The cache is for the training
input; a model to serve takes its features from the op (a layer's cache is
not part of its config, and `layer.cache = None` before export).
"""

import threading

import numpy as np
import tensorflow as tf

from rustfx._common import invalid, path_strings
from rustfx_core import FeatureCache as _CoreCache
from rustfx_core import RowsVisitor

__all__ = ["FeatureCache"]

# A read status of read_files (a tf.errors code) as the exception to raise.
_ERRORS = {3: ValueError, 5: FileNotFoundError, 7: PermissionError}


class FeatureCache:
    """rustfx_core.FeatureCache for TensorFlow: the same directory, options
    and rules (one database per thread that extracts through it). Pass it
    as rustfx.files(paths, cache=...) or a layer's cache=. stats() adds up
    every thread's hits and misses."""

    def __init__(self, directory, max_bytes=None, key="content"):
        self.directory, self.max_bytes, self.key = directory, max_bytes, key
        self._local = threading.local()
        self._handles, self._lock = [], threading.Lock()
        self.handle()  # opened here, so bad options fail at construction

    def handle(self):
        """This thread's rustfx_core.FeatureCache."""
        cache = getattr(self._local, "cache", None)
        if cache is None:
            cache = self._local.cache = _CoreCache(self.directory, self.max_bytes, self.key)
            with self._lock:
                self._handles.append(cache)
        return cache

    def stats(self):
        """As rustfx_core.FeatureCache.stats, hits, misses, corrupt and
        evicted summed over every thread's handle."""
        with self._lock:
            handles = list(self._handles)
        total = handles[0].stats()
        for other in handles[1:]:
            figures = other.stats()
            for name in ("hits", "misses", "corrupt", "evicted"):
                total[name] += figures[name]
        return total

    def __repr__(self):
        return f"rustfx.FeatureCache({self.directory!r}, max_bytes={self.max_bytes}, " \
               f"key={self.key!r})"

    def __reduce__(self):  # tf.data may copy a function's captures
        return (FeatureCache, (self.directory, self.max_bytes, self.key))


def check(cache):
    if not isinstance(cache, FeatureCache):
        raise TypeError(f"cache must be a rustfx.FeatureCache, got {type(cache).__name__}")
    return cache


def extract_cached(spec, files, name=None):
    """The features of `spec` for `files` (a rustfx.files with a cache),
    through the cache; shaped as the op's output."""
    paths = path_strings(files.paths, "paths")
    if paths.shape.rank not in (0, 1):
        raise invalid(f"rustfx.files(..., cache=) takes a scalar or a vector of paths, "
                      f"got rank {paths.shape.rank}")
    with tf.name_scope(name or f"{spec.extractor}_cached"):
        flat = tf.reshape(paths, [-1])
        return spec.rows.accept(_CACHED, spec, files, flat, paths)


def _lookup(spec, files):
    """A numpy function: (paths) -> the spec's converted rows, raising on an
    unreadable file when on_error="raise"."""
    text, cache, max_bytes = spec.to_json(), files.cache, files.max_bytes
    raise_errors = files.on_error == "raise"

    def rows_of(paths):
        rows, codes = cache.handle().convert_files(text, list(paths), max_bytes=max_bytes)
        if raise_errors and codes.any():
            bad = int(np.flatnonzero(codes)[0])
            error = _ERRORS.get(int(codes[bad]), OSError)
            raise error(f"rustfx.files(cache=): cannot read {paths[bad]!r} "
                        f"(tf.errors code {int(codes[bad])}; read_files says why)")
        return rows
    return rows_of


def _single(tensor, paths):
    """A rank-0 input gives one row, not a batch of one."""
    return tensor[0] if paths.shape.rank == 0 else tensor


class _Cached(RowsVisitor):
    """Each output kind through tf.numpy_function, as the op would give it."""

    def dense(self, rows, spec, files, flat, paths):
        lookup = _lookup(spec, files)
        values = tf.numpy_function(lambda p: lookup(p), [flat],
                                   tf.as_dtype(rows.dtype), stateful=True)
        values = tf.reshape(values, [-1, rows.width])
        values.set_shape([flat.shape[0], rows.width])
        return _single(values, paths)

    def ragged(self, rows, spec, files, flat, paths):
        lookup = _lookup(spec, files)

        def parts(p):
            out = lookup(p)
            return out.values, out.row_splits
        values, splits = tf.numpy_function(parts, [flat], [tf.as_dtype(rows.dtype), tf.int64],
                                           stateful=True)
        values.set_shape([None])
        splits.set_shape([None if flat.shape[0] is None else flat.shape[0] + 1])
        ragged = tf.RaggedTensor.from_row_splits(values, splits, validate=False)
        return _single(ragged, paths)

    def strings(self, rows, spec, files, flat, paths):
        lookup = _lookup(spec, files)

        def parts(p):
            out = lookup(p)
            data, ends = out.data.tobytes(), out.string_ends.tolist()
            strings = np.array([data[a:b] for a, b in zip([0] + ends[:-1], ends)], object)
            return strings, out.row_splits
        values, splits = tf.numpy_function(parts, [flat], [tf.string, tf.int64], stateful=True)
        values.set_shape([None])
        splits.set_shape([None])
        return _single(tf.RaggedTensor.from_row_splits(values, splits, validate=False), paths)

    def sparse(self, rows, spec, files, flat, paths):
        lookup = _lookup(spec, files)

        def parts(p):
            out = lookup(p)
            lengths = np.diff(out.row_splits)
            row_ids = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
            return np.stack([row_ids, out.indices], axis=1).reshape(-1, 2), out.values
        indices, values = tf.numpy_function(parts, [flat], [tf.int64, tf.as_dtype(rows.dtype)],
                                            stateful=True)
        indices.set_shape([None, 2])
        values.set_shape([None])
        shape = tf.stack([tf.size(flat, out_type=tf.int64), tf.constant(rows.width, tf.int64)])
        sparse = tf.SparseTensor(indices, values, shape)
        if paths.shape.rank == 0:
            return tf.sparse.reshape(sparse, [rows.width])
        sparse.set_shape([flat.shape[0], rows.width])
        return sparse


_CACHED = _Cached()
