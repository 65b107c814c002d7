"""The Rust core's C ABI (crates/rustfx-capi) through ctypes: the one module that
talks to `_rustfx_core*.so`.

Handles stay opaque: an `Extractor` (a checked FeatureSpec's extractor),
`Documents` (contents read by the core or given, with each read's status),
and the output of one extraction, whose buffers `OutputBuffers` hands out
as numpy arrays of the dtype asked for. What those buffers mean for each
output kind is rustfx_core.outputs' business, not this module's. Needs
only numpy; the library is found beside this file (library_path).
"""

import ctypes
import functools
import glob
import json
import os
from typing import NamedTuple

import numpy as np

#: The C ABI layout this module speaks (crates/rustfx-capi, ABI_VERSION).
ABI_VERSION = 7

# rustfx_output_array's `which`: the values (of the output's dtype, bytes
# for strings), the row splits (int64), the sparse values' column indices
# (int64), where each string ends in the bytes (int64).
VALUES, ROW_SPLITS, INDICES, STRING_ENDS = 0, 1, 2, 3
# rustfx_explanation_array's `which`, each column's dtype (crates/rustfx-capi
# src/explain.rs): the texts are bytes end to end, split at their ends.
_EXPLAIN_COLUMNS = {"index": (0, np.uint64), "offset": (1, np.uint64),
                    "length": (2, np.uint64), "value": (3, np.float64)}
_EXPLAIN_TEXT, _EXPLAIN_TEXT_ENDS = 4, 5


def library_path():
    """The core library beside this file: a wheel's `_rustfx_core*.so`, or
    the `_rustfx_core.so` that `make build` puts there."""
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "_rustfx_core*.so")))
    return found[0] if found else os.path.join(here, "_rustfx_core.so")


@functools.lru_cache(maxsize=None)
def lib():
    """The loaded library, its functions typed; ImportError if it is missing
    or speaks another ABI version."""
    path = library_path()
    if not os.path.exists(path):
        raise ImportError(f"rustfx's core library is missing: {path} (run `make build`, "
                          "or install the rustfx wheel)")
    library = ctypes.CDLL(path)
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
        ("rustfx_documents_content_keys", c.c_bool, [c.c_void_p, c.c_void_p]),
        ("rustfx_extract", c.c_void_p, [c.c_void_p, c.c_void_p, out_bytes]),
        ("rustfx_output_array", c.c_bool,
         [c.c_void_p, c.c_uint32, out_bytes, c.POINTER(c.c_size_t)]),
        ("rustfx_output_free", None, [c.c_void_p]),
        ("rustfx_explain", c.c_void_p,
         [c.c_void_p, c.c_char_p, c.c_size_t, c.POINTER(c.c_int64), c.POINTER(c.c_int64),
          c.c_bool, out_bytes]),
        ("rustfx_explanation_array", c.c_bool,
         [c.c_void_p, c.c_uint32, out_bytes, c.POINTER(c.c_size_t)]),
        ("rustfx_explanation_truncated", c.c_bool, [c.c_void_p, c.POINTER(c.c_bool)]),
        ("rustfx_explanation_combine", c.c_bool,
         [c.c_void_p, out_bytes, c.POINTER(c.c_size_t)]),
        ("rustfx_explanation_free", None, [c.c_void_p]),
        ("rustfx_cache_open", c.c_void_p,
         [c.c_char_p, c.c_size_t, c.POINTER(c.c_uint64), c.c_char_p, c.c_size_t, out_bytes]),
        ("rustfx_cache_free", None, [c.c_void_p]),
        ("rustfx_cache_extract", c.c_void_p,
         [c.c_void_p, c.c_char_p, c.c_size_t, c.c_void_p, out_bytes]),
        ("rustfx_cache_extract_files", c.c_void_p,
         [c.c_void_p, c.c_char_p, c.c_size_t, c.c_char_p, c.c_size_t, c.c_void_p, c.c_size_t,
          c.c_int64, c.c_void_p, out_bytes]),
        ("rustfx_cache_get", c.c_void_p,
         [c.c_void_p, c.c_char_p, c.c_size_t, c.c_void_p, c.c_void_p, out_bytes]),
        ("rustfx_cache_put", c.c_bool,
         [c.c_void_p, c.c_char_p, c.c_size_t, c.c_void_p, out_bytes]),
        ("rustfx_cache_put_rows", c.c_bool,
         [c.c_void_p, c.c_char_p, c.c_size_t, c.c_size_t, c.c_void_p, c.c_void_p, c.c_size_t,
          c.c_void_p, c.c_size_t, c.c_void_p, c.c_void_p, c.c_size_t, out_bytes]),
        ("rustfx_row_digests", c.c_bool,
         [c.c_char_p, c.c_size_t, c.c_size_t, c.c_void_p, c.c_void_p, c.c_size_t,
          c.c_void_p, c.c_size_t, c.c_void_p, c.c_void_p, c.c_size_t, c.c_void_p, out_bytes]),
        ("rustfx_cache_stats", c.c_bool, [c.c_void_p, c.c_void_p, out_bytes]),
        ("rustfx_cache_flush", c.c_bool, [c.c_void_p, out_bytes]),
        ("rustfx_spec_query", c.c_bool,
         [c.c_char_p, c.c_size_t, c.c_char_p, c.c_size_t, out_bytes,
          c.POINTER(c.c_size_t), out_bytes]),
    ]:
        function = getattr(library, name)
        function.restype = restype
        function.argtypes = argtypes
    version = library.rustfx_abi_version()
    if version != ABI_VERSION:
        raise ImportError(f"{path} has C ABI version {version}, this rustfx speaks "
                          f"{ABI_VERSION}: rebuild it (`make build`)")
    return library


