"""The Rust core without TensorFlow: its C ABI (src/c_abi.rs) through ctypes.

A Ray corpus worker (rustfx.corpus) reads, hashes and extracts with this,
so it never imports TensorFlow (about 5 s and hundreds of MB per worker).
Same registry, reader and SHA-256 as the ops: the rows are the same bits
(tests/python/test_corpus.py compares them with the ops). Needs only numpy.

rustfx.spec checks and completes specs with it too (spec_query): no op
runs, so that works the same while a tf.function is traced.
"""

import ctypes
import functools
import glob
import json
import os

import numpy as np

#: The C ABI layout this module speaks (src/c_abi.rs, ABI_VERSION).
ABI_VERSION = 2
#: Default `max_bytes` of read_files and corpus extraction: larger files
#: are truncated to this.
DEFAULT_MAX_BYTES = 64 << 20

_VALUES, _ROW_SPLITS, _INDICES, _STRING_ENDS = 0, 1, 2, 3
_DTYPES = {"float32": np.float32, "int32": np.int32, "int64": np.int64, "string": np.uint8}


def library_path():
    """The core library beside this file: a wheel's
    `_rustfx_core.<python tag>.so`, or the `_rustfx_core.so` that `make
    build` puts there."""
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "_rustfx_core*.so")))
    return found[0] if found else os.path.join(here, "_rustfx_core.so")


@functools.lru_cache(maxsize=None)
def _lib():
    path = library_path()
    if not os.path.exists(path):
        raise ImportError(f"rustfx's core library is missing: {path} (run `make build`, "
                          "or install the rustfx wheel)")
    lib = ctypes.CDLL(path)
    c = ctypes
    out_bytes = c.POINTER(c.c_void_p)
    for name, restype, argtypes in [
        ("rustfx_abi_version", c.c_uint32, []),
        ("rustfx_message_free", None, [c.c_void_p]),
        ("rustfx_extractor_new", c.c_void_p, [c.c_char_p, c.c_size_t, out_bytes]),
        ("rustfx_extractor_free", None, [c.c_void_p]),
        ("rustfx_documents_new", c.c_void_p, [c.c_size_t]),
        ("rustfx_documents_free", None, [c.c_void_p]),
        ("rustfx_documents_read", c.c_int32,
         [c.c_void_p, c.c_size_t, c.c_char_p, c.c_size_t, c.c_int64]),
        ("rustfx_documents_set", c.c_bool, [c.c_void_p, c.c_size_t, c.c_char_p, c.c_size_t]),
        ("rustfx_documents_message", c.c_bool,
         [c.c_void_p, c.c_size_t, out_bytes, c.POINTER(c.c_size_t)]),
        ("rustfx_documents_digest", c.c_bool, [c.c_void_p, c.c_void_p, c.c_void_p]),
        ("rustfx_extract", c.c_void_p, [c.c_void_p, c.c_void_p, out_bytes]),
        ("rustfx_output_array", c.c_bool,
         [c.c_void_p, c.c_uint32, out_bytes, c.POINTER(c.c_size_t)]),
        ("rustfx_output_free", None, [c.c_void_p]),
        ("rustfx_spec_query", c.c_bool,
         [c.c_char_p, c.c_size_t, c.c_char_p, c.c_size_t, out_bytes,
          c.POINTER(c.c_size_t), out_bytes]),
    ]:
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    version = lib.rustfx_abi_version()
    if version != ABI_VERSION:
        raise ImportError(f"{path} has C ABI version {version}, this rustfx speaks "
                          f"{ABI_VERSION}: rebuild it (`make build`)")
    return lib


def _taken_message(pointer):
    """The message an entry point wrote at `pointer` (then freed)."""
    if not pointer.value:
        return "unknown error"
    try:
        return ctypes.string_at(pointer.value).decode("utf-8", "replace")
    finally:
        _lib().rustfx_message_free(pointer.value)


def spec_query(query, spec=""):
    """The core's answer to a spec query (src/spec/mod.rs, `query`), a list
    of str: "registry" ([the registry as JSON]), "spec" ([the canonical
    JSON of `spec`]) or "feature_names" (the name of each value of `spec`'s
    rows). ValueError with the core's message when it refuses."""
    lib = _lib()
    # surrogatepass: a lone surrogate reaches the core, which refuses the
    # bytes as not UTF-8, rather than failing here with another message.
    query_bytes = query.encode("utf-8", "surrogatepass")
    spec_bytes = spec.encode("utf-8", "surrogatepass")
    answer, length, message = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_void_p()
    if not lib.rustfx_spec_query(query_bytes, len(query_bytes), spec_bytes, len(spec_bytes),
                                 ctypes.byref(answer), ctypes.byref(length),
                                 ctypes.byref(message)):
        raise ValueError(_taken_message(message))
    try:
        return json.loads(ctypes.string_at(answer.value, length.value).decode("utf-8"))
    finally:
        lib.rustfx_message_free(answer.value)


