"""TFRecord shards: written by TensorFlow on the workers of a
`--format tfrecord` job, read back as a tf.data.Dataset.

A row is a tf.train.Example of the row's Arrow columns
(rustfx_core.corpus.arrow): floats as float_list, integers as int64_list
(int32 stored as int64, cast back when read), strings and binary (the
path: its exact bytes) as bytes_list; sha256 and content_key are "" in error rows, whose feature columns are left out
(they parse as zeros for dense columns, empty for ragged and sparse ones).
"""

import struct

import pyarrow as pa
import tensorflow as tf

from rustfx_core.corpus.arrow import digest_column
from rustfx_core.corpus.shards import OutputDir, ShardFormat, load_feature_set, shard_names
from rustfx_core.outputs import RowsVisitor


class TFRecordShards(ShardFormat):
    """TFRecord shards, written row by row as they come. Its module imports
    TensorFlow, and so does a worker given one (Ray unpickles it by
    reference)."""

    name = "tfrecord"

    def write(self, local_path, tables, schema):
        features = [(field.name, _feature_of(field.type)) for field in schema]
        with tf.io.TFRecordWriter(local_path) as writer:
            for table in tables:
                for row in table.to_pylist():
                    for digest in ("sha256", "content_key"):
                        if row[digest] is None:
                            row[digest] = ""
                    example = tf.train.Example(features=tf.train.Features(feature={
                        name: feature(row[name]) for name, feature in features
                        if row[name] is not None}))
                    writer.write(example.SerializeToString())


def _floats(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def _ints(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _bytes(values):
    return tf.train.Feature(bytes_list=tf.train.BytesList(
        value=[v.encode() if isinstance(v, str) else v for v in values]))


def _feature_of(arrow_type):
    """The tf.train.Feature maker of a column's values (a list or a scalar)."""
    is_list = (pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)
               or pa.types.is_fixed_size_list(arrow_type))
    value_type = arrow_type.value_type if is_list else arrow_type
    make = (_floats if pa.types.is_floating(value_type) else
            _ints if pa.types.is_integer(value_type) else _bytes)
    return make if is_list else (lambda value: make([value]))


class _ParseFeature(RowsVisitor):
    """The tf.io.parse_example features of a feature column, by kind, in
    the dtype it is stored as (int64 for integers)."""

    def dense(self, rows, column, stored):
        # Error rows carry no features: zeros (their status says so).
        return {column: tf.io.FixedLenFeature([rows.width], stored,
                                              default_value=[0] * rows.width)}

    def ragged(self, rows, column, stored):
        return {column: tf.io.RaggedFeature(stored)}

    def strings(self, rows, column, stored):
        return self.ragged(rows, column, stored)

    def sparse(self, rows, column, stored):
        return {column: tf.io.SparseFeature(column + "_indices", column + "_values", stored,
                                            rows.width)}


_PARSE_FEATURE = _ParseFeature()


def _stored(rows):
    dtype = tf.as_dtype(rows.dtype)
    return tf.int64 if dtype.is_integer else dtype


def parse_schema(feature_set):
    """The `tf.io.parse_example` features of a TFRecord row of
    `feature_set` (a FeatureSet)."""
    schema = {
        "path": tf.io.FixedLenFeature([], tf.string),
        "size": tf.io.FixedLenFeature([], tf.int64),
        "sha256": tf.io.FixedLenFeature([], tf.string),  # "" in error rows
        "content_key": tf.io.FixedLenFeature([], tf.string),  # "" in error rows
        "status": tf.io.FixedLenFeature([], tf.int64),
        "message": tf.io.FixedLenFeature([], tf.string, default_value=""),
    }
    for column, spec in feature_set.features.items():
        schema.update(spec.rows.accept(_PARSE_FEATURE, column, _stored(spec.rows)))
        # The row's digest (rustfx_core.corpus.arrow); "" in error rows.
        schema[digest_column(column)] = tf.io.FixedLenFeature([], tf.string, default_value="")
    return schema


def read_tfrecord(output, feature_set=None, *, cycle_length=4):
    """OUT's TFRecord shards as a tf.data.Dataset of parsed rows (dicts of
    tensors: parse_schema's, int32 columns cast back), interleaved over the
    shards. TF reads the shards of a local OUT; those of a URI are read
    through pyarrow (_tfrecord_records), since TF 2.21 reads no s3:// (that
    needs tensorflow-io) and knows none of pyarrow's URI parameters."""
    out_dir = OutputDir(output)
    found, _ = load_feature_set(out_dir, feature_set)
    schema = parse_schema(found)
    files = [out_dir.path(name) for name in shard_names(out_dir, "tfrecord")]
    casts = {c: tf.as_dtype(s.rows.dtype) for c, s in found.features.items()
             if tf.as_dtype(s.rows.dtype) != _stored(s.rows)}
    casts["status"] = tf.int32

    def parse(record):
        row = tf.io.parse_single_example(record, schema)
        for column, dtype in casts.items():
            row[column] = tf.cast(row[column], dtype)
        return row

    if out_dir.is_local:
        records = tf.data.TFRecordDataset
    else:
        def records(path):
            return tf.data.Dataset.from_generator(
                lambda path: _tfrecord_records(out_dir.filesystem, path.decode()),
                args=(path,), output_signature=tf.TensorSpec([], tf.string))

    return (tf.data.Dataset.from_tensor_slices(tf.constant(files, tf.string))
            .interleave(records, cycle_length=cycle_length,
                        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
            .map(parse, num_parallel_calls=tf.data.AUTOTUNE))


def _tfrecord_records(filesystem, path):
    """The records of a TFRecord file read through pyarrow, streamed. Each
    is framed as its length (uint64, little-endian), the length's CRC, the
    data, the data's CRC. A short file raises; the CRCs are not checked
    (TF's reader does that on local files; an object store keeps an object
    as it was uploaded, whole)."""
    with filesystem.open_input_stream(path) as f:
        while header := f.read(12):
            length = struct.unpack("<Q", header[:8])[0] if len(header) == 12 else 0
            framed = f.read(length + 4)
            if len(header) < 12 or len(framed) < length + 4:
                raise ValueError(f"{path}: a truncated TFRecord file")
            yield framed[:length]
