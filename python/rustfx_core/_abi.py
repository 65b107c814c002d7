"""The Rust core's C ABI (crates/rustfx-capi) through ctypes: the one module that
talks to `_rustfx_core*.so`.

Handles stay opaque: an `Extractor` (a checked FeatureSpec's extractor),
`Documents` (contents read by the core, given, or read in place from an
Arrow array or stream), and `RowsHandle`, one extraction's rows, which
leave the core only as Arrow C Data (ArrowSchema/ArrowArray, the C Data
Interface) over the core's own buffers: in PyCapsules for any Arrow
consumer (`capsules`), or as structs this package reads for numpy views
(`ExportedRows`). What the layouts mean is rustfx_core.outputs' business.
Needs only numpy. Loading the library is rustfx_core._library's; the
Arrow structs and capsules are rustfx_core._arrow_c's (both re-exported
here).
"""

import ctypes
import json
import os
from typing import NamedTuple

import numpy as np

from rustfx_core._arrow_c import (ArrowArray, ArrowSchema, ExportedRows,  # noqa: F401
                                  RowsHandle, binary_structs, capsule_pointer,
                                  exported_tree, rows_from_tree)
from rustfx_core._library import ABI_VERSION, lib, library_path, taken_message  # noqa: F401

# rustfx_explanation_array's `which`, each column's dtype (crates/rustfx-capi
# src/explain.rs): the texts are bytes end to end, split at their ends.
_EXPLAIN_COLUMNS = {"index": (0, np.uint64), "offset": (1, np.uint64),
                    "length": (2, np.uint64), "value": (3, np.float64)}
_EXPLAIN_TEXT, _EXPLAIN_TEXT_ENDS = 4, 5


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
        raise ValueError(taken_message(message))
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
            raise ValueError(taken_message(message))
        self._free = library.rustfx_extractor_free

    def __del__(self):
        if getattr(self, "_handle", None):
            self._free(self._handle)
            self._handle = None

    def extract(self, documents):
        """The RowsHandle of `documents`' rows."""
        message = ctypes.c_void_p()
        handle = lib().rustfx_extract(self._handle, documents.handle, ctypes.byref(message))
        return RowsHandle.taken(handle, message)


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
            raise ValueError(taken_message(message))
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


