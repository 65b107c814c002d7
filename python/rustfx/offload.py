"""FX on tf.data service workers, by itself, on stock TensorFlow
(docs/stalls.md, "Offloading").

    pipe = rustfx.pipeline.from_files(paths, rustfx.ember_features, batch_size=32)
    off = rustfx.offload(pipe, dispatcher="trainer-host:5050", labels=labels)
    model.fit(off.dataset(), epochs=10)       # or: for x, y in off: ...
    print(off.report)                          # the last epoch: who did what

Workers are `rustfx-worker --dispatcher HOST:PORT` (the tf.data service
worker of `rustfx.service`): they need no training code, the dataset
graph is sent to them.

How the work is split: from both ends. An epoch's files are a list; the
workers take them from the front (tf.data service's dynamic sharding, one
file at a time, to whichever worker asks), and the trainer's own pipeline
takes them from the back, skipping any file already delivered. The two meet
wherever their speeds put them, so the split is never a ratio fixed once
(FastFlow's): it follows each side's speed batch by batch, through a
shift in file sizes or a worker that slows down, joins or dies. Near the
meeting point both sides may extract the same file; the first copy
delivered is kept and the other dropped (counted in the report), so no
file appears twice and no file is missing.

When: the local pipeline always runs; the workers' batches are taken only
while the trainer waits (it found no batch ready within the last
`patience` batches), so a compute-bound trainer is fed by its own host and
the network stays idle (remote="always" takes them whenever they come).

Which cut: where fewer bytes are shipped, measured on the first batch:
"after_fx" (workers read the files and send features) when the features
are smaller than the files, else "before_fx" (workers read and send the
files' bytes, FX runs here). Pass cut= to choose.

A worker lost mid-epoch: tf.data service loses the files it held (dynamic
sharding is at most once) and, in TF 2.16-2.21, the job never ends unless
it comes back at the same address. Neither matters here: the epoch ends
when every file has been delivered by either side, so the local sweep
redoes whatever a lost worker held, and a job that no longer delivers is
abandoned at the epoch's end (report["remote_finished"] is then False: a
tf.data service job never tells which files a dead worker held, so they
are not listed, only never missing). With no
worker at all, the epoch runs locally.

Rows are those of local FX, bit for bit: the same ops, deterministic.
"""

import queue
import threading
import time

import numpy as np
import tensorflow as tf

from rustfx import io
from rustfx.pipeline import FilesPipeline, _nbytes

__all__ = ["offload", "Offload"]

CUTS = ("after_fx", "before_fx")
REMOTE = ("when_waiting", "always")


