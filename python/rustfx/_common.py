"""Helpers shared by the op wrappers."""

import collections
import os

import numpy as np
import tensorflow as tf

from rustfx._loader import ops

# The generated op wrappers have no source for AutoGraph to read; our
# functions are plain op construction, so AutoGraph need not convert them.
no_autograph = tf.autograph.experimental.do_not_convert


def invalid(message):
    return tf.errors.InvalidArgumentError(None, None, message)


def strings(x, what):
    """`x` as a tf.string tensor of known rank, or InvalidArgument. Every op
    wrapper takes its input through here, so this is where TF's intra-op
    thread setting is passed on to the op library."""
    _pass_on_intra_op_threads()
    x = tf.convert_to_tensor(x)
    if x.dtype != tf.string:
        raise invalid(f"{what} must be a tf.string tensor, got {x.dtype.name}")
    if x.shape.rank is None:
        raise invalid(f"{what} must have a known rank")
    return x


def path_strings(paths, what="paths"):
    """`paths` as strings() takes them, each path as its bytes: a str (or
    os.PathLike) is encoded as the OS encodes file names (os.fsencode), so a
    name that is not UTF-8, which Python holds as surrogates (os.listdir,
    sys.argv), gets its exact bytes back instead of failing TF's UTF-8
    encoding; bytes and tensors are taken as they are."""
    return strings(_fsencoded(paths), what)


def _fsencoded(x):
    if isinstance(x, (str, os.PathLike)):
        return os.fsencode(x)
    if isinstance(x, (list, tuple)):
        return [_fsencoded(p) for p in x]
    if isinstance(x, np.ndarray) and x.dtype.kind in "UO":
        return np.vectorize(_fsencoded, otypes=[object])(x)
    return x


class Files(collections.namedtuple("Files", ["paths", "max_bytes", "on_error", "cache"],
                                   defaults=(None,))):
    """Files for an extractor to read itself: what rustfx.files returns
    (`cache`: a rustfx.FeatureCache to look their features up in, or None)."""


_THREADS_PASSED_ON = False


def _pass_on_intra_op_threads():
    """Sets RUSTFX_NUM_THREADS (the op library's threads, read at its first
    parallel call) from tf.config.threading's intra-op setting, unless it is
    set or TF's is 0 (the cores). Once, at the first op a wrapper makes."""
    global _THREADS_PASSED_ON
    if _THREADS_PASSED_ON:
        return
    _THREADS_PASSED_ON = True
    threads = tf.config.threading.get_intra_op_parallelism_threads()
    if threads > 0 and "RUSTFX_NUM_THREADS" not in os.environ:
        os.environ["RUSTFX_NUM_THREADS"] = str(threads)


def documents(contents):
    """The input tensor of an extractor op and its source attrs: `contents`
    (a tf.string tensor of documents), or the paths of a rustfx.files(...),
    which the op reads itself (through its cache's attrs, if it has one)."""
    if isinstance(contents, Files):
        cache = contents.cache.attrs() if contents.cache is not None else {}
        return path_strings(contents.paths, "paths"), dict(
            read_files=True, read_max_bytes=contents.max_bytes,
            read_on_error=contents.on_error, **cache)
    return strings(contents, "contents"), {}