def _taken_message(pointer):
    """The message an entry point wrote at `pointer` (then freed)."""
    if not pointer.value:
        return "unknown error"
    try:
        return ctypes.string_at(pointer.value).decode("utf-8", "replace")
    finally:
        lib().rustfx_message_free(pointer.value)


def spec_query(query, spec=""):
    """The core's answer to a spec query (crates/rustfx/src/spec/mod.rs,
    `query`), a list of str: "registry" ([the registry as JSON]), "spec"
    ([the canonical JSON of `spec`]), "feature_names" (the name of each
    value of `spec`'s rows) or "constants" ([the constants every host
    shares, as JSON]). ValueError with the core's message when it refuses."""
    library = lib()
    # surrogatepass: a lone surrogate reaches the core, which refuses the
    # bytes as not UTF-8, rather than failing here with another message.
    query_bytes = query.encode("utf-8", "surrogatepass")
    spec_bytes = spec.encode("utf-8", "surrogatepass")
    answer, length, message = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_void_p()
    if not library.rustfx_spec_query(query_bytes, len(query_bytes), spec_bytes,
                                     len(spec_bytes), ctypes.byref(answer),
                                     ctypes.byref(length), ctypes.byref(message)):
        raise ValueError(_taken_message(message))
    try:
        return json.loads(ctypes.string_at(answer.value, length.value).decode("utf-8"))
    finally:
        library.rustfx_message_free(answer.value)


def _constants():
    return json.loads(spec_query("constants")[0])


# The constants every host shares, from the core (spec query "constants"),
# so that no other language repeats them.
_CONSTANTS = _constants()
#: Default `max_bytes` of reading files (rustfx_core, the read_files op and
#: corpus extraction): larger files are truncated to this (the core's
#: read::DEFAULT_MAX_BYTES).
DEFAULT_MAX_BYTES = _CONSTANTS["default_max_bytes"]
#: The status codes of reads, by TensorFlow's name ("OK": 0, "NOT_FOUND":
#: 5, ...): the core's table (error::STATUS_CODES).
STATUS_CODES = dict(_CONSTANTS["status_codes"])
#: The caps of explanations (rustfx_core.explain): "default_max_contributions",
#: "max_contributions", "default_max_text_bytes", "max_text_bytes" (the
#: core's explain module; docs/explain.md, "Bounds").
EXPLAIN_CAPS = dict(_CONSTANTS["explain"])


