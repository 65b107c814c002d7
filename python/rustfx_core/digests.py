"""Row digests: what a corpus job writes beside each row and filling a
feature cache checks (rustfx_cache::row_digests: BLAKE3 of the spec's
digest, the document's content key and the row as the cache stores it).
Its own module so that the corpus code and the cache both use it without
importing each other."""

import ctypes

from rustfx_core import _abi
from rustfx_core.outputs import Batch
from rustfx_core.spec import FeatureSpec

__all__ = ["row_digests", "arrow_rows"]


def _check_count(digests, length):
    if len(digests) != 32 * length:
        raise ValueError(f"digests must be 32 bytes per row: {len(digests)} bytes for "
                         f"{length} rows")


def arrow_rows(rows, digests):
    """(schema capsule, array capsule, schema pointer, array pointer, row
    count) of `rows`, any object with `__arrow_c_array__` (a Batch, a
    pyarrow array), after checking `digests` holds 32 bytes per row; keep
    the capsules while the pointers are used."""
    if not hasattr(rows, "__arrow_c_array__"):
        raise TypeError(f"rows must be an Arrow array (a rustfx_core Batch, a pyarrow "
                        f"array), got {type(rows).__name__}")
    schema, array = rows.__arrow_c_array__()
    schema_at = _abi.capsule_pointer(schema, b"arrow_schema")
    array_at = _abi.capsule_pointer(array, b"arrow_array")
    length = _abi.ArrowArray.from_address(array_at).length
    _check_count(digests, length)
    return schema, array, schema_at, array_at, length


def row_digests(spec, digests, rows):
    """The row digest (32 bytes each, end to end) of each of `rows` for
    `spec` under its document's content key in `digests` (32 bytes each,
    end to end: Documents.content_keys(raw=True)). `rows`: a Batch the
    core extracted for `spec` (digested in place), or an Arrow array of
    its layout (a corpus shard's column), checked whole first. A corpus
    job writes them beside each row; fill_from_corpus refuses a shard
    whose rows do not match theirs."""
    spec = FeatureSpec.from_json(spec)
    digests = bytes(digests)
    if isinstance(rows, Batch) and rows.spec_json == spec.to_json():
        _check_count(digests, len(rows))
        return rows.handle.digests(digests)
    schema, array, schema_at, array_at, length = arrow_rows(rows, digests)
    text = spec.to_json().encode()
    out = ctypes.create_string_buffer(max(1, 32 * length))
    message = ctypes.c_void_p()
    if not _abi.lib().rustfx_row_digests(text, len(text), digests, schema_at, array_at, out,
                                         ctypes.byref(message)):
        raise ValueError(_abi.taken_message(message))
    del schema, array
    return out.raw[:32 * length]
