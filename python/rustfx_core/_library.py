"""Loading the Rust core's C ABI library (`_rustfx_core*.so`, crates/rustfx-capi)
with its functions typed, and the messages its entry points write. The
one place that names the library's functions; rustfx_core._abi and
rustfx_core._arrow_c call them."""

import ctypes
import functools
import glob
import os

#: The C ABI layout this module speaks (crates/rustfx-capi, ABI_VERSION).
ABI_VERSION = 8

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
        ("rustfx_documents_set", c.c_bool,
         [c.c_void_p, c.c_size_t, c.c_char_p, c.c_size_t, c.c_int32, c.c_char_p, c.c_size_t]),
        ("rustfx_documents_from_arrow", c.c_void_p, [c.c_void_p, c.c_void_p, out_bytes]),
        ("rustfx_documents_from_arrow_stream", c.c_void_p, [c.c_void_p, out_bytes]),
        ("rustfx_documents_len", c.c_size_t, [c.c_void_p]),
        ("rustfx_documents_codes", c.c_bool, [c.c_void_p, c.c_void_p]),
        ("rustfx_documents_message", c.c_bool,
         [c.c_void_p, c.c_size_t, out_bytes, c.POINTER(c.c_size_t)]),
        ("rustfx_documents_digest", c.c_bool, [c.c_void_p, c.c_void_p, c.c_void_p]),
        ("rustfx_documents_content_keys", c.c_bool, [c.c_void_p, c.c_void_p]),
        ("rustfx_extract", c.c_void_p, [c.c_void_p, c.c_void_p, out_bytes]),
        ("rustfx_rows_len", c.c_size_t, [c.c_void_p]),
        ("rustfx_rows_export", c.c_bool, [c.c_void_p, out_bytes, out_bytes, out_bytes]),
        ("rustfx_rows_digests", c.c_bool, [c.c_void_p, c.c_char_p, c.c_void_p, out_bytes]),
        ("rustfx_rows_free", None, [c.c_void_p]),
        ("rustfx_rows_from_arrow", c.c_void_p,
         [c.c_char_p, c.c_size_t, c.c_char_p, c.c_size_t, c.c_void_p, c.c_void_p, out_bytes]),
        ("rustfx_arrow_init", None, [c.c_void_p]),
        ("rustfx_arrow_capsule_name", c.c_void_p, [c.c_uint32]),
        ("rustfx_arrow_schema_free", None, [c.c_void_p]),
        ("rustfx_arrow_array_free", None, [c.c_void_p]),
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
         [c.c_char_p, c.c_size_t, c.POINTER(c.c_uint64), c.c_char_p, c.c_size_t, c.c_bool,
          out_bytes]),
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
         [c.c_void_p, c.c_char_p, c.c_size_t, c.c_char_p, c.c_void_p, c.c_void_p, out_bytes]),
        ("rustfx_row_digests", c.c_bool,
         [c.c_char_p, c.c_size_t, c.c_char_p, c.c_void_p, c.c_void_p, c.c_void_p, out_bytes]),
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
    # The capsule destructors (Rust) find their struct with CPython's own
    # PyCapsule_GetPointer: the library links no libpython.
    library.rustfx_arrow_init(ctypes.cast(ctypes.pythonapi.PyCapsule_GetPointer,
                                          ctypes.c_void_p))
    return library


def taken_message(pointer):
    """The message an entry point wrote at `pointer` (then freed)."""
    if not pointer.value:
        return "unknown error"
    try:
        return ctypes.string_at(pointer.value).decode("utf-8", "replace")
    finally:
        lib().rustfx_message_free(pointer.value)