class Extractor:
    """A FeatureSpec's extractor (its canonical JSON text), built and
    checked by the core: ValueError with the core's message for a bad spec.
    Used from one thread at a time (the C ABI's rule)."""

    def __init__(self, spec_json):
        library = lib()
        text = spec_json.encode()
        message = ctypes.c_void_p()
        self._handle = library.rustfx_extractor_new(text, len(text), ctypes.byref(message))
        if not self._handle:
            raise ValueError(_taken_message(message))
        self._free = library.rustfx_extractor_free

    def __del__(self):
        if getattr(self, "_handle", None):
            self._free(self._handle)
            self._handle = None

    def extract(self, documents, convert):
        """`convert(OutputBuffers)` of the output of `documents`; the
        output is freed when it returns (OutputBuffers copies)."""
        library = lib()
        message = ctypes.c_void_p()
        handle = library.rustfx_extract(self._handle, documents._handle, ctypes.byref(message))
        if not handle:
            raise RuntimeError(_taken_message(message))
        try:
            return convert(OutputBuffers(handle, len(documents)))
        finally:
            library.rustfx_output_free(handle)


    def explain(self, doc, max_contributions=None, max_text_bytes=None, byte_offsets=False):
        """The core's explanation of one document (bytes): an Explained of
        its columns. The caps are ints (the core checks them, refusing a
        negative one too) or None for the core's defaults. ValueError with
        the core's message when it refuses (bad caps, "X does not explain:
        why")."""
        library = lib()
        message = ctypes.c_void_p()
        handle = library.rustfx_explain(self._handle, doc, len(doc), _cap(max_contributions),
                                        _cap(max_text_bytes), byte_offsets,
                                        ctypes.byref(message))
        if not handle:
            raise ValueError(_taken_message(message))
        try:
            columns = {name: _array(library.rustfx_explanation_array, handle, which, dtype)
                       for name, (which, dtype) in _EXPLAIN_COLUMNS.items()}
            text = _array(library.rustfx_explanation_array, handle, _EXPLAIN_TEXT,
                          np.uint8).tobytes()
            ends = _array(library.rustfx_explanation_array, handle, _EXPLAIN_TEXT_ENDS,
                          np.uint64).tolist()
            columns["text"] = [text[start:end] for start, end in zip([0] + ends, ends)]
            truncated = ctypes.c_bool()
            data, count = ctypes.c_void_p(), ctypes.c_size_t()
            if not (library.rustfx_explanation_truncated(handle, ctypes.byref(truncated))
                    and library.rustfx_explanation_combine(handle, ctypes.byref(data),
                                                           ctypes.byref(count))):
                raise RuntimeError("rustfx_explanation_* failed (a bug in rustfx)")
            combine = ctypes.string_at(data.value, count.value).decode("utf-8")
            return Explained(columns, truncated.value, combine)
        finally:
            library.rustfx_explanation_free(handle)


class Explained(NamedTuple):
    """One document's explanation: `columns` {"index", "offset", "length"
    (uint64 arrays), "value" (float64), "text" (a list of bytes)}, a row
    per contribution; whether the cap `truncated` it; how the values at an
    index `combine` into the output."""
    columns: dict
    truncated: bool
    combine: str


def _cap(value):
    """A cap for rustfx_explain: a pointer to it as int64 (clamped: the
    core refuses anything that far out with the value it got), or null."""
    if value is None:
        return None
    return ctypes.pointer(ctypes.c_int64(max(-2**63, min(2**63 - 1, value))))


def _array(function, handle, which, dtype):
    """Array `which` of `handle` through `function` (an `*_array` entry
    point) as a new 1-D numpy array of `dtype`."""
    data, count = ctypes.c_void_p(), ctypes.c_size_t()
    if not function(handle, which, ctypes.byref(data), ctypes.byref(count)):
        raise RuntimeError(f"{function.__name__} failed (a bug in rustfx)")
    if count.value == 0:
        return np.zeros(0, dtype)
    # Copied once, straight into the array (a bytes object in between was
    # a second copy, and fresh pages at every call).
    array = np.empty(count.value, dtype)
    ctypes.memmove(array.ctypes.data, data.value, array.nbytes)
    return array