class Extractor:
    """A FeatureSpec's extractor (its JSON text), built and checked by the
    core: ValueError with the core's message for a bad spec."""

    def __init__(self, spec_json):
        lib = _lib()
        text = spec_json.encode()
        message = ctypes.c_void_p()
        self._handle = lib.rustfx_extractor_new(text, len(text), ctypes.byref(message))
        if not self._handle:
            raise ValueError(_taken_message(message))
        self._free = lib.rustfx_extractor_free

    def __del__(self):
        if getattr(self, "_handle", None):
            self._free(self._handle)
            self._handle = None

    def extract(self, documents, output):
        """The rows of `documents` by `output` (a spec's "output": kind and
        dtype), as numpy arrays (copies): dense, {"rows": (n, width)};
        ragged, {"values", "row_splits"}; sparse, {"indices", "values",
        "row_splits"} (indices: each value's column); ragged strings,
        {"bytes", "string_ends", "row_splits"}."""
        lib = _lib()
        message = ctypes.c_void_p()
        handle = lib.rustfx_extract(self._handle, documents._handle, ctypes.byref(message))
        if not handle:
            raise RuntimeError(_taken_message(message))
        try:
            def array(which, dtype):
                data, count = ctypes.c_void_p(), ctypes.c_size_t()
                if not lib.rustfx_output_array(handle, which, ctypes.byref(data),
                                               ctypes.byref(count)):
                    raise RuntimeError("rustfx_output_array failed (a bug in rustfx)")
                if count.value == 0:
                    return np.zeros(0, dtype)
                raw = ctypes.string_at(data.value, count.value * np.dtype(dtype).itemsize)
                return np.frombuffer(raw, dtype)

            values = array(_VALUES, _DTYPES[output["dtype"]])
            if output["kind"] == "dense":
                return {"rows": values.reshape(len(documents), output["shape"][0])}
            result = {"values": values, "row_splits": array(_ROW_SPLITS, np.int64)}
            if output["kind"] == "sparse":
                result["indices"] = array(_INDICES, np.int64)
            elif output["dtype"] == "string":
                result["bytes"] = result.pop("values")
                result["string_ends"] = array(_STRING_ENDS, np.int64)
            return result
        finally:
            lib.rustfx_output_free(handle)


class Documents:
    """`n` documents for the core: each read from a file (read) or given
    (set); empty and OK until then."""

    def __init__(self, n):
        lib = _lib()
        self._n = n
        self._handle = lib.rustfx_documents_new(n)
        if not self._handle:
            raise MemoryError(f"rustfx: no room for {n} documents")
        self._free = lib.rustfx_documents_free

    def __len__(self):
        return self._n

    def __del__(self):
        if getattr(self, "_handle", None):
            self._free(self._handle)
            self._handle = None

    def read(self, i, path, max_bytes):
        """Reads document `i` from `path` (str or bytes) by read_files'
        rules: (status code, message), (0, "") when read."""
        lib = _lib()
        raw = os.fsencode(path)
        code = lib.rustfx_documents_read(self._handle, i, raw, len(raw), max_bytes)
        if code < 0:
            raise ValueError(f"rustfx: cannot read document {i} of {self._n} with "
                             f"max_bytes={max_bytes} (max_bytes must be in [0, 2**31 - 1])")
        if code == 0:
            return 0, ""
        data, count = ctypes.c_void_p(), ctypes.c_size_t()
        lib.rustfx_documents_message(self._handle, i, ctypes.byref(data), ctypes.byref(count))
        return code, ctypes.string_at(data.value, count.value).decode("utf-8", "replace")

    def set(self, i, contents):
        """Document `i`'s contents (bytes), status OK."""
        if not _lib().rustfx_documents_set(self._handle, i, contents, len(contents)):
            raise IndexError(f"document {i} of {self._n}")

    def digest(self):
        """(sizes: int64 array, sha256: a list of 64-digit hex strings)."""
        sizes = np.zeros(self._n, np.int64)
        hexes = ctypes.create_string_buffer(64 * self._n)
        if not _lib().rustfx_documents_digest(self._handle, sizes.ctypes.data, hexes):
            raise RuntimeError("rustfx_documents_digest failed (a bug in rustfx)")
        text = hexes.raw.decode("ascii")
        return sizes, [text[64 * i:64 * (i + 1)] for i in range(self._n)]
