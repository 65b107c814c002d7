"""Loads the rustfx op library once, eagerly, after checking its TF version.

Eager loading matters: a SavedModel that uses rustfx ops only loads after the
ops are registered, so `import rustfx` must register them (a lazy load
leaves `tf.saved_model.load` with "Op type not registered"; see
tensorflow/addons#1151).
"""

import glob
import os
import re

import tensorflow as tf

LIBRARY_ENV = "RUSTFX_LIBRARY"
_MARKER = b"rustfx-built-against-tensorflow="


def library_path():
    """The op library: $RUSTFX_LIBRARY, else the one beside this file: the
    wheel's `_rustfx_ops.<python tag>.so`, or the `_rustfx_ops.so` that
    `make build` copies into a checkout."""
    if os.environ.get(LIBRARY_ENV):
        return os.environ[LIBRARY_ENV]
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "_rustfx_ops*.so")))
    return found[0] if found else os.path.join(here, "_rustfx_ops.so")


def built_against(path):
    """The TF version string compiled into the library, read from its bytes
    (without loading it: loading a mismatched kernel library can crash)."""
    with open(path, "rb") as f:
        data = f.read()
    start = data.find(_MARKER)
    if start < 0:
        return None
    start += len(_MARKER)
    return data[start:data.index(b"\0", start)].decode("ascii", "replace")


def _minor(version):
    match = re.match(r"(\d+)\.(\d+)", version or "")
    return match.groups() if match else None


def load():
    path = library_path()
    if not os.path.exists(path):
        raise ImportError(
            f"rustfx: the op library {path} does not exist. Install rustfx "
            f"with `pip install .`, or in a checkout build it with `make "
            f"build` (or set {LIBRARY_ENV} to a built librustfx.so).")
    built = built_against(path)
    running = tf.__version__
    if built is None or _minor(built) != _minor(running):
        raise ImportError(
            f"rustfx: {path} was built against TensorFlow {built}, but "
            f"TensorFlow {running} is running. The C++ kernel ABI changes "
            f"between TF minor versions: reinstall rustfx with this TF "
            f"(`pip install --no-build-isolation .`) or rebuild with `make "
            f"build` using this Python (PYTHON=...), or install "
            f"tensorflow-cpu=={built}.")
    return tf.load_op_library(path)


ops = load()
