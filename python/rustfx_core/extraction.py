"""Extraction into numpy, hashing and reading files, with no TensorFlow.

The same registry, reader and SHA-256 as the TensorFlow ops (one Rust
core): rustfx_core.extract(spec, docs) gives the values rustfx.extract(spec,
tf.constant(docs)) gives, bit for bit (tests/python/test_core_only.py).
"""

from rustfx_core._abi import DEFAULT_MAX_BYTES, Documents, Extractor
from rustfx_core.spec import FeatureSpec

__all__ = ["extract", "read_files", "sha256"]


def _documents(docs):
    return docs if isinstance(docs, Documents) else Documents.of(docs)


def extract(spec, docs):
    """The features `spec` describes (a FeatureSpec, its JSON text or dict)
    of `docs`: a sequence of bytes, or Documents (read_files'). By the
    spec's rows (spec.rows):

    - DenseRows: a 2-D numpy array (documents, width) of the spec's dtype;
    - RaggedRows: Ragged(values, row_splits), row i being
      values[row_splits[i]:row_splits[i + 1]];
    - SparseRows: Sparse(values, indices, row_splits, dense_shape), CSR
      (scipy.sparse.csr_matrix((values, indices, row_splits), dense_shape));
    - StringRows: a list (a row per document) of lists of bytes.

    ValueError with the core's message for a bad spec."""
    spec = FeatureSpec.from_json(spec)
    rows = spec.rows
    return rows.public(Extractor(spec.to_json()).extract(_documents(docs), rows.convert))


def read_files(paths, *, max_bytes=DEFAULT_MAX_BYTES):
    """Documents read by the core from `paths` (str or bytes), by the
    read_files op's rules (at most `max_bytes` of each, never blocking);
    each read's status is in their `codes` (int32, a tf.errors code, 0 = OK)
    and `messages`, a failed read being an empty document. Give them to
    extract() and sha256(); the contents stay in the core."""
    return Documents.from_files(paths, max_bytes=max_bytes)


def sha256(docs):
    """The SHA-256 of each document (a sequence of bytes, or Documents) as
    64 lowercase hex digits, computed in Rust: the rustfx.sha256 op's."""
    return _documents(docs).digest()[1]
