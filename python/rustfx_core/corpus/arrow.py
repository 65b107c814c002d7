"""Corpus rows as Arrow: the base columns, and each feature's columns: the
core's own export of its rows (rustfx_core.outputs, Arrow C Data), taken
by pyarrow with no copy.

The schema is what the same export gives for no documents (`schema`), so
the rows and their schema cannot disagree.

| kind    | column(s)                                   | Arrow type                      |
|---------|---------------------------------------------|---------------------------------|
| dense   | `<name>`                                    | fixed_size_list<dtype>[width]   |
| ragged  | `<name>`                                    | large_list<dtype>; strings large_list<large_binary> |
| sparse  | `<name>_indices`, `<name>_values`           | large_list<int64>, large_list<dtype> |

Sparse rows leave the core as one large_list<struct<index, value>>; the
shards keep them as two columns (the struct's fields under the same
offsets, no copy), the form TFRecord's SparseFeature reads.
| every   | `<name>_digest`                             | fixed_size_binary(32)           |

Lists and strings have 64-bit offsets (Arrow's large types): a shard of
long ragged rows (1,000 MalConv2 rows of 4 MB) passes 2^31 values, where
32-bit offsets would wrap. `<name>_digest` is each row's digest
(rustfx_core.cache.row_digests: the spec, the content key and the row),
which FeatureCache.fill_from_corpus checks before it stores the row.
A failed document's feature columns are null.
"""

import pyarrow as pa

from rustfx_core._abi import Documents, Extractor

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

def digest_column(column):
    """The name of feature `column`'s row digests."""
    return column + "_digest"


def feature_columns(spec, column, rows, digests):
    """{name: pyarrow.Array} of feature `column` (FeatureSpec `spec`) from
    its extracted rows `rows` (a rustfx_core Batch: null for a failed
    document) and their row digests (`digests`: 32 bytes each, end to end;
    rustfx_core.digests.row_digests), null where the rows are."""
    array = pa.array(rows)
    validity = array.buffers()[0]
    arrays = {column: array}
    if spec.rows.sparse:
        entries = array.values
        arrays = {column + "_" + name: pa.LargeListArray.from_buffers(
            pa.large_list(entries.type.field(field).type), len(array),
            [validity, array.buffers()[1]], null_count=array.null_count,
            children=[entries.field(field)]) for name, field in (("indices", "index"),
                                                                  ("values", "value"))}
    arrays[digest_column(column)] = pa.Array.from_buffers(
        pa.binary(32), len(array), [validity, pa.py_buffer(digests)],
        null_count=array.null_count)
    return arrays


def schema(features, feature_set_json):
    """The rows' schema: the base columns, then each feature's (`features`:
    column -> FeatureSpec), the feature set's JSON in the metadata."""
    fields = list(BASE_FIELDS)
    for column, spec in features.items():
        empty = spec.rows.batch(Extractor(spec.to_json()).extract(Documents.of([])))
        for name, array in feature_columns(spec, column, empty, b"").items():
            fields.append(pa.field(name, array.type))
    return pa.schema(fields, metadata={METADATA_KEY: feature_set_json.encode()})
