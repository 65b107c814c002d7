"""The Ray job of corpus extraction: `run` (python -m rustfx.corpus) and
`extract_dataset` (a step of your own Ray Data pipeline).

The driver lists and sorts the inputs, cuts the shards, pins the job in
OUT/spec.json and skips committed shards; Ray actors (the classes of
rustfx_core.corpus.workers, which import no TensorFlow) read, extract and
commit each shard. docs/corpus.md says what is guaranteed and why.
"""

import os
import time

import ray

from rustfx.corpus.formats import SHARD_FORMATS
from rustfx_core import DEFAULT_MAX_BYTES
from rustfx_core.corpus.features import FeatureSet
from rustfx_core.corpus.inputs import DEFAULT_READ_BATCH_BYTES, list_inputs
from rustfx_core.corpus.shards import (DEFAULT_SHARD_SIZE, FORMAT_VERSION, OutputDir,
                                       check_or_write_meta, committed,
                                       input_digest)
from rustfx_core.corpus.workers import ExtractRows, WriteShards


def shard_writer(feature_set_json, out_dir, fmt, max_bytes, on_error, read_batch_bytes=None):
    """(UDF class, its constructor args): what run ships to each Ray actor."""
    return WriteShards, (feature_set_json, out_dir.output, SHARD_FORMATS[fmt], max_bytes,
                         on_error, read_batch_bytes)


def run(spec, input, output, *, fmt="parquet", address=None, max_bytes=None,
        on_error="record", shard_size=DEFAULT_SHARD_SIZE, workers=None,
        read_batch_bytes=None, log=print):
    """The job of `python -m rustfx.corpus` (docs/corpus.md); returns its
    summary dict: files, bytes, errors, shards_done, shards_skipped,
    seconds, mb_per_s, and worker_rss: the largest peak RSS of a worker
    (bytes) and worker_rss_growth: the largest growth of a worker's peak
    RSS past its baseline (the core loaded and warmed up), both 0 if
    no shard was written."""
    start = time.monotonic()
    if fmt not in SHARD_FORMATS:
        raise ValueError(f"--format must be one of {', '.join(SHARD_FORMATS)}, got {fmt!r}")
    shard_format = SHARD_FORMATS[fmt]
    feature_set = FeatureSet.load(spec)
    max_bytes = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    paths = list_inputs(input)
    out_dir = OutputDir(output)
    out_dir.create()
    shards = [paths[i:i + shard_size] for i in range(0, len(paths), shard_size)]
    meta = {
        "format_version": FORMAT_VERSION,
        "feature_set": feature_set.to_dict(),
        "format": fmt,
        "shard_size": shard_size,
        "max_bytes": max_bytes,
        "inputs": {"count": len(paths), "sha256": input_digest(paths)},
        "shards": len(shards),
    }
    check_or_write_meta(out_dir, meta)
    out_dir.delete_stale_staged()
    fs_json = feature_set.to_json()
    pending = [i for i, s in enumerate(shards)
               if not committed(out_dir, i, shard_format, len(s), fs_json)]
    log(f"rustfx.corpus: {len(paths)} files in {len(shards)} shards of {shard_size}; "
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
        # Paths as bytes: exact whatever the name (a str that holds a name
        # that is not UTF-8 as surrogates cannot become Arrow).
        items = [{"shard": i, "paths": [os.fsencode(p) for p in shards[i]]} for i in pending]
        # Up to 4 shards per Ray task while every actor still gets 4 tasks or
        # more: a task costs Ray about 40 ms, a tenth of a 1000-file shard of
        # small files (200,000 rows of 15 KB files on 2 workers: 16.7-17.4 ->
        # 14.1-15.4 s). Each shard is still committed on its own.
        per_task = max(1, min(4, len(pending) // (4 * actors)))
        udf, args = shard_writer(fs_json, out_dir, fmt, max_bytes, on_error, read_batch_bytes)
        ds = ray.data.from_items(items, override_num_blocks=-(-len(items) // per_task))
        ds = ds.map_batches(
            udf, fn_constructor_args=args,
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
    log(f"rustfx.corpus: {summary['files']} files, {summary['bytes'] / 1e6:.1f} MB, "
        f"{summary['errors']} errors in {seconds:.1f} s = {summary['mb_per_s']:.1f} MB/s, "
        f"{summary['files'] / seconds:.0f} files/s; {summary['shards_done']} shards written, "
        f"{summary['shards_skipped']} skipped (committed before); worker peak RSS "
        f"{summary['worker_rss'] / 2**20:.0f} MiB ({summary['worker_rss_growth'] / 2**20:.0f} MiB "
        f"above its baseline, read batches of at most "
        f"{(read_batch_bytes or DEFAULT_READ_BATCH_BYTES) / 2**20:.0f} MiB); "
        f"output: {out_dir.location()}")
    return summary


def extract_dataset(paths, feature_set, *, column="path", max_bytes=None, on_error="record",
                    concurrency=None, batch_size=256, read_batch_bytes=None):
    """A Ray Dataset of feature rows (FeatureSet.arrow_schema()) of a Ray
    Dataset whose `column` holds file paths (or URIs): a class-based
    map_batches (rustfx_core.corpus.workers.ExtractRows), so the core's
    extractors load once per actor, no TensorFlow is imported there, and
    each worker reads its files itself, one read batch (read_batches) at a
    time. `concurrency`: actors (default: the cluster's CPUs)."""
    feature_set = FeatureSet.load(feature_set)
    if concurrency is None:
        concurrency = max(1, int(ray.cluster_resources().get("CPU", 1)))
    return paths.map_batches(
        ExtractRows, fn_constructor_args=(feature_set.to_json(), max_bytes, on_error, column,
                                          read_batch_bytes),
        batch_size=batch_size, batch_format="numpy", concurrency=concurrency, num_cpus=1)
