"""Corpus extraction on Ray Data: one row per file, in shards, exactly once.

    python -m rustfx.extract --spec ember2024 --input DIR --output OUT

lists INPUT, sorts the paths, cuts the sorted list into shards of
`shard_size` paths (shard i = paths[i*S:(i+1)*S]) and has Ray actors
extract each shard and commit it as OUT/part-<i>.parquet (or .tfrecord),
so that a shard is either absent or complete: in a local (or shared)
directory it is written under a temporary name and renamed; in an object
store (OUT a URI: s3://bucket/prefix, gs://...) it is uploaded whole to
its final key (_OutputDir). A rerun skips the shards already committed, so
after a crash, a Ctrl-C or a lost node every path ends up in exactly one
committed row.
OUT/spec.json holds the feature set, the format, the shard size and a
digest of the sorted input list; a rerun with other ones is refused (the
shards would no longer line up). docs/corpus.md says why this design and
not Ray's own checkpointing.

Each row: path, size (bytes read, at most max_bytes), sha256 (hex, in
Rust, of those bytes), status (a tf.errors code, 0 = OK), message, then
one column per feature (see FeatureSet). Each worker reads its files
itself, never through Ray's object store: local ones by rustfx's core
(read_files' rules), remote URIs through pyarrow's filesystems; in read
batches of at most read_batch_bytes (read_batches); and streams each shard
to its file, so it holds one read batch of contents, never a shard's. It
reads, hashes and extracts through the core's C ABI (rustfx._core), so a
worker writing Parquet never imports TensorFlow (TFRecord shards are
written by TF).
"""

import argparse
import contextlib
import fnmatch
import glob
import hashlib
import json
import os
import sys
import tempfile
import time
import uuid

import numpy as np

FORMAT_VERSION = 1
#: Schema metadata key of the feature set in each Parquet file.
METADATA_KEY = b"rustfx.feature_set"
SPEC_FILE = "spec.json"
DEFAULT_SHARD_SIZE = 1000
#: A worker reads a shard's files in read batches of at most
#: DEFAULT_READ_BATCH_BYTES of expected contents and MAX_READ_BATCH_FILES
#: files (read_batches).
DEFAULT_READ_BATCH_BYTES = 256 << 20
MAX_READ_BATCH_FILES = 256
#: Rows buffered before a Parquet row group is written.
ROW_GROUP_BYTES = 64 << 20
#: pyarrow.parquet.ParquetWriter options of the shards. No dictionary
#: encoding: feature values, paths and hashes rarely repeat within a column
#: chunk, and trying it made the writer 2.7x slower and the files 13%
#: larger (200 EMBER2024 rows of Windows DLLs: 75 -> 28 ms, 755 -> 669 KB).
PARQUET_OPTIONS = {"use_dictionary": False}

#: Ready-made feature sets (--spec NAME): column name -> FeatureSpec JSON.
NAMED_FEATURE_SETS = {
    # EMBER2024's (thrember, feature version 3) 2568-d vector.
    "ember2024": {"ember_features": {"extractor": "ember_features"}},
    # EMBER 2018's byte groups: ByteHistogram, ByteEntropyHistogram, StringExtractor.
    "ember2018-bytes": {
        "byte_histogram": {"extractor": "byte_histogram"},
        "byte_entropy_histogram": {"extractor": "byte_entropy_histogram"},
        "string_features": {"extractor": "string_features"},
    },
}

#: The environment variable that makes `import rustfx` load only what a
#: corpus worker uses (rustfx/__init__.py): no TensorFlow, no op library.
CORE_ONLY_ENV = "RUSTFX_CORE_ONLY"
# The Ray runtime_env of the workers that need no TensorFlow (merged with
# the job's: its pip or py_modules still apply).
_CORE_ONLY = {"env_vars": {CORE_ONLY_ENV: "1"}}

# Status codes (tf.errors) for files read through pyarrow.
_OK, _UNKNOWN, _INVALID, _NOT_FOUND, _DENIED = 0, 2, 3, 5, 7


# ---- Feature sets ---------------------------------------------------------------

