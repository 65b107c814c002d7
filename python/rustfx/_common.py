"""Helpers shared by the op wrappers."""

import collections

import tensorflow as tf

from rustfx._loader import ops

# The generated op wrappers have no source for AutoGraph to read; our
# functions are plain op construction, so AutoGraph need not convert them.
no_autograph = tf.autograph.experimental.do_not_convert


def invalid(message):
    return tf.errors.InvalidArgumentError(None, None, message)


def strings(x, what):
    """`x` as a tf.string tensor of known rank, or InvalidArgument."""
    x = tf.convert_to_tensor(x)
    if x.dtype != tf.string:
        raise invalid(f"{what} must be a tf.string tensor, got {x.dtype.name}")
    if x.shape.rank is None:
        raise invalid(f"{what} must have a known rank")
    return x


class Files(collections.namedtuple("Files", ["paths", "max_bytes", "on_error"])):
    """Files for an extractor to read itself: what rustfx.files returns."""


def documents(contents):
    """The input tensor of an extractor op and its source attrs: `contents`
    (a tf.string tensor of documents), or the paths of a rustfx.files(...),
    which the op reads itself."""
    if isinstance(contents, Files):
        return strings(contents.paths, "paths"), dict(
            read_files=True, read_max_bytes=contents.max_bytes,
            read_on_error=contents.on_error)
    return strings(contents, "contents"), {}
