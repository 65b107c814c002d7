"""Loads the rustfx op library once, eagerly.

The kernels use only TensorFlow's C kernel API, so one library serves every
TF minor from SUPPORTED[0] to SUPPORTED[1], each tested (docs/matrix.md).
An older TF is refused with a message saying which versions this rustfx
supports; a newer minor is tried, and a failure says that it is untested.

Eager loading matters: a SavedModel that uses rustfx ops only loads after the
ops are registered, so `import rustfx` must register them (a lazy load
leaves `tf.saved_model.load` with "Op type not registered"; see
tensorflow/addons#1151).
"""

import glob
import os
import re
import warnings

#: The TF minor versions this rustfx is tested with (inclusive).
SUPPORTED = ((2, 16), (2, 21))

try:
    import tensorflow as tf
except ImportError as e:
    # The wheel does not require a TensorFlow distribution (any of
    # tensorflow, tensorflow-cpu, tf-nightly... would be replaced by the
    # one it named): the user installs theirs.
    raise ImportError(
        f"rustfx needs TensorFlow {SUPPORTED[0][0]}.{SUPPORTED[0][1]} to "
        f"{SUPPORTED[1][0]}.{SUPPORTED[1][1]}, which is not importable here ({e}). "
        f"Install one, e.g. `pip install 'rustfx[tensorflow-cpu]'` or "
        f"`pip install tensorflow`.") from e

LIBRARY_ENV = "RUSTFX_LIBRARY"
_MARKER = b"rustfx-built-against-tensorflow="


def library_path():
    """The op library: $RUSTFX_LIBRARY, else the one beside this file: the
    wheel's `_rustfx_ops*.so`, or the `_rustfx_ops.so` that `make build`
    copies into a checkout."""
    if os.environ.get(LIBRARY_ENV):
        return os.environ[LIBRARY_ENV]
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "_rustfx_ops*.so")))
    return found[0] if found else os.path.join(here, "_rustfx_ops.so")


def built_against(path):
    """The TF version whose C API headers the library was compiled against,
    read from its bytes (without loading it)."""
    with open(path, "rb") as f:
        data = f.read()
    start = data.find(_MARKER)
    if start < 0:
        return None
    start += len(_MARKER)
    return data[start:data.index(b"\0", start)].decode("ascii", "replace")


def _minor(version):
    match = re.match(r"(\d+)\.(\d+)", version or "")
    return tuple(int(x) for x in match.groups()) if match else None


def _supported_text():
    (a, b), (c, d) = SUPPORTED
    return f"TensorFlow {a}.{b} to {c}.{d}"


def load():
    path = library_path()
    if not os.path.exists(path):
        raise ImportError(
            f"rustfx: the op library {path} does not exist. Install rustfx "
            f"with `pip install rustfx-*.whl` (or `pip install .`), or in a "
            f"checkout build it with `make build` (or set {LIBRARY_ENV} to a "
            f"built op library).")
    running = _minor(tf.__version__)
    if running is not None and running < SUPPORTED[0]:
        raise ImportError(
            f"rustfx: TensorFlow {tf.__version__} is older than this rustfx "
            f"supports ({_supported_text()}): its C kernel API lacks what the "
            f"ops use. Install a supported TensorFlow, e.g. "
            f"`pip install 'tensorflow-cpu>={SUPPORTED[0][0]}.{SUPPORTED[0][1]}'`.")
    newer = running is not None and running > SUPPORTED[1]
    try:
        ops = tf.load_op_library(path)
    except Exception as e:
        if newer:
            raise ImportError(
                f"rustfx: the op library {path} failed to load in TensorFlow "
                f"{tf.__version__}, newer than this rustfx is tested with "
                f"({_supported_text()}): {e}") from e
        raise
    if newer:
        warnings.warn(
            f"rustfx: TensorFlow {tf.__version__} is newer than this rustfx is "
            f"tested with ({_supported_text()}); its op library loaded.",
            stacklevel=3)
    return ops


ops = load()