class FeatureSet:
    """Named FeatureSpecs, one output column each: {"features": {column:
    spec}}. Built from a FeatureSet, a ready-made name (NAMED_FEATURE_SETS),
    a FeatureSpec (its extractor names the column), a dict of either JSON
    form, JSON text of either, or a path to a JSON file of either."""

    def __init__(self, features):
        from rustfx.spec import FeatureSpec
        if not features:
            raise ValueError("a feature set needs at least one feature")
        self.features = {}
        for column, spec in features.items():
            if column in _BASE_COLUMNS or not isinstance(column, str):
                raise ValueError(f"feature column name {column!r} is reserved or not a string")
            self.features[column] = FeatureSpec.from_json(spec)

    @classmethod
    def load(cls, value):
        from rustfx.spec import FeatureSpec
        if isinstance(value, FeatureSet):
            return value
        if isinstance(value, FeatureSpec):
            return cls({value.extractor: value})
        if isinstance(value, str):
            if value in NAMED_FEATURE_SETS:
                return cls(NAMED_FEATURE_SETS[value])
            if not value.lstrip().startswith("{"):
                if not os.path.isfile(value):
                    raise ValueError(
                        f"--spec {value!r} is neither a ready-made feature set "
                        f"({', '.join(NAMED_FEATURE_SETS)}) nor a JSON file")
                with open(value) as f:
                    value = f.read()
            value = json.loads(value)
        if isinstance(value, dict) and "features" in value:
            return cls(value["features"])
        if isinstance(value, dict) and "extractor" in value:
            spec = FeatureSpec.from_json(value)
            return cls({spec.extractor: spec})
        raise ValueError('a feature set is {"features": {column: spec, ...}} or one '
                         'FeatureSpec {"extractor": ..., "params": ...}')

    def to_dict(self):
        return {"features": {c: s.to_dict() for c, s in self.features.items()}}

    def to_json(self):
        return json.dumps(self.to_dict(), sort_keys=True)

    def __eq__(self, other):
        return isinstance(other, FeatureSet) and other.features == self.features

    # -- Arrow / TFRecord schemas --

    def arrow_schema(self):
        return _arrow_schema({c: s.to_dict() for c, s in self.features.items()}, self.to_json())

    def tfrecord_parse_schema(self):
        """The `tf.io.parse_example` features of a TFRecord row."""
        import tensorflow as tf
        schema = {
            "path": tf.io.FixedLenFeature([], tf.string),
            "size": tf.io.FixedLenFeature([], tf.int64),
            "sha256": tf.io.FixedLenFeature([], tf.string),  # "" in error rows
            "status": tf.io.FixedLenFeature([], tf.int64),
            "message": tf.io.FixedLenFeature([], tf.string, default_value=""),
        }
        for column, spec in self.features.items():
            out = spec.output
            dtype = tf.float32 if out["dtype"] == "float32" else (
                tf.string if out["dtype"] == "string" else tf.int64)
            if out["kind"] == "dense":
                # Error rows carry no features: zeros (their status says so).
                width = out["shape"][0]
                schema[column] = tf.io.FixedLenFeature([width], dtype, default_value=[0] * width)
            elif out["kind"] == "ragged":
                schema[column] = tf.io.RaggedFeature(dtype)
            else:
                schema[column] = tf.io.SparseFeature(
                    column + "_indices", column + "_values", dtype, out["shape"][0])
        return schema


_BASE_COLUMNS = ("path", "size", "sha256", "status", "message")


def _arrow_schema(features, feature_set_json):
    """The rows' schema: the base columns, then each feature's (`features`:
    column -> canonical spec dict), the feature set in the metadata."""
    import pyarrow as pa
    fields = [pa.field("path", pa.string()), pa.field("size", pa.int64()),
              pa.field("sha256", pa.string()), pa.field("status", pa.int32()),
              pa.field("message", pa.string())]
    for column, spec in features.items():
        out = spec["output"]
        if out["kind"] == "dense":
            fields.append(pa.field(column, pa.list_(_arrow_type(out["dtype"]), out["shape"][0])))
        elif out["kind"] == "ragged":
            fields.append(pa.field(column, pa.list_(_arrow_type(out["dtype"]))))
        else:  # sparse: the row's column indices and their values
            fields.append(pa.field(column + "_indices", pa.list_(pa.int64())))
            fields.append(pa.field(column + "_values", pa.list_(_arrow_type(out["dtype"]))))
    return pa.schema(fields, metadata={METADATA_KEY: feature_set_json.encode()})


class _Plan:
    """What turns paths into rows with no TensorFlow (a Ray worker's part):
    each feature's canonical spec (a dict) and its extractor in the core
    (rustfx._core), and the rows' schema. Built from FeatureSet.to_json()."""

    def __init__(self, feature_set_json):
        from rustfx import _core
        self.json = feature_set_json
        self.features = json.loads(feature_set_json)["features"]
        self.extractors = {column: _core.Extractor(json.dumps(spec, sort_keys=True))
                           for column, spec in self.features.items()}
        self.schema = _arrow_schema(self.features, feature_set_json)


def _arrow_type(dtype):
    import pyarrow as pa
    return {"float32": pa.float32(), "int32": pa.int32(), "int64": pa.int64(),
            "string": pa.binary()}[dtype]


# ---- Listing --------------------------------------------------------------------

def list_inputs(spec):
    """The sorted, de-duplicated paths INPUT names: a directory (every
    non-directory entry below it, links not followed), a glob, a text file
    with one path per line (taken as they are: a listed directory becomes
    an error row), or a URI (`file://`, `s3://`, ...) of a directory or
    file, listed through pyarrow's filesystems. Relative local
    paths are made absolute (not normalised)."""
    if "://" in spec:
        return _list_uri(spec)
    if os.path.isdir(spec):
        found = []
        for root, dirs, names in os.walk(spec):
            dirs.sort()
            found.extend(os.path.join(root, n) for n in names)
        paths = found
    elif any(c in spec for c in "*?["):
        paths = [p for p in glob.glob(spec, recursive=True) if not os.path.isdir(p)]
    elif os.path.isfile(spec):
        with open(spec) as f:
            paths = [line.rstrip("\n") for line in f if line.strip()]
    else:
        raise FileNotFoundError(f"--input {spec!r}: no such directory or list file, "
                                f"and no glob matches")
    # Made absolute for the workers, but not normalised: 'file/' is not 'file'.
    cwd = os.getcwd()
    return sorted({p if os.path.isabs(p) else os.path.join(cwd, p) for p in paths})