class Offload:
    """Iterate it for one epoch of `fx` batches (with labels if given);
    `dataset()` wraps that in a tf.data.Dataset for Keras `fit` or a
    custom loop. `report` is the running (then last) epoch's dict: files,
    local and remote (files each side delivered), dropped_duplicates,
    local_batches, remote_batches, waits (batches the trainer waited for),
    cut, seconds, remote_error, remote_finished (False: the job was
    abandoned), finished. See the module doc for the rules."""

    def __init__(self, pipe, dispatcher=None, *, labels=None, cut=None, remote="when_waiting",
                 patience=8, seed=None, queue_batches=4):
        if not isinstance(pipe, FilesPipeline):
            raise TypeError("offload takes a rustfx.pipeline.FilesPipeline "
                            "(rustfx.pipeline.from_files(paths, fx, batch_size)), "
                            f"not {type(pipe).__name__}")
        if cut is not None and cut not in CUTS:
            raise ValueError(f"cut must be one of {CUTS} or None (measured), got {cut!r}")
        if remote not in REMOTE:
            raise ValueError(f"remote must be one of {REMOTE}, got {remote!r}")
        if int(patience) < 1 or int(queue_batches) < 1:
            raise ValueError("patience and queue_batches must be >= 1")
        self.pipe = pipe
        self.paths = np.array([p.encode() if isinstance(p, str) else p for p in pipe.paths],
                              dtype=object)
        self.labels = None if labels is None else np.asarray(labels)
        if self.labels is not None and len(self.labels) != len(self.paths):
            raise ValueError(f"labels has {len(self.labels)} rows for {len(self.paths)} files")
        self._dispatcher_server = None
        if dispatcher is None:
            self._dispatcher_server = tf.data.experimental.service.DispatchServer()
            self.dispatcher = self._dispatcher_server.target
        else:
            self.dispatcher = dispatcher if "://" in dispatcher else f"grpc://{dispatcher}"
        self.remote, self.patience = remote, int(patience)
        self.queue_batches = int(queue_batches)
        self.seed, self._epoch = seed, 0
        self.cut = cut or self._measure_cut()
        self.report = None

    @property
    def dispatcher_address(self):
        """HOST:PORT for `rustfx-worker --dispatcher`."""
        return self.dispatcher.split("://", 1)[-1]

    def _measure_cut(self):
        if not len(self.paths):
            return "after_fx"
        first = self.paths[: self.pipe.batch_size].tolist()
        contents = io.read_files(tf.constant(first, tf.string), max_bytes=self.pipe.max_bytes)
        before = int(tf.reduce_sum(tf.strings.length(contents)))
        after = _nbytes(self.pipe.fx(contents))
        return "after_fx" if after < before else "before_fx"

    # -- the two sides -------------------------------------------------------

    def _remote_dataset(self, order):
        fx, max_bytes, cut = self.pipe.fx, self.pipe.max_bytes, self.cut
        paths = tf.constant(self.paths[order].tolist(), tf.string)
        ds = tf.data.Dataset.from_tensor_slices((tf.constant(order, tf.int64), paths))
        ds = ds.batch(self.pipe.batch_size)
        if cut == "after_fx":
            ds = ds.map(lambda i, p: (i, fx(io.files(p, max_bytes=max_bytes))),
                        num_parallel_calls=tf.data.AUTOTUNE)
        else:
            ds = ds.map(lambda i, p: (i, io.read_files(p, max_bytes=max_bytes)),
                        num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE).apply(tf.data.experimental.service.distribute(
            processing_mode="distributed_epoch", service=self.dispatcher))

    def _local_dataset(self, next_indices):
        fx, max_bytes = self.pipe.fx, self.pipe.max_bytes
        paths = tf.constant(self.paths.tolist(), tf.string)
        ds = tf.data.Dataset.from_generator(
            next_indices, output_signature=tf.TensorSpec([None], tf.int64))
        return ds.map(lambda i: (i, fx(io.files(tf.gather(paths, i), max_bytes=max_bytes))),
                      num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)

    # -- one epoch -----------------------------------------------------------

    def __iter__(self):
        n = len(self.paths)
        order = np.arange(n, dtype=np.int64)
        if self.seed is not None:
            np.random.default_rng([self.seed, self._epoch]).shuffle(order)
        self._epoch += 1
        delivered = np.zeros(n, bool)
        state = _EpochState(self.queue_batches)
        report = self.report = {"files": n, "local": 0, "remote": 0, "dropped_duplicates": 0,
                                "local_batches": 0, "remote_batches": 0, "waits": 0,
                                "cut": self.cut, "seconds": 0.0, "remote_error": None,
                                "remote_finished": False, "finished": False}
        batch_size = self.pipe.batch_size

        def next_indices():  # the local sweep, from the back, skipping what is done
            end = n
            while end > 0 and not state.done.is_set():
                chunk = [i for i in order[max(0, end - batch_size):end][::-1]
                         if not delivered[i]]
                end -= batch_size
                if chunk:
                    yield np.array(chunk, np.int64)

        def run(side, dataset_fn):
            try:
                for indices, rows in dataset_fn():
                    if side == "remote":
                        while self.remote == "when_waiting" and not state.done.is_set() \
                                and not state.waiting.wait(0.05):
                            pass
                        if self.cut == "before_fx":
                            rows = self.pipe.fx(rows)
                    if not state.put((side, indices, rows)):
                        return
            except Exception as error:  # noqa: BLE001 - handed to the consumer
                state.put((side, None, error))
                return
            state.put((side, None, None))

        threads = [threading.Thread(target=run, args=("local", lambda: iter(
            self._local_dataset(next_indices))), daemon=True)]
        if n:
            threads.append(threading.Thread(target=run, args=(
                "remote", lambda: iter(self._remote_dataset(order))), daemon=True))
        for t in threads:
            t.start()
        finished, start = set(), time.perf_counter()
        remaining, streak = n, 0
        try:
            while remaining > 0:
                try:
                    item = state.queue.get_nowait()
                    streak += 1
                    if streak >= self.patience:
                        state.waiting.clear()
                except queue.Empty:
                    state.waiting.set()
                    streak = 0
                    report["waits"] += 1
                    item = state.queue.get()
                side, indices, rows = item
                if indices is None:
                    finished.add(side)
                    if isinstance(rows, Exception):
                        if side == "local":
                            raise rows
                        report["remote_error"] = str(rows)
                    if "local" in finished and remaining > 0:
                        raise RuntimeError(f"offload: the local sweep ended with {remaining} "
                                           "files undelivered (a bug)")
                    continue
                indices = indices.numpy()
                fresh = ~delivered[indices]
                report["dropped_duplicates"] += int((~fresh).sum())
                if not fresh.any():
                    continue
                if not fresh.all():
                    rows = tf.nest.map_structure(
                        lambda t: tf.gather(t, np.flatnonzero(fresh)), rows)
                    indices = indices[fresh]
                delivered[indices] = True
                remaining -= len(indices)
                report[side] += len(indices)
                report[f"{side}_batches"] += 1
                report["seconds"] = time.perf_counter() - start
                if self.labels is None:
                    yield rows
                else:
                    yield rows, tf.constant(self.labels[indices])
        finally:
            state.finish()
            report["seconds"] = time.perf_counter() - start
            report["remote_finished"] = "remote" in finished
            report["finished"] = remaining == 0

    def dataset(self):
        """The epochs as a tf.data.Dataset (each iteration is one epoch),
        for Keras `fit` or a custom loop: rebatched to exactly batch_size
        rows (the last batch: the rest), so every epoch has the same
        number of batches, as `fit` expects (iterating the Offload itself
        gives the batches as delivered, some of them short)."""
        spec = self._element_spec()
        n, size = len(self.paths), self.pipe.batch_size
        return tf.data.Dataset.from_generator(lambda: iter(self), output_signature=spec) \
            .unbatch().batch(size).apply(tf.data.experimental.assert_cardinality(
                -(-n // size))).prefetch(tf.data.AUTOTUNE)

    def _element_spec(self):
        first = self.paths[: self.pipe.batch_size].tolist()
        rows = self.pipe.fx(io.files(tf.constant(first, tf.string), max_bytes=self.pipe.max_bytes))
        spec = tf.nest.map_structure(_relaxed_spec, rows)
        if self.labels is None:
            return spec
        label = tf.TensorSpec([None, *self.labels.shape[1:]], tf.as_dtype(self.labels.dtype))
        return spec, label


def _relaxed_spec(value):
    """The spec of a batch with its batch size (and ragged lengths) left open."""
    spec = tf.type_spec_from_value(value)
    if isinstance(spec, tf.TensorSpec):
        return tf.TensorSpec([None, *spec.shape[1:]], spec.dtype)
    if isinstance(spec, tf.RaggedTensorSpec):
        return tf.RaggedTensorSpec([None, *spec.shape[1:]], spec.dtype, spec.ragged_rank,
                                   spec.row_splits_dtype)
    if isinstance(spec, tf.SparseTensorSpec):
        return tf.SparseTensorSpec([None, *spec.shape[1:]], spec.dtype)
    return spec


class _EpochState:
    """What the consumer and the two producer threads share for one epoch."""

    def __init__(self, size):
        self.queue = queue.Queue(size)
        self.done = threading.Event()      # the epoch is over: producers stop
        self.waiting = threading.Event()   # the trainer waited lately: take remote batches

    def put(self, item):
        """Queues `item` unless the epoch ended first; False then."""
        while not self.done.is_set():
            try:
                self.queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False

    def finish(self):
        self.done.set()
        self.waiting.set()


def offload(pipe, dispatcher=None, **kwargs):
    """An `Offload` of `pipe` (a rustfx.pipeline.FilesPipeline) to the
    tf.data service workers of `dispatcher` ("HOST:PORT"; None starts one
    in this process, its address in `.dispatcher_address`). Keyword
    arguments: labels (one per file, yielded with each batch), cut
    ("after_fx", "before_fx" or None: measured), remote ("when_waiting" or
    "always"), patience, seed (shuffle each epoch), queue_batches."""
    return Offload(pipe, dispatcher, **kwargs)
