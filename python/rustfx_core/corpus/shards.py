"""A corpus job's output: OUT (a directory or an object-store prefix), its
shards, and their exactly-once commit.

Shard i of the sorted input list is OUT/part-<i>.<format>, committed whole
or not at all (OutputDir.committing); a shard is committed iff its file is
there (for Parquet: with a readable footer of the expected rows and
feature set). OUT/spec.json pins the job (feature set, format, shard size,
the input list's digest), so a rerun resumes it or is refused. A format is
a ShardFormat: ParquetShards here (no TensorFlow); TFRecord shards are
rustfx.corpus.tfrecord's, since TensorFlow writes them.
"""

import contextlib
import fnmatch
import hashlib
import json
import os
import tempfile
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from rustfx_core.corpus.arrow import METADATA_KEY
from rustfx_core.corpus.features import FeatureSet

#: 2: the path column is binary (the path's bytes), no longer a string.
#: 3: a content_key column (BLAKE3), each feature's row digests
#: (`<column>_digest`), 64-bit list and string offsets (large_list).
FORMAT_VERSION = 3
SPEC_FILE = "spec.json"
DEFAULT_SHARD_SIZE = 1000
#: Rows buffered before a Parquet row group is written.
ROW_GROUP_BYTES = 64 << 20
#: pyarrow.parquet.ParquetWriter options of the shards. No dictionary
#: encoding: feature values, paths and hashes rarely repeat within a column
#: chunk, and trying it made the writer 2.7x slower and the files 13%
#: larger (200 EMBER2024 rows of Windows DLLs: 75 -> 28 ms, 755 -> 669 KB).
PARQUET_OPTIONS = {"use_dictionary": False}

#: The pyarrow filesystems (type_name) that --output may name by URI besides
#: local ones: object stores, where an object appears whole or not at all
#: (elsewhere, HDFS say, a file being written shows at its final path).
_OBJECT_STORES = ("s3", "gcs")
#: Marks a file staged beside its final name in a local OUT (stale if left).
_STAGED = ".tmp-"


class OutputDir:
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
        infos = self.filesystem.get_file_info(pafs.FileSelector(self.base, allow_not_found=True))
        return sorted(i.base_name for i in infos if i.type == pafs.FileType.File)

    def is_file(self, name):
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
    """Shard `index`'s file name; `fmt` a format name (or a ShardFormat)."""
    return f"part-{index:05d}.{getattr(fmt, 'name', fmt)}"


def shard_names(out_dir, fmt):
    """The names of OUT's shard files of format `fmt`, sorted."""
    return [n for n in out_dir.names()
            if fnmatch.fnmatchcase(n, f"part-*.{getattr(fmt, 'name', fmt)}")]


class ShardFormat:
    """How shards of one --format are written and recognised as committed.
    Instances are given to the Ray workers, which unpickle their class by
    reference: a format whose module imports TensorFlow makes its workers
    import it."""

    #: --format, and the shard files' suffix.
    name = None

    def write(self, local_path, tables, schema):
        """Writes the rows of `tables` (pyarrow.Tables of `schema`, an
        iterator: a read batch each) to the file `local_path`, as they come."""
        raise NotImplementedError

    def is_committed(self, out_dir, name, expected_rows, feature_set_json):
        """Whether OUT/name is a committed shard: present (a commit is atomic)."""
        return out_dir.is_file(name)


class ParquetShards(ShardFormat):
    """Parquet shards: rows buffered up to ROW_GROUP_BYTES per row group,
    the feature set in the schema metadata (METADATA_KEY)."""

    name = "parquet"

    def write(self, local_path, tables, schema):
        with pq.ParquetWriter(local_path, schema, **PARQUET_OPTIONS) as writer:
            buffered, written = [], False
            for table in tables:
                buffered.append(table)
                if sum(t.nbytes for t in buffered) >= ROW_GROUP_BYTES:
                    writer.write_table(pa.concat_tables(buffered))
                    buffered, written = [], True
            if buffered or not written:
                writer.write_table(pa.concat_tables(buffered) if buffered
                                   else schema.empty_table())

    def is_committed(self, out_dir, name, expected_rows, feature_set_json):
        """Present, with a readable footer of the expected rows and feature set."""
        if not out_dir.is_file(name):
            return False
        try:
            with out_dir.open(name) as f:
                meta = pq.read_metadata(f)
        except Exception:  # noqa: BLE001 - unreadable: not committed, redo it
            return False
        stored = (meta.metadata or {}).get(METADATA_KEY, b"").decode()
        return meta.num_rows == expected_rows and stored == feature_set_json


def committed(out_dir, index, shard_format, expected_rows, feature_set_json):
    """Whether shard `index` is committed (ShardFormat.is_committed)."""
    return shard_format.is_committed(out_dir, shard_name(index, shard_format),
                                     expected_rows, feature_set_json)


# ---- OUT/spec.json ----------------------------------------------------------------

def input_digest(paths):
    """The SHA-256 of the sorted input list (a path a line, its bytes) that
    pins it."""
    h = hashlib.sha256()
    for p in paths:
        h.update(os.fsencode(p) + b"\n")
    return h.hexdigest()


def load_feature_set(out_dir, feature_set=None):
    """(FeatureSet, the stored spec.json) of OutputDir `out_dir`, refused
    with the core's message if a spec's output version is not this
    rustfx's; if `feature_set` is given, it must be the same."""
    path = out_dir.location(SPEC_FILE)
    stored = out_dir.read_json(SPEC_FILE)
    try:
        found = FeatureSet.load(stored["feature_set"])
    except Exception as e:
        raise ValueError(f"{path}: {getattr(e, 'message', e)}") from e
    if feature_set is not None and FeatureSet.load(feature_set) != found:
        raise ValueError(f"{path} holds another feature set: {found.to_json()}")
    return found, stored


def parquet_tables(out_dir, found):
    """(name, pyarrow.Table) of each Parquet shard of OutputDir `out_dir`,
    each checked to hold FeatureSet `found` in its schema metadata."""
    for name in shard_names(out_dir, "parquet"):
        with out_dir.open(name) as f:
            table = pq.read_table(f)
        stored = (table.schema.metadata or {}).get(METADATA_KEY, b"{}").decode()
        try:
            if FeatureSet.load(stored) != found:
                raise ValueError("its feature set differs from spec.json's")
        except Exception as e:
            raise ValueError(f"{out_dir.location(name)}: {getattr(e, 'message', e)}") from e
        yield name, table


def check_or_write_meta(out_dir, meta):
    """Writes OUT/spec.json, or checks that the one there describes the
    same job (else the committed shards would not line up)."""
    path = out_dir.location(SPEC_FILE)
    if out_dir.is_file(SPEC_FILE):
        _, stored = load_feature_set(out_dir)  # refuses another output version
        for key in ("format_version", "feature_set", "format", "shard_size", "inputs"):
            if stored.get(key) != meta[key]:
                raise ValueError(
                    f"{path} was written for another job ({key} differs: {stored.get(key)!r} "
                    f"there, {meta[key]!r} now); resume with the same --spec, --input, "
                    f"--format and --shard-size (and the same rustfx shard format), or use "
                    f"a new --output")
        return
    with out_dir.committing(SPEC_FILE) as local_path, open(local_path, "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