class Documents:
    """Documents for the core: each read from a file by the core (`read`) or
    given (`set`); empty and OK until then; or read in place from Arrow
    (`from_arrow`). `codes` (int32, a tf.errors code per document, 0 = OK)
    and `messages` (str, "" when OK) hold each document's status; a
    document that failed is null in the rows' Arrow form. Built whole by
    `Documents.of(contents)`, `Documents.from_files(paths)` or
    `Documents.from_arrow(array)`."""

    def __init__(self, n, _handle=None, _keep=None):
        library = lib()
        self._handle = _handle or library.rustfx_documents_new(n)
        if not self._handle:
            raise MemoryError(f"rustfx: no room for {n} documents")
        self._n = library.rustfx_documents_len(self._handle)
        self._free = library.rustfx_documents_free
        # What the core reads in place (Documents.of's buffers).
        self._keep = _keep
        self.codes = np.zeros(self._n, np.int32)
        self.messages = [""] * self._n
        if _handle is not None and self._n:
            if not library.rustfx_documents_codes(self._handle, self.codes.ctypes.data):
                raise RuntimeError("rustfx_documents_codes failed (a bug in rustfx)")
            for i in np.flatnonzero(self.codes).tolist():
                self.messages[i] = self._message(i)

    @classmethod
    def of(cls, contents):
        """Documents holding `contents` (a sequence of bytes-like objects):
        joined once into one buffer, which the core reads in place as an
        Arrow large_binary array (no call per document)."""
        lengths = np.fromiter(map(len, contents), np.int64, len(contents))
        offsets = np.zeros(len(contents) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = b"".join(contents)
        return cls._from_c_structs(*binary_structs(data, offsets), keep=(data, offsets))

    @classmethod
    def from_arrow(cls, documents):
        """Documents read in place from an Arrow array or stream of binary
        or strings (binary, large_binary, utf8, large_utf8, binary_view,
        string_view): any object with `__arrow_c_array__` or
        `__arrow_c_stream__` (pyarrow, polars, nanoarrow, duckdb results).
        A null is an empty document with status INVALID_ARGUMENT.
        ValueError with the core's message for another type."""
        library = lib()
        message = ctypes.c_void_p()
        if hasattr(documents, "__arrow_c_array__"):
            schema, array = documents.__arrow_c_array__()
            # The core moves the array out of its capsule (leaving it
            # released) and releases it with the documents.
            handle = library.rustfx_documents_from_arrow(
                capsule_pointer(schema, b"arrow_schema"),
                capsule_pointer(array, b"arrow_array"), ctypes.byref(message))
        elif hasattr(documents, "__arrow_c_stream__"):
            stream = documents.__arrow_c_stream__()
            handle = library.rustfx_documents_from_arrow_stream(
                capsule_pointer(stream, b"arrow_array_stream"), ctypes.byref(message))
        else:
            raise TypeError(f"not an Arrow array or stream: {type(documents).__name__}")
        if not handle:
            raise ValueError(taken_message(message))
        return cls(0, _handle=handle)

    @classmethod
    def _from_c_structs(cls, schema, array, keep):
        message = ctypes.c_void_p()
        handle = lib().rustfx_documents_from_arrow(ctypes.byref(schema), ctypes.byref(array),
                                                   ctypes.byref(message))
        if not handle:
            raise ValueError(taken_message(message))
        return cls(0, _handle=handle, _keep=keep)

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

    @property
    def handle(self):
        """The core's handle, for the C ABI's calls that read documents."""
        return self._handle

    def __del__(self):
        if getattr(self, "_handle", None):
            self._free(self._handle)
            self._handle = None

    def _message(self, i):
        data, count = ctypes.c_void_p(), ctypes.c_size_t()
        lib().rustfx_documents_message(self._handle, i, ctypes.byref(data), ctypes.byref(count))
        return ctypes.string_at(data.value, count.value).decode("utf-8", "replace")

    def read(self, i, path, max_bytes):
        """Reads document `i` from `path` (str or bytes) by read_files'
        rules: (status code, message), (0, "") when read."""
        raw = os.fsencode(path)
        code = lib().rustfx_documents_read(self._handle, i, raw, len(raw), max_bytes)
        if code < 0:
            raise ValueError(f"rustfx: cannot read document {i} of {self._n} with "
                             f"max_bytes={max_bytes} (max_bytes must be in [0, 2**31 - 1])")
        message = self._message(i) if code else ""
        self.codes[i], self.messages[i] = code, message
        return code, message

    def set(self, i, contents, code=0, message=""):
        """Document `i`'s contents (bytes), with a status (OK by default:
        a failed read elsewhere gives b"" and its code and message)."""
        text = message.encode("utf-8", "backslashreplace")
        if not lib().rustfx_documents_set(self._handle, i, contents, len(contents), code, text,
                                          len(text)):
            raise IndexError(f"document {i} of {self._n} (or documents read from Arrow)")
        self.codes[i], self.messages[i] = code, message

    def digest(self):
        """(sizes: int64 array, sha256: a list of 64-digit hex strings)."""
        sizes = np.zeros(self._n, np.int64)
        hexes = ctypes.create_string_buffer(64 * self._n)
        if not lib().rustfx_documents_digest(self._handle, sizes.ctypes.data, hexes):
            raise RuntimeError("rustfx_documents_digest failed (a bug in rustfx)")
        text = hexes.raw.decode("ascii")
        return sizes, [text[64 * i:64 * (i + 1)] for i in range(self._n)]

    def content_keys(self, raw=False):
        """Each document's feature-cache content key (its BLAKE3, what
        b3sum prints) as 64-digit hex strings; `raw`: the 32-byte keys end
        to end, as bytes."""
        keys = ctypes.create_string_buffer(32 * self._n)
        if not lib().rustfx_documents_content_keys(self._handle, keys):
            raise RuntimeError("rustfx_documents_content_keys failed (a bug in rustfx)")
        if raw:
            return keys.raw
        return [keys.raw[32 * i:32 * (i + 1)].hex() for i in range(self._n)]