def _list_uri(uri):
    from pyarrow import fs as pafs
    filesystem, base = pafs.FileSystem.from_uri(uri)
    scheme = uri.split("://", 1)[0]
    info = filesystem.get_file_info(base)
    if info.type == pafs.FileType.Directory:
        infos = filesystem.get_file_info(pafs.FileSelector(base, recursive=True))
        found = [i.path for i in infos if i.type != pafs.FileType.Directory]
    elif info.type == pafs.FileType.File:
        found = [base]
    else:
        raise FileNotFoundError(f"--input {uri!r} does not exist")
    return sorted({f"{scheme}://{p}" for p in found})


# ---- Extraction (on the workers) ------------------------------------------------

def _read_uri(uris, max_bytes):
    """Contents and status of URIs read through pyarrow (remote storage)."""
    from pyarrow import fs as pafs
    contents, codes, messages = [], [], []
    for uri in uris:
        try:
            filesystem, path = pafs.FileSystem.from_uri(uri)
            info = filesystem.get_file_info(path)
            if info.type == pafs.FileType.NotFound:
                raise FileNotFoundError(f"{uri}: no such file")
            if info.type != pafs.FileType.File:
                raise IsADirectoryError(f"{uri}: not a regular file")
            with filesystem.open_input_stream(path) as f:
                data = f.read(max_bytes)
            contents.append(data)
            codes.append(_OK)
            messages.append("")
        except Exception as e:  # noqa: BLE001 - any failure is this file's error row
            code = (_NOT_FOUND if isinstance(e, FileNotFoundError) else
                    _DENIED if isinstance(e, PermissionError) else
                    _INVALID if isinstance(e, IsADirectoryError) else _UNKNOWN)
            contents.append(b"")
            codes.append(code)
            messages.append(str(e) or type(e).__name__)
    return contents, np.array(codes, np.int32), messages


def read_batches(paths, max_bytes, read_batch_bytes=None):
    """Cuts `paths` into read batches, in order. A file is expected to give
    min(its size, max_bytes) bytes (max_bytes if it is not a local regular
    file: a URI, a device, a /proc file, a path that stat cannot see); a
    batch holds at most MAX_READ_BATCH_FILES files whose expected bytes add
    up to at most read_batch_bytes (or one file). So a worker, which holds
    one batch of contents at a time, holds at most read_batch_bytes of
    them, and never more than MAX_READ_BATCH_FILES * max_bytes even if
    files grow between this stat and their read (read_files never reads
    more than max_bytes of a file)."""
    import stat
    budget = DEFAULT_READ_BATCH_BYTES if read_batch_bytes is None else read_batch_bytes
    batch, held = [], 0
    for path in paths:
        expected = max_bytes
        if "://" not in path:
            try:
                info = os.stat(path)
                if stat.S_ISREG(info.st_mode):
                    expected = min(info.st_size, max_bytes)
            except (OSError, ValueError):
                pass
        if batch and (held + expected > budget or len(batch) == MAX_READ_BATCH_FILES):
            yield batch
            batch, held = [], 0
        batch.append(path)
        held += expected
    if batch:
        yield batch


def iter_tables(paths, feature_set, *, max_bytes=None, on_error="record",
                read_batch_bytes=None):
    """The rows of `paths` (extract_table's), as one pyarrow.Table per read
    batch (read_batches), in order: each batch is read, hashed and
    extracted, and its contents freed before the next one is read."""
    plan = _Plan(FeatureSet.load(feature_set).to_json())
    return _iter_tables(paths, plan, max_bytes, on_error, read_batch_bytes)


def _iter_tables(paths, plan, max_bytes, on_error, read_batch_bytes):
    from rustfx import _core
    max_bytes = _core.DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    if on_error not in ("record", "raise"):
        raise ValueError(f"on_error must be 'record' or 'raise', got {on_error!r}")
    paths = [p.decode() if isinstance(p, bytes) else str(p) for p in paths]
    for batch in read_batches(paths, max_bytes, read_batch_bytes):
        yield _extract_batch(batch, plan, max_bytes, on_error)


def extract_table(paths, feature_set, *, max_bytes=None, on_error="record",
                  read_batch_bytes=None):
    """The rows (a pyarrow.Table, feature_set.arrow_schema()) of `paths`:
    each file read once by rustfx's core (read_files' rules, or pyarrow for
    URIs), hashed and given to every extractor of the feature set, with no
    TensorFlow (rustfx._core). on_error="record" makes an unreadable file a
    row with its status and message (features null); "raise" fails on the
    first one. Files are read in read batches (read_batches, iter_tables),
    so the contents held are bounded whatever len(paths) is; the rows
    returned are all of them."""
    plan = _Plan(FeatureSet.load(feature_set).to_json())
    return _concat(list(_iter_tables(paths, plan, max_bytes, on_error, read_batch_bytes)),
                   plan.schema)


