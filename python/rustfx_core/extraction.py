"""Extraction with no TensorFlow, hashing and reading files.

The same registry, reader and SHA-256 as the TensorFlow ops (one Rust
core): rustfx_core.extract(spec, docs) gives the values rustfx.extract(spec,
tf.constant(docs)) gives, bit for bit (tests/python/test_core_only.py).
"""

from rustfx_core._abi import DEFAULT_MAX_BYTES, Documents, Extractor
from rustfx_core.spec import FeatureSpec

__all__ = ["extract", "read_files", "sha256", "documents"]


def documents(docs):
    """`docs` as the core's Documents: Documents as they are; an Arrow
    array or stream of binary or strings (anything with
    `__arrow_c_array__` or `__arrow_c_stream__`: pyarrow, polars,
    nanoarrow) read in place; a sequence of bytes joined once."""
    if isinstance(docs, Documents):
        return docs
    if hasattr(docs, "__arrow_c_array__") or hasattr(docs, "__arrow_c_stream__"):
        return Documents.from_arrow(docs)
    return Documents.of(docs)


def extract(spec, docs):
    """The features `spec` describes (a FeatureSpec, its JSON text or dict)
    of `docs` (see `documents`): a Batch of the spec's rows (spec.rows),
    one row per document, in the core's buffers (rustfx_core.outputs):

    - pyarrow.array(rows), polars.Series(rows), pyarrow.table({"x": rows})
      read them with no copy (Arrow C Data): FixedSizeList (dense),
      LargeList (ragged; of LargeBinary for strings), LargeList of
      Struct<index, value> (sparse); a document that failed is null;
    - numpy: numpy.asarray(rows) for dense rows ((documents, width));
      rows.values and rows.row_splits for ragged ones; rows.values,
      rows.indices, rows.row_splits and rows.dense_shape (CSR) for sparse;
      strings: a list of lists of bytes (rows.to_list(), iteration).

    ValueError with the core's message for a bad spec."""
    spec = FeatureSpec.from_json(spec)
    return spec.rows.batch(Extractor(spec.to_json()).extract(documents(docs)))


def read_files(paths, *, max_bytes=DEFAULT_MAX_BYTES):
    """Documents read by the core from `paths` (str or bytes), by the
    read_files op's rules (at most `max_bytes` of each, never blocking);
    each read's status is in their `codes` (int32, a tf.errors code, 0 = OK)
    and `messages`, a failed read being an empty document. Give them to
    extract() and sha256(); the contents stay in the core."""
    return Documents.from_files(paths, max_bytes=max_bytes)


def sha256(docs):
    """The SHA-256 of each document (see `documents`) as 64 lowercase hex
    digits, computed in Rust: the rustfx.sha256 op's."""
    return documents(docs).digest()[1]
