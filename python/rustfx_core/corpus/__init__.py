"""The worker side of corpus extraction: paths to Arrow rows and committed
shards, with no TensorFlow and no Ray (numpy and pyarrow only).

Everything a Ray corpus worker runs is defined in these modules, one per
stage, so that unpickling it imports rustfx_core, never rustfx:

- features: FeatureSet, the output columns (one FeatureSpec each);
- inputs: listing INPUT, reading URIs through pyarrow, read batches;
- arrow: the rows' Arrow columns and schema, per output kind;
- rows: read, hash and extract a read batch into a pyarrow.Table
  (extract_table, iter_tables);
- shards: OUT (OutputDir), Parquet shards, the exactly-once commit,
  OUT/spec.json;
- workers: the Ray map_batches classes (ExtractRows, WriteShards).

The driver side (the Ray job, the CLI, TFRecord, reading OUT back) is
rustfx.corpus, which imports TensorFlow and Ray; docs/corpus.md is the
reference for both.
"""

from rustfx_core.corpus.arrow import BASE_COLUMNS, METADATA_KEY
from rustfx_core.corpus.features import NAMED_FEATURE_SETS, FeatureSet
from rustfx_core.corpus.inputs import (DEFAULT_READ_BATCH_BYTES, MAX_READ_BATCH_FILES,
                                       list_inputs, read_batches)
from rustfx_core.corpus.rows import extract_table, iter_tables
from rustfx_core.corpus.shards import (DEFAULT_SHARD_SIZE, FORMAT_VERSION, PARQUET_OPTIONS,
                                       ROW_GROUP_BYTES, SPEC_FILE, OutputDir, ParquetShards,
                                       ShardFormat, shard_name)
from rustfx_core.corpus.workers import ExtractRows, WriteShards

__all__ = ["BASE_COLUMNS", "METADATA_KEY", "NAMED_FEATURE_SETS", "FeatureSet",
           "DEFAULT_READ_BATCH_BYTES", "MAX_READ_BATCH_FILES", "list_inputs", "read_batches",
           "extract_table", "iter_tables", "DEFAULT_SHARD_SIZE", "FORMAT_VERSION",
           "PARQUET_OPTIONS", "ROW_GROUP_BYTES", "SPEC_FILE", "OutputDir", "ParquetShards",
           "ShardFormat", "shard_name", "ExtractRows", "WriteShards"]
