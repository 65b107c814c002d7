"""What Ray runs on a corpus worker: the map_batches classes.

Ray pickles a class by reference (its module and name), and a worker that
unpickles one imports its module: these are defined here, in rustfx_core,
so a worker imports rustfx_core, numpy and pyarrow, never rustfx (which
imports TensorFlow: about 5 s and hundreds of MB per worker). Only a
TFRecord job's workers import TensorFlow, through the ShardFormat they
are given (rustfx.corpus.tfrecord).
"""

import os
import resource
import sys

import numpy as np

from rustfx_core.corpus.rows import Plan, concat, plan_tables
from rustfx_core.corpus.shards import OutputDir, committed, shard_name


def peak_rss():
    """This process's peak resident set size in bytes (ru_maxrss)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


class Worker:
    """What a Ray actor holds: the feature set's extractors in the core
    (Plan), warmed up on one empty read (so a broken core library fails
    here, and the peak RSS measured after it is the worker's baseline)."""

    def __init__(self, feature_set_json, max_bytes, on_error, read_batch_bytes=None):
        self.plan = Plan(feature_set_json)
        self.max_bytes = max_bytes
        self.on_error = on_error
        self.read_batch_bytes = read_batch_bytes
        for _ in plan_tables([os.devnull], self.plan, 0, "record", None):
            pass
        self.baseline_rss = peak_rss()

    def tables(self, paths):
        return plan_tables(paths, self.plan, self.max_bytes, self.on_error,
                           self.read_batch_bytes)


class ExtractRows(Worker):
    """map_batches UDF: a batch of paths (column `column`) to a table of rows."""

    def __init__(self, feature_set_json, max_bytes=None, on_error="record", column="path",
                 read_batch_bytes=None):
        super().__init__(feature_set_json, max_bytes, on_error, read_batch_bytes)
        self.column = column

    def __call__(self, batch):
        return concat(list(self.tables(list(batch[self.column]))), self.plan.schema)


class WriteShards(Worker):
    """map_batches UDF: each row a shard (index, paths); extracts it and
    commits OUT/part-<index>.<format> (OutputDir.committing) in
    `shard_format` (a ShardFormat); returns one summary row per shard. A
    shard found committed (a retried task) is not rewritten.

    A shard is streamed: each read batch's rows go to the open file, so the
    worker holds one read batch of contents and at most a row group of
    rows (Parquet), never a shard of either."""

    def __init__(self, feature_set_json, output, shard_format, max_bytes, on_error,
                 read_batch_bytes=None):
        super().__init__(feature_set_json, max_bytes, on_error, read_batch_bytes)
        self.out_dir, self.shard_format = OutputDir(output), shard_format

    def _write(self, paths, local_path):
        """Writes the rows of `paths` to `local_path`; returns (files, bytes, errors)."""
        counts = [0, 0, 0]

        def counted(tables):
            for table in tables:
                counts[0] += table.num_rows
                counts[1] += int(np.sum(table.column("size").to_numpy()))
                counts[2] += int(np.count_nonzero(table.column("status").to_numpy()))
                yield table

        self.shard_format.write(local_path, counted(self.tables(paths)), self.plan.schema)
        return tuple(counts)

    def __call__(self, batch):
        summary = {k: [] for k in ("shard", "files", "bytes", "errors", "skipped",
                                   "baseline_rss", "peak_rss")}
        for index, paths in zip(batch["shard"], batch["paths"]):
            index, paths = int(index), list(paths)
            if committed(self.out_dir, index, self.shard_format, len(paths), self.plan.json):
                files = nbytes = errors = 0
                skipped = True
            else:
                name = shard_name(index, self.shard_format)
                with self.out_dir.committing(name) as local_path:
                    files, nbytes, errors = self._write(paths, local_path)
                skipped = False
            for key, value in zip(summary, (index, files, nbytes, errors, skipped,
                                            self.baseline_rss, peak_rss())):
                summary[key].append(value)
        return {k: np.array(v) for k, v in summary.items()}