def _concat(tables, schema):
    import pyarrow as pa
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _extract_batch(paths, plan, max_bytes, on_error):
    """One read batch: read by the core (the only copy of the contents,
    unless some paths are URIs, read through pyarrow), hash, extract."""
    import pyarrow as pa
    from rustfx import _core

    n = len(paths)
    documents = _core.Documents(n)
    codes = np.zeros(n, np.int32)
    messages = [""] * n
    remote = [i for i, p in enumerate(paths) if "://" in p]
    for i, p in enumerate(paths):
        if "://" not in p:
            codes[i], messages[i] = documents.read(i, p, max_bytes)
    if remote:
        rdata, rcodes, rmessages = _read_uri([paths[i] for i in remote], max_bytes)
        for j, i in enumerate(remote):
            documents.set(i, rdata[j])
            codes[i], messages[i] = rcodes[j], rmessages[j]
        del rdata
    failed = codes != 0
    if on_error == "raise" and failed.any():
        first = int(np.argmax(failed))
        raise OSError(f"rustfx.extract: {messages[first]} (use --on-error record "
                      f"to keep going with an error row)")
    sizes, digests = documents.digest()
    columns = {
        "path": pa.array(paths, pa.string()),
        "size": pa.array(sizes, pa.int64()),
        "sha256": pa.array([None if bad else d for d, bad in zip(digests, failed)], pa.string()),
        "status": pa.array(codes, pa.int32()),
        "message": pa.array(messages, pa.string()),
    }
    mask = pa.array(failed)
    for column, spec in plan.features.items():
        out = spec["output"]
        value_type = _arrow_type(out["dtype"])
        result = plan.extractors[column].extract(documents, out)
        if out["kind"] == "dense":
            columns[column] = pa.FixedSizeListArray.from_arrays(
                pa.array(result["rows"].reshape(-1), value_type), out["shape"][0], mask=mask)
            continue
        splits = pa.array(result["row_splits"].astype(np.int32))
        if out["kind"] == "sparse":
            columns[column + "_indices"] = pa.ListArray.from_arrays(
                splits, pa.array(result["indices"], pa.int64()), mask=mask)
            columns[column + "_values"] = pa.ListArray.from_arrays(
                splits, pa.array(result["values"], value_type), mask=mask)
        elif out["dtype"] == "string":
            ends = result["string_ends"]
            offsets = np.concatenate([[0], ends]).astype(np.int32)
            strings = pa.Array.from_buffers(value_type, len(ends), [
                None, pa.py_buffer(offsets), pa.py_buffer(result["bytes"])])
            columns[column] = pa.ListArray.from_arrays(splits, strings, mask=mask)
        else:
            columns[column] = pa.ListArray.from_arrays(
                splits, pa.array(result["values"], value_type), mask=mask)
    return pa.Table.from_pydict(columns, schema=plan.schema)


def _peak_rss():
    """This process's peak resident set size in bytes (ru_maxrss)."""
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


class _Worker:
    """What a Ray actor holds: the feature set's extractors in the core
    (_Plan; no TensorFlow), warmed up on one empty read (so a broken core
    library fails here, and the peak RSS measured after it is the worker's
    baseline)."""

    def __init__(self, feature_set_json, max_bytes, on_error, read_batch_bytes=None):
        self.plan = _Plan(feature_set_json)
        self.max_bytes = max_bytes
        self.on_error = on_error
        self.read_batch_bytes = read_batch_bytes
        for _ in _iter_tables([os.devnull], self.plan, 0, "record", None):
            pass
        self.baseline_rss = _peak_rss()

    def tables(self, paths):
        return _iter_tables(paths, self.plan, self.max_bytes, self.on_error,
                            self.read_batch_bytes)


class _ExtractRows(_Worker):
    """map_batches UDF: a batch of paths to a table of rows."""

    def __init__(self, feature_set_json, max_bytes=None, on_error="record", column="path",
                 read_batch_bytes=None):
        super().__init__(feature_set_json, max_bytes, on_error, read_batch_bytes)
        self.column = column

    def __call__(self, batch):
        return _concat(list(self.tables(list(batch[self.column]))), self.plan.schema)


def extract_dataset(paths, feature_set, *, column="path", max_bytes=None, on_error="record",
                    concurrency=None, batch_size=256, read_batch_bytes=None):
    """A Ray Dataset of feature rows (FeatureSet.arrow_schema()) of a Ray
    Dataset whose `column` holds file paths (or URIs): a class-based
    map_batches, so the core's extractors load once per actor (no
    TensorFlow: CORE_ONLY_ENV) and each worker reads
    its files itself, one read batch (read_batches) at a time.
    `concurrency`: actors (default: the cluster's CPUs)."""
    import ray
    feature_set = FeatureSet.load(feature_set)
    if concurrency is None:
        concurrency = max(1, int(ray.cluster_resources().get("CPU", 1)))
    return paths.map_batches(
        _ExtractRows, fn_constructor_args=(feature_set.to_json(), max_bytes, on_error, column,
                                           read_batch_bytes),
        runtime_env=_CORE_ONLY,
        batch_size=batch_size, batch_format="numpy", concurrency=concurrency, num_cpus=1)


# ---- The output directory: local, or a prefix in an object store ------------------

#: The pyarrow filesystems (type_name) that --output may name by URI besides
#: local ones: object stores, where an object appears whole or not at all
#: (elsewhere, HDFS say, a file being written shows at its final path).
_OBJECT_STORES = ("s3", "gcs")
#: Marks a file staged beside its final name in a local OUT (stale if left).
_STAGED = ".tmp-"


