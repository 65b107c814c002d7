"""Reading a corpus job's OUT back: its feature set and its Parquet rows
(TFRecord shards: rustfx.corpus.tfrecord.read_tfrecord). OUT is a path or a
URI, as the job's --output."""

import pyarrow as pa

from rustfx_core.corpus.shards import OutputDir, parquet_tables
from rustfx_core.corpus.shards import load_feature_set as _load_feature_set


def load_feature_set(output, feature_set=None):
    """(FeatureSet, the stored spec.json dict) of OUT (OUT/spec.json),
    refused with the core's message if a spec's output version is not this
    rustfx's; if `feature_set` is given, it must be the same."""
    return _load_feature_set(OutputDir(output), feature_set)


def read_parquet(output, feature_set=None):
    """The rows of OUT's Parquet shards as one pyarrow.Table. Each file's
    schema metadata must hold OUT's feature set (checked, as is the output
    version of every spec)."""
    out_dir = OutputDir(output)
    found, _ = _load_feature_set(out_dir, feature_set)
    tables = [table for _, table in parquet_tables(out_dir, found)]
    if not tables:
        return found.arrow_schema().empty_table()
    return pa.concat_tables(tables)
