"""Corpus rows as Arrow: the base columns, and each feature's columns from
its extracted rows (rustfx_core.outputs) by a RowsVisitor.

The schema is what the same conversion gives for no documents (`schema`),
so the rows and their schema cannot disagree.

| kind    | column(s)                                   | Arrow type                      |
|---------|---------------------------------------------|---------------------------------|
| dense   | `<name>`                                    | fixed_size_list<dtype>[width]   |
| ragged  | `<name>`                                    | large_list<dtype>; strings large_list<large_binary> |
| sparse  | `<name>_indices`, `<name>_values`           | large_list<int64>, large_list<dtype> |
| every   | `<name>_digest`                             | fixed_size_binary(32)           |

Lists and strings have 64-bit offsets (Arrow's large types): a shard of
long ragged rows (1,000 MalConv2 rows of 4 MB) passes 2^31 values, where
32-bit offsets would wrap. `<name>_digest` is each row's digest
(rustfx_core.cache.row_digests: the spec, the content key and the row),
which FeatureCache.fill_from_corpus checks before it stores the row.
A failed document's feature columns are null.
"""

import numpy as np
import pyarrow as pa

from rustfx_core.outputs import _NUMPY_DTYPES, RowsVisitor

#: Schema metadata key of the feature set in each Parquet file.
METADATA_KEY = b"rustfx.feature_set"
#: The columns before the features: reserved names.
#: `path` is binary: a path is bytes (a file name need not be UTF-8), kept
#: exactly; os.fsdecode(row["path"]) is the str Python gives that name.
#: `content_key` is the feature cache's key of the bytes read (their BLAKE3,
#: hex): what FeatureCache.fill_from_corpus stores each row under.
BASE_FIELDS = (pa.field("path", pa.binary()), pa.field("size", pa.int64()),
               pa.field("sha256", pa.string()), pa.field("content_key", pa.string()),
               pa.field("status", pa.int32()), pa.field("message", pa.string()))
BASE_COLUMNS = tuple(f.name for f in BASE_FIELDS)

# Every numeric dtype of the core (rustfx_core.outputs), as Arrow's.
_VALUE_TYPES = {name: pa.from_numpy_dtype(dtype) for name, dtype in _NUMPY_DTYPES.items()}


class _Columns(RowsVisitor):
    """A feature's Arrow arrays by name, from its extracted rows (`result`:
    Rows.convert's) and `mask` (True for a failed document: null)."""

    def dense(self, rows, column, result, mask):
        values = pa.array(result.reshape(-1), _VALUE_TYPES[rows.dtype])
        return {column: pa.FixedSizeListArray.from_arrays(values, rows.width, mask=mask)}

    def ragged(self, rows, column, result, mask):
        values = pa.array(result.values, _VALUE_TYPES[rows.dtype])
        return {column: pa.LargeListArray.from_arrays(_offsets(result.row_splits), values,
                                                      mask=mask)}

    def strings(self, rows, column, result, mask):
        offsets = np.concatenate([[0], result.string_ends]).astype(np.int64)
        strings = pa.Array.from_buffers(pa.large_binary(), len(result.string_ends), [
            None, pa.py_buffer(offsets), pa.py_buffer(result.data)])
        return {column: pa.LargeListArray.from_arrays(_offsets(result.row_splits), strings,
                                                      mask=mask)}

    def sparse(self, rows, column, result, mask):
        offsets = _offsets(result.row_splits)
        return {
            column + "_indices": pa.LargeListArray.from_arrays(
                offsets, pa.array(result.indices, pa.int64()), mask=mask),
            column + "_values": pa.LargeListArray.from_arrays(
                offsets, pa.array(result.values, _VALUE_TYPES[rows.dtype]), mask=mask),
        }


_COLUMNS = _Columns()


def _offsets(row_splits):
    return pa.array(np.asarray(row_splits, np.int64))


def digest_column(column):
    """The name of feature `column`'s row digests."""
    return column + "_digest"


def feature_columns(spec, column, result, digests, mask=None):
    """{name: pyarrow.Array} of feature `column` (FeatureSpec `spec`) from
    its extracted rows `result` (spec.rows.convert's) and their row digests
    (`digests`: 32 bytes each, end to end; rustfx_core.cache.row_digests)."""
    arrays = spec.rows.accept(_COLUMNS, column, result, mask)
    arrays[digest_column(column)] = pa.Array.from_buffers(
        pa.binary(32), len(digests) // 32, [None, pa.py_buffer(digests)]) \
        if mask is None else pa.array(
            [None if bad else digests[32 * i:32 * (i + 1)]
             for i, bad in enumerate(mask.to_pylist())], pa.binary(32))
    return arrays


def schema(features, feature_set_json):
    """The rows' schema: the base columns, then each feature's (`features`:
    column -> FeatureSpec), the feature set's JSON in the metadata."""
    fields = list(BASE_FIELDS)
    for column, spec in features.items():
        for name, array in feature_columns(spec, column, spec.rows.empty(), b"").items():
            fields.append(pa.field(name, array.type))
    return pa.schema(fields, metadata={METADATA_KEY: feature_set_json.encode()})