class _OutputDir:
    """OUT through a pyarrow filesystem: a local directory (a path or a
    file:// URI) or a prefix in an object store (s3://bucket/prefix, gs://;
    pyarrow's URI query parameters such as ?endpoint_override=HOST:PORT
    &scheme=http&region=R pass through). `committing` makes a file appear
    whole or not at all:

    - local: written under a temporary name beside its final one, fsynced,
      renamed (a POSIX rename is atomic);
    - object store: there is no rename (S3 would copy and delete), but an
      object becomes visible only once its upload (one PUT, or a completed
      multipart upload) is done, so the file goes straight to its final
      key. It is staged in a local temporary file and uploaded once
      complete, not streamed: pyarrow's output streams have no abort, and
      closing one, on an exception too, completes the upload
      (apache/arrow#40502), so a shard that failed midway would become a
      short object. A writer killed during the upload leaves no object."""

    def __init__(self, output):
        from pyarrow import fs as pafs
        if "://" in output:
            self.filesystem, base = pafs.FileSystem.from_uri(output)
            self.scheme = output.split("://", 1)[0]
        else:
            self.filesystem, base = pafs.LocalFileSystem(), os.path.abspath(output)
            output, self.scheme = base, None
        self.output = output  # what a worker opens it by: a URI or an absolute path
        self.base = base
        self.is_local = self.filesystem.type_name == "local"
        if not self.is_local and self.filesystem.type_name not in _OBJECT_STORES:
            raise ValueError(f"--output {output!r}: a {self.filesystem.type_name} filesystem; "
                             f"an output is a local directory or an s3:// or gs:// URI")

    def path(self, name):
        """`name`'s path in the filesystem."""
        return f"{self.base.rstrip('/')}/{name}"

    def location(self, name=""):
        """OUT, or `name` in it, as messages show it: a path, or a URI
        without its query."""
        where = self.path(name) if name else self.base
        return where if self.is_local else f"{self.scheme}://{where}"

    def create(self):
        self.filesystem.create_dir(self.base, recursive=True)

    def names(self):
        """The names of OUT's files (not below its subdirectories), sorted."""
        from pyarrow import fs as pafs
        infos = self.filesystem.get_file_info(pafs.FileSelector(self.base, allow_not_found=True))
        return sorted(i.base_name for i in infos if i.type == pafs.FileType.File)

    def is_file(self, name):
        from pyarrow import fs as pafs
        return self.filesystem.get_file_info(self.path(name)).type == pafs.FileType.File

    def open(self, name):
        """`name` opened for random access reads (Parquet footers)."""
        return self.filesystem.open_input_file(self.path(name))

    def read_json(self, name):
        with self.open(name) as f:
            return json.loads(f.read())

    @contextlib.contextmanager
    def committing(self, name):
        """A local path to write `name` to, committed as OUT/name (see the
        class doc) when the block ends without an exception; else dropped."""
        from pyarrow import fs as pafs
        if self.is_local:  # beside its final name: a rename within one filesystem
            staged = self.path(f"{name}{_STAGED}{uuid.uuid4().hex}")
        else:
            staged = os.path.join(tempfile.gettempdir(), f"rustfx-{uuid.uuid4().hex}-{name}")
        try:
            yield staged
            if self.is_local:
                with open(staged, "rb") as f:
                    os.fsync(f.fileno())
                os.replace(staged, self.path(name))
            else:
                pafs.copy_files(staged, self.path(name),
                                source_filesystem=pafs.LocalFileSystem(),
                                destination_filesystem=self.filesystem)
        finally:
            if os.path.exists(staged):
                os.unlink(staged)

    def delete_stale_staged(self):
        """Deletes what writers killed before their rename left in a local
        OUT (one job per OUT at a time). An object store holds none: a
        killed writer's staged file is in its node's temporary directory."""
        for name in self.names():
            if _STAGED in name:
                self.filesystem.delete_file(self.path(name))


# ---- Shards -----------------------------------------------------------------------

def shard_name(index, fmt):
    return f"part-{index:05d}.{fmt}"


def _shard_names(out_dir, fmt):
    return [n for n in out_dir.names() if fnmatch.fnmatchcase(n, f"part-*.{fmt}")]


def _committed(out_dir, index, fmt, expected_rows, feature_set_json):
    """Whether shard `index` is committed: present (a commit is atomic)
    and, for Parquet, with a readable footer of the expected rows and
    feature set."""
    name = shard_name(index, fmt)
    if not out_dir.is_file(name):
        return False
    if fmt != "parquet":
        return True
    import pyarrow.parquet as pq
    try:
        with out_dir.open(name) as f:
            meta = pq.read_metadata(f)
    except Exception:  # noqa: BLE001 - unreadable: not committed, redo it
        return False
    stored = (meta.metadata or {}).get(METADATA_KEY, b"").decode()
    return meta.num_rows == expected_rows and stored == feature_set_json


