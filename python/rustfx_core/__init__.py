"""rustfx_core: the Rust core from Python, with no TensorFlow.

Python's one channel into the Rust core for everything that is not a
TensorFlow op, through the core's C ABI (crates/rustfx-capi, loaded with
ctypes from `_rustfx_core*.so` beside this file). It never imports
TensorFlow, Keras or Ray, and needs only numpy:

- FeatureSpec, registry(): specs checked, completed and named by the core
  (rustfx_core.spec);
- extract(spec, docs): features as a Batch of rows in the core's buffers,
  which pyarrow, polars and duckdb read with no copy (Arrow C Data) and
  numpy views (rustfx_core.extraction; the kinds are rustfx_core.outputs);
  docs may be an Arrow array or stream of binary or strings, read in place;
- read_files(paths), sha256(docs), Documents: the core's reader and hash;
- explain(spec, contents): each document's contributions to the features,
  from the bytes that made them, as pandas DataFrames (rustfx_core.explain;
  needs pandas, imported on the first call);
- FeatureCache(directory): features on disk keyed by each document's
  content and the spec, shared by processes (rustfx_core.cache);
- DEFAULT_MAX_BYTES: the default bound of every read, here and in rustfx.

`rustfx_core.corpus` (which also needs pyarrow) is the worker side of
corpus extraction: what a Ray worker runs imports only rustfx_core
modules, so the workers load no TensorFlow. `import rustfx` is the
TensorFlow side (ops, Keras layers); its FeatureSpec is this one raising
TensorFlow's InvalidArgumentError.

    import rustfx_core
    spec = rustfx_core.FeatureSpec("byte_histogram")
    rows = rustfx_core.extract(spec, [b"abc", b""])   # numpy.asarray(rows): (2, 256) float32
    pyarrow.array(rows)                               # 2 rows, FixedSizeList<float>[256], no copy
"""

from rustfx_core._abi import DEFAULT_MAX_BYTES, Documents
from rustfx_core.cache import FeatureCache
from rustfx_core.extraction import extract, read_files, sha256
# The function shadows its module here, as rustfx.extract does.
from rustfx_core.explain import explain
from rustfx_core.outputs import (Batch, DenseBatch, DenseRows, Ragged, RaggedBatch, RaggedRows,
                                 Rows, RowsVisitor, Sparse, SparseBatch, SparseRows, StringBatch,
                                 StringRows)
from rustfx_core.spec import FeatureSpec, registry

__all__ = ["DEFAULT_MAX_BYTES", "Documents", "FeatureCache", "FeatureSpec", "registry", "extract",
           "explain", "read_files", "sha256", "Rows", "DenseRows", "RaggedRows", "StringRows",
           "SparseRows", "RowsVisitor", "Ragged", "Sparse", "Batch", "DenseBatch", "RaggedBatch",
           "StringBatch", "SparseBatch"]