class OutputBuffers:
    """The buffers of one extraction's output, for `documents` documents."""

    def __init__(self, handle, documents):
        self._handle = handle
        self.documents = documents

    def array(self, which, dtype):
        """Buffer `which` (VALUES, ROW_SPLITS, INDICES, STRING_ENDS) as a
        new 1-D numpy array of `dtype`."""
        return _array(lib().rustfx_output_array, self._handle, which, dtype)


class Documents:
    """Documents for the core: each read from a file by the core (`read`) or
    given (`set`); empty and OK until then. `codes` (int32, a tf.errors
    code per document, 0 = OK) and `messages` (str, "" when OK) hold each
    read's status. Built whole by `Documents.of(contents)` or
    `Documents.from_files(paths)`."""

    def __init__(self, n):
        library = lib()
        self._n = n
        self._handle = library.rustfx_documents_new(n)
        if not self._handle:
            raise MemoryError(f"rustfx: no room for {n} documents")
        self._free = library.rustfx_documents_free
        self.codes = np.zeros(n, np.int32)
        self.messages = [""] * n

    @classmethod
    def of(cls, contents):
        """Documents holding `contents` (a sequence of bytes)."""
        documents = cls(len(contents))
        for i, data in enumerate(contents):
            documents.set(i, data)
        return documents

    @classmethod
    def from_files(cls, paths, *, max_bytes=DEFAULT_MAX_BYTES):
        """Documents read from `paths` (str or bytes) by the read_files op's
        rules: at most `max_bytes` bytes of each (longer files truncated),
        never blocking; a path that fails is an empty document with its
        status in `codes` and `messages`."""
        documents = cls(len(paths))
        for i, path in enumerate(paths):
            documents.read(i, path, max_bytes)
        return documents

    def __len__(self):
        return self._n

    def __del__(self):
        if getattr(self, "_handle", None):
            self._free(self._handle)
            self._handle = None

    def read(self, i, path, max_bytes):
        """Reads document `i` from `path` (str or bytes) by read_files'
        rules: (status code, message), (0, "") when read."""
        library = lib()
        raw = os.fsencode(path)
        code = library.rustfx_documents_read(self._handle, i, raw, len(raw), max_bytes)
        if code < 0:
            raise ValueError(f"rustfx: cannot read document {i} of {self._n} with "
                             f"max_bytes={max_bytes} (max_bytes must be in [0, 2**31 - 1])")
        message = ""
        if code != 0:
            data, count = ctypes.c_void_p(), ctypes.c_size_t()
            library.rustfx_documents_message(self._handle, i, ctypes.byref(data),
                                             ctypes.byref(count))
            message = ctypes.string_at(data.value, count.value).decode("utf-8", "replace")
        self.codes[i], self.messages[i] = code, message
        return code, message

    def set(self, i, contents, code=0, message=""):
        """Document `i`'s contents (bytes), with a status (OK by default:
        a failed read elsewhere gives b"" and its code and message)."""
        if not lib().rustfx_documents_set(self._handle, i, contents, len(contents)):
            raise IndexError(f"document {i} of {self._n}")
        self.codes[i], self.messages[i] = code, message

    def digest(self):
        """(sizes: int64 array, sha256: a list of 64-digit hex strings)."""
        sizes = np.zeros(self._n, np.int64)
        hexes = ctypes.create_string_buffer(64 * self._n)
        if not lib().rustfx_documents_digest(self._handle, sizes.ctypes.data, hexes):
            raise RuntimeError("rustfx_documents_digest failed (a bug in rustfx)")
        text = hexes.raw.decode("ascii")
        return sizes, [text[64 * i:64 * (i + 1)] for i in range(self._n)]

    def content_keys(self):
        """Each document's feature-cache content key (its BLAKE3, what
        b3sum prints) as 64-digit hex strings."""
        keys = ctypes.create_string_buffer(32 * self._n)
        if not lib().rustfx_documents_content_keys(self._handle, keys):
            raise RuntimeError("rustfx_documents_content_keys failed (a bug in rustfx)")
        raw = keys.raw
        return [raw[32 * i:32 * (i + 1)].hex() for i in range(self._n)]