def _write_tfrecord(table, features, writer):
    """Appends the rows of `table` to a tf.io.TFRecordWriter as
    tf.train.Examples (`features`: column -> canonical spec dict)."""
    import tensorflow as tf
    for row in table.to_pylist():
        feature = {
            "path": _bytes_feature([row["path"].encode()]),
            "size": _int_feature([row["size"]]),
            "sha256": _bytes_feature([(row["sha256"] or "").encode()]),
            "status": _int_feature([row["status"]]),
            "message": _bytes_feature([row["message"].encode()]),
        }
        for column, spec in features.items():
            out = spec["output"]
            if out["kind"] == "sparse":
                if row[column + "_indices"] is None:
                    continue
                feature[column + "_indices"] = _int_feature(row[column + "_indices"])
                feature[column + "_values"] = _float_feature(row[column + "_values"])
                continue
            values = row[column]
            if values is None:
                if out["kind"] == "ragged":
                    values = []
                else:
                    continue
            if out["dtype"] == "float32":
                feature[column] = _float_feature(values)
            elif out["dtype"] == "string":
                feature[column] = _bytes_feature(values)
            else:
                feature[column] = _int_feature(values)
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        writer.write(example.SerializeToString())


def _bytes_feature(values):
    import tensorflow as tf
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))


def _int_feature(values):
    import tensorflow as tf
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _float_feature(values):
    import tensorflow as tf
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


class _WriteShards(_Worker):
    """map_batches UDF: each row a shard (index, paths); extracts it and
    commits OUT/part-<index>.<fmt> (_OutputDir.committing); returns one
    summary row per shard. A shard found committed (a retried task) is not
    rewritten.

    A shard is streamed: each read batch's rows go to the open file (Parquet
    rows buffered up to ROW_GROUP_BYTES per row group), so the worker holds
    one read batch of contents and at most a row group of rows, never a
    shard of either."""

    def __init__(self, feature_set_json, output, fmt, max_bytes, on_error,
                 read_batch_bytes=None):
        super().__init__(feature_set_json, max_bytes, on_error, read_batch_bytes)
        self.out_dir, self.fmt = _OutputDir(output), fmt

    def _write(self, paths, local_path):
        """Writes the rows of `paths` to `local_path`; returns (files, bytes, errors)."""
        import pyarrow as pa
        files = nbytes = errors = 0

        def count(table):
            nonlocal files, nbytes, errors
            files += table.num_rows
            nbytes += int(np.sum(table.column("size").to_numpy()))
            errors += int(np.count_nonzero(table.column("status").to_numpy()))

        if self.fmt == "parquet":
            import pyarrow.parquet as pq
            with pq.ParquetWriter(local_path, self.plan.schema,
                                  **PARQUET_OPTIONS) as writer:
                buffered = []
                for table in self.tables(paths):
                    count(table)
                    buffered.append(table)
                    if sum(t.nbytes for t in buffered) >= ROW_GROUP_BYTES:
                        writer.write_table(pa.concat_tables(buffered))
                        buffered = []
                if buffered or files == 0:
                    writer.write_table(pa.concat_tables(buffered) if buffered
                                       else self.plan.schema.empty_table())
        else:
            import tensorflow as tf
            with tf.io.TFRecordWriter(local_path) as writer:
                for table in self.tables(paths):
                    count(table)
                    _write_tfrecord(table, self.plan.features, writer)
        return files, nbytes, errors

    def __call__(self, batch):
        summary = {k: [] for k in ("shard", "files", "bytes", "errors", "skipped",
                                   "baseline_rss", "peak_rss")}
        for index, paths in zip(batch["shard"], batch["paths"]):
            index, paths = int(index), list(paths)
            if _committed(self.out_dir, index, self.fmt, len(paths), self.plan.json):
                files = nbytes = errors = 0
                skipped = True
            else:
                with self.out_dir.committing(shard_name(index, self.fmt)) as local_path:
                    files, nbytes, errors = self._write(paths, local_path)
                skipped = False
            for key, value in zip(summary, (index, files, nbytes, errors, skipped,
                                            self.baseline_rss, _peak_rss())):
                summary[key].append(value)
        return {k: np.array(v) for k, v in summary.items()}


def _input_digest(paths):
    h = hashlib.sha256()
    for p in paths:
        h.update(p.encode("utf-8", "surrogateescape") + b"\n")
    return h.hexdigest()


