"""--format: how a job's shards are written. Parquet's workers need no
TensorFlow; TFRecord's import it (tf.io.TFRecordWriter). Apart from the Ray
job, so that the CLI's --help and argument checks need no Ray."""

from rustfx.corpus.tfrecord import TFRecordShards
from rustfx_core.corpus.shards import ParquetShards

SHARD_FORMATS = {"parquet": ParquetShards(), "tfrecord": TFRecordShards()}