def _check_or_write_meta(out_dir, meta):
    """Writes OUT/spec.json, or checks that the one there describes the
    same job (else the committed shards would not line up)."""
    path = out_dir.location(SPEC_FILE)
    if out_dir.is_file(SPEC_FILE):
        stored = out_dir.read_json(SPEC_FILE)
        try:  # refuses another output version, with the core's message
            FeatureSet.load(stored["feature_set"])
        except Exception as e:
            raise ValueError(f"{path}: {getattr(e, 'message', e)}") from e
        for key in ("feature_set", "format", "shard_size", "inputs"):
            if stored.get(key) != meta[key]:
                raise ValueError(
                    f"{path} was written for another job ({key} differs: {stored.get(key)!r} "
                    f"there, {meta[key]!r} now); resume with the same --spec, --input, "
                    f"--format and --shard-size, or use a new --output")
        return
    with out_dir.committing(SPEC_FILE) as local_path, open(local_path, "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)


def run(spec, input, output, *, fmt="parquet", address=None, max_bytes=None,
        on_error="record", shard_size=DEFAULT_SHARD_SIZE, workers=None,
        read_batch_bytes=None, log=print):
    """The job of `python -m rustfx.extract` (see the module doc); returns
    its summary dict: files, bytes, errors, shards_done, shards_skipped,
    seconds, mb_per_s, and worker_rss: the largest peak RSS of a worker
    (bytes) and worker_rss_growth: the largest growth of a worker's peak
    RSS past its baseline (the core loaded and warmed up), both 0 if
    no shard was written."""
    import ray
    from rustfx import _core

    start = time.monotonic()
    if fmt not in ("parquet", "tfrecord"):
        raise ValueError(f"--format must be parquet or tfrecord, got {fmt!r}")
    feature_set = FeatureSet.load(spec)
    max_bytes = _core.DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    paths = list_inputs(input)
    out_dir = _OutputDir(output)
    out_dir.create()
    shards = [paths[i:i + shard_size] for i in range(0, len(paths), shard_size)]
    meta = {
        "format_version": FORMAT_VERSION,
        "feature_set": feature_set.to_dict(),
        "format": fmt,
        "shard_size": shard_size,
        "max_bytes": max_bytes,
        "inputs": {"count": len(paths), "sha256": _input_digest(paths)},
        "shards": len(shards),
    }
    _check_or_write_meta(out_dir, meta)
    out_dir.delete_stale_staged()
    fs_json = feature_set.to_json()
    pending = [i for i, s in enumerate(shards)
               if not _committed(out_dir, i, fmt, len(s), fs_json)]
    log(f"rustfx.extract: {len(paths)} files in {len(shards)} shards of {shard_size}; "
        f"{len(shards) - len(pending)} already committed, {len(pending)} to do")
    summary = {"files": 0, "bytes": 0, "errors": 0, "shards_done": 0,
               "shards_skipped": len(shards) - len(pending),
               "worker_rss": 0, "worker_rss_growth": 0}
    if pending:
        if not ray.is_initialized():
            if address:
                ray.init(address=address)
            else:
                ray.init(num_cpus=os.cpu_count(), include_dashboard=False)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        actors = min(workers or cpus, len(pending))
        items = [{"shard": i, "paths": shards[i]} for i in pending]
        # Up to 4 shards per Ray task while every actor still gets 4 tasks or
        # more: a task costs Ray about 40 ms, a tenth of a 1000-file shard of
        # small files (200,000 rows of 15 KB files on 2 workers: 16.7-17.4 ->
        # 14.1-15.4 s). Each shard is still committed on its own.
        per_task = max(1, min(4, len(pending) // (4 * actors)))
        ds = ray.data.from_items(items, override_num_blocks=-(-len(items) // per_task))
        ds = ds.map_batches(
            _WriteShards,
            fn_constructor_args=(fs_json, out_dir.output, fmt, max_bytes, on_error,
                                 read_batch_bytes),
            # Parquet shards need no TensorFlow in the workers; TFRecord
            # shards are written by tf.io.TFRecordWriter.
            runtime_env=_CORE_ONLY if fmt == "parquet" else None,
            # Ray Data restarts lost actors and retries their tasks
            # (max_restarts=-1, max_task_retries=-1 by default). All actors
            # start at once (started one after another they queued behind
            # the first one's work); the pool may shrink to one if a node
            # is lost.
            batch_size=per_task, batch_format="numpy", num_cpus=1,
            compute=ray.data.ActorPoolStrategy(min_size=1, max_size=actors,
                                               initial_size=actors))
        for row in ds.iter_rows():
            summary["files"] += int(row["files"])
            summary["bytes"] += int(row["bytes"])
            summary["errors"] += int(row["errors"])
            summary["shards_done"] += 0 if row["skipped"] else 1
            summary["shards_skipped"] += 1 if row["skipped"] else 0
            summary["worker_rss"] = max(summary["worker_rss"], int(row["peak_rss"]))
            summary["worker_rss_growth"] = max(summary["worker_rss_growth"],
                                               int(row["peak_rss"]) - int(row["baseline_rss"]))
    seconds = time.monotonic() - start
    summary["seconds"] = seconds
    summary["mb_per_s"] = summary["bytes"] / 1e6 / seconds if seconds else 0.0
    log(f"rustfx.extract: {summary['files']} files, {summary['bytes'] / 1e6:.1f} MB, "
        f"{summary['errors']} errors in {seconds:.1f} s = {summary['mb_per_s']:.1f} MB/s, "
        f"{summary['files'] / seconds:.0f} files/s; {summary['shards_done']} shards written, "
        f"{summary['shards_skipped']} skipped (committed before); worker peak RSS "
        f"{summary['worker_rss'] / 2**20:.0f} MiB ({summary['worker_rss_growth'] / 2**20:.0f} MiB "
        f"above its baseline, read batches of at most "
        f"{(read_batch_bytes or DEFAULT_READ_BATCH_BYTES) / 2**20:.0f} MiB); "
        f"output: {out_dir.location()}")
    return summary


# ---- Reading the output back -------------------------------------------------------

def load_feature_set(output, feature_set=None):
    """The feature set of OUT (OUT/spec.json; OUT a path or a URI, as
    run's), refused with the core's message if a spec's output version is
    not this rustfx's; if `feature_set` is given, it must be the same."""
    return _load_feature_set(_OutputDir(output), feature_set)


def _load_feature_set(out_dir, feature_set):
    path = out_dir.location(SPEC_FILE)
    stored = out_dir.read_json(SPEC_FILE)
    try:
        found = FeatureSet.load(stored["feature_set"])
    except Exception as e:
        raise ValueError(f"{path}: {getattr(e, 'message', e)}") from e
    if feature_set is not None and FeatureSet.load(feature_set) != found:
        raise ValueError(f"{path} holds another feature set: {found.to_json()}")
    return found, stored


def read_parquet(output, feature_set=None):
    """The rows of OUT's Parquet shards as one pyarrow.Table (OUT a path or
    a URI). Each file's schema metadata must hold OUT's feature set
    (checked, as is the output version of every spec)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    out_dir = _OutputDir(output)
    found, _ = _load_feature_set(out_dir, feature_set)
    tables = []
    for name in _shard_names(out_dir, "parquet"):
        with out_dir.open(name) as f:
            table = pq.read_table(f)
        stored = (table.schema.metadata or {}).get(METADATA_KEY, b"{}").decode()
        try:
            if FeatureSet.load(stored) != found:
                raise ValueError("its feature set differs from spec.json's")
        except Exception as e:
            raise ValueError(f"{out_dir.location(name)}: {getattr(e, 'message', e)}") from e
        tables.append(table)
    if not tables:
        return found.arrow_schema().empty_table()
    return pa.concat_tables(tables)


def read_tfrecord(output, feature_set=None, *, cycle_length=4):
    """OUT's TFRecord shards as a tf.data.Dataset of parsed rows (dicts of
    tensors: the feature set's parse schema), interleaved over the shards.
    TF reads the shards of a local OUT; those of a URI are read through
    pyarrow (_tfrecord_records), since TF 2.21 reads no s3:// (that needs
    tensorflow-io) and knows none of pyarrow's URI parameters."""
    import tensorflow as tf
    out_dir = _OutputDir(output)
    found, _ = _load_feature_set(out_dir, feature_set)
    schema = found.tfrecord_parse_schema()
    files = [out_dir.path(name) for name in _shard_names(out_dir, "tfrecord")]
    casts = {c: tf.int32 for c, s in found.features.items()
             if s.output["kind"] == "dense" and s.output["dtype"] == "int32"}
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
    import struct
    with filesystem.open_input_stream(path) as f:
        while header := f.read(12):
            length = struct.unpack("<Q", header[:8])[0] if len(header) == 12 else 0
            framed = f.read(length + 4)
            if len(header) < 12 or len(framed) < length + 4:
                raise ValueError(f"{path}: a truncated TFRecord file")
            yield framed[:length]


# ---- CLI ----------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m rustfx.extract",
        description="Extract features from every file of INPUT on Ray Data, into "
                    "shards of OUTPUT, exactly once and resumable (docs/corpus.md).")
    parser.add_argument("--spec", required=True,
                        help="a FeatureSpec or feature-set JSON file, or a ready-made name: "
                             + ", ".join(NAMED_FEATURE_SETS))
    parser.add_argument("--input", required=True,
                        help="a directory (recursive), a glob, a file with one path per "
                             "line, or a URI (file://, s3://, gs://)")
    parser.add_argument("--output", required=True,
                        help="the output directory: a path, or a URI (s3://bucket/prefix, "
                             "gs://, file://; pyarrow's query parameters pass through, e.g. "
                             "s3://b/p?endpoint_override=HOST:PORT&scheme=http)")
    parser.add_argument("--format", default="parquet", choices=("parquet", "tfrecord"))
    parser.add_argument("--address", help="a Ray cluster to join (default: a local Ray "
                                          "on all cores)")
    parser.add_argument("--max-bytes", type=int, default=None,
                        help="read at most this many bytes of each file (default 64 MiB)")
    parser.add_argument("--on-error", default="record", choices=("record", "raise"))
    parser.add_argument("--shard-size", type=int, default=DEFAULT_SHARD_SIZE,
                        help=f"files per shard (default {DEFAULT_SHARD_SIZE})")
    parser.add_argument("--workers", type=int, default=None,
                        help="actors (default: the cluster's CPUs)")
    parser.add_argument("--read-batch-bytes", type=int, default=DEFAULT_READ_BATCH_BYTES,
                        help="a worker reads files in batches of at most this many bytes "
                             f"(by their sizes, each at most MAX_BYTES) and {MAX_READ_BATCH_FILES} "
                             "files, so it holds at most max(READ_BATCH_BYTES, MAX_BYTES) bytes "
                             f"of contents (default {DEFAULT_READ_BATCH_BYTES >> 20} MiB)")
    args = parser.parse_args(argv)
    if args.shard_size < 1:
        parser.error("--shard-size must be at least 1")
    try:
        summary = run(args.spec, args.input, args.output, fmt=args.format,
                      address=args.address, max_bytes=args.max_bytes,
                      on_error=args.on_error, shard_size=args.shard_size,
                      workers=args.workers, read_batch_bytes=args.read_batch_bytes)
    except Exception as e:  # a bad spec is TF's InvalidArgumentError (the core's message)
        if not isinstance(e, (ValueError, OSError)) and type(e).__name__ != "InvalidArgumentError":
            raise
        print(f"rustfx.extract: error: {getattr(e, 'message', e)}", file=sys.stderr)
        return 2
    return 0 if summary is not None else 1
