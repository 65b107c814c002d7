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

The local sweep runs on its own and alone covers the epoch: the workers
only add. Whether their batches are taken is decided window by window
(`patience` batches): only while the trainer waits (it waited for a
batch of the last window: next() took over 50 us), and only while it
pays (windows with the workers' batches must deliver 5% more files/s than
windows without; a window now and then runs the other way to keep
measuring, less often while the choice holds).
Shipping costs the trainer's CPU too, so with a cheap FX the workers can
cost more than they save; then they are left idle (their client stops
fetching). remote="always" takes their batches whenever they come.

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
from rustfx.pipeline import NOT_INPUT_BOUND_SECONDS, FilesPipeline, _nbytes

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
        self._built = None

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
        ds = batched_source(order, self.paths[order].tolist(), self.pipe.batch_size)
        if cut == "after_fx":
            ds = ds.map(lambda i, p: (i, fx(io.files(p, max_bytes=max_bytes))),
                        num_parallel_calls=tf.data.AUTOTUNE)
        else:
            ds = ds.map(lambda i, p: (i, io.read_files(p, max_bytes=max_bytes)),
                        num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE).apply(tf.data.experimental.service.distribute(
            processing_mode="distributed_epoch", service=self.dispatcher, compression=None))

    def _datasets(self, order):
        """(local, remote) datasets of `order`; kept while the order is the
        same (no seed), so a new epoch does not trace fx again (each
        iteration of the remote one is a new tf.data service job)."""
        key = order.tobytes()
        if self._built is None or self._built[0] != key:
            self._built = (key, self._local_dataset(order), self._remote_dataset(order))
        return self._built[1:]

    def _local_dataset(self, order):
        # The local sweep: from the back, all of it if need be (it alone
        # covers the epoch); the consumer drops what the workers delivered.
        fx, max_bytes = self.pipe.fx, self.pipe.max_bytes
        paths = tf.constant(self.paths[order[::-1]].tolist(), tf.string)
        ds = tf.data.Dataset.from_tensor_slices((tf.constant(order[::-1], tf.int64), paths))
        return ds.batch(self.pipe.batch_size).map(
            lambda i, p: (i, fx(io.files(p, max_bytes=max_bytes))),
            num_parallel_calls=self.pipe.num_parallel_calls).prefetch(self.pipe.prefetch)

    # -- one epoch -----------------------------------------------------------

    def __iter__(self):
        n = len(self.paths)
        order = np.arange(n, dtype=np.int64)
        if self.seed is not None:
            np.random.default_rng([self.seed, self._epoch]).shuffle(order)
        self._epoch += 1
        delivered = np.zeros(n, bool)
        state = _EpochState(self.queue_batches)
        governor = _Governor(self.remote, self.patience)
        report = self.report = {"files": n, "local": 0, "remote": 0, "dropped_duplicates": 0,
                                "local_batches": 0, "remote_batches": 0, "waits": 0,
                                "remote_windows": 0, "windows": 0, "cut": self.cut,
                                "seconds": 0.0, "remote_error": None, "remote_finished": False,
                                "finished": False}

        def remote():  # a thread: the workers' batches, fetched only while allowed
            try:
                for indices, rows in iter(remote_dataset):
                    while not state.allowed.wait(0.05):
                        if state.done.is_set():
                            return
                    if self.cut == "before_fx":
                        rows = self.pipe.fx(rows)
                    if not state.put((indices, rows)):
                        return
                state.put((None, None))
            except Exception as error:  # noqa: BLE001 - reported, the local sweep goes on
                state.put((None, error))

        local_dataset, remote_dataset = self._datasets(order)
        local = iter(local_dataset)
        if n:
            state.allowed.set()
            threading.Thread(target=remote, daemon=True).start()
        start = time.perf_counter()
        remaining = n
        try:
            while remaining > 0:
                item, side, waited = None, "remote", False
                if state.allowed.is_set():
                    try:
                        item = state.queue.get_nowait()
                    except queue.Empty:
                        pass
                if item is None:
                    side, t0 = "local", time.perf_counter()
                    # The local sweep alone covers the epoch: it cannot end
                    # before every file has been delivered.
                    item = next(local)
                    waited = time.perf_counter() - t0 > NOT_INPUT_BOUND_SECONDS
                    report["waits"] += waited
                indices, rows = item
                if indices is None:  # the remote side ended (or failed)
                    report["remote_finished"] = rows is None
                    if isinstance(rows, Exception):
                        report["remote_error"] = str(rows)
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
                now = time.perf_counter()
                report["seconds"] = now - start
                if governor.batch(len(indices), waited, now):
                    report["windows"] += 1
                    report["remote_windows"] += governor.remote_on
                    (state.allowed.set if governor.remote_on else state.allowed.clear)()
                if self.labels is None:
                    yield rows
                else:
                    yield rows, tf.constant(self.labels[indices])
        finally:
            state.finish()
            report["seconds"] = time.perf_counter() - start
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


def batched_source(indices, paths, batch_size):
    """A dataset of (indices, paths) batches whose elements are the batches
    themselves: under dynamic sharding one split is then one batch. (Batched
    after the source, each file is a split, and each split is a request to
    the dispatcher, which runs on the trainer's CPU: at 2,000 files/s of
    text that cost the trainer half its throughput.)"""
    n = len(indices)
    splits = np.arange(0, n + batch_size, batch_size)[: -(-n // batch_size) + 1]
    splits[-1] = n
    chunk = tf.RaggedTensor.from_row_splits
    return tf.data.Dataset.from_tensor_slices((
        chunk(tf.constant(np.asarray(indices, np.int64)), splits),
        chunk(tf.constant(list(paths), tf.string), splits)))


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
    """What the consumer and the remote thread share for one epoch."""

    def __init__(self, size):
        self.queue = queue.Queue(size)
        self.done = threading.Event()     # the epoch is over: the thread stops
        self.allowed = threading.Event()  # the workers' batches are wanted now

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


class _Governor:
    """Whether the workers' batches are taken, decided window by window
    (`window` batches delivered):
      - when: only if the trainer waited for at least one batch of the
        last window (remote="always": always);
      - whether it pays: the delivered files/s of windows with the workers
        and without are compared, and the workers stay on only if their
        windows were at least GAIN times faster (Cachew's rule of thumb:
        keep a worker while it helps by 7%, here 5%). To keep measuring, a
        window now and then runs the other way: after PROBE_FIRST windows,
        then twice as long each time the probe confirms the choice (up to
        PROBE_MOST), back to PROBE_FIRST when it flips. Shipping features
        costs the trainer's CPU too: with a cheap FX it can cost more than
        it saves."""

    PROBE_FIRST, PROBE_MOST = 4, 64
    GAIN = 1.05

    def __init__(self, mode, window, now=None):
        self.mode, self.window = mode, max(1, window)
        # Off until the trainer is seen waiting (remote="always": on).
        self.remote_on = mode == "always"
        self.rates = {True: None, False: None}
        self.interval, self.until_probe = self.PROBE_FIRST, self.PROBE_FIRST
        self.probing, self.before_probe = False, True
        self._reset(time.perf_counter() if now is None else now)

    def _reset(self, now):
        self.files, self.batches, self.waited, self.since = 0, 0, 0, now

    def _choice(self):
        """On, unless windows both with and without the workers were
        measured and those with them were not GAIN times faster."""
        on, off = self.rates[True], self.rates[False]
        return on is None or off is None or on >= self.GAIN * off

    def batch(self, files, waited, now):
        """Counts a delivered batch; True when a window closed (remote_on
        may then have changed)."""
        self.files += files
        self.batches += 1
        self.waited += waited
        # Until the workers have been tried, two waits close the window:
        # an input-bound start need not wait a whole window for them.
        early = not self.remote_on and self.rates[True] is None and self.waited >= 2
        if self.batches < self.window and not early:
            return False
        seconds = now - self.since
        if seconds > 0:  # a clock that did not move says nothing
            rate = self.files / seconds
            old = self.rates[self.remote_on]
            self.rates[self.remote_on] = rate if old is None else 0.5 * (old + rate)
        waited = self.waited
        self._reset(now)
        if self.mode == "always":
            self.remote_on = True
        elif not waited:
            self.remote_on, self.probing = False, False  # the trainer never waited
        elif self.probing:  # the probe window is measured: choose again
            self.probing = False
            before, self.remote_on = self.before_probe, self._choice()
            self.interval = min(self.PROBE_MOST, self.interval * 2) \
                if self.remote_on == before else self.PROBE_FIRST
            self.until_probe = self.interval
        else:
            self.until_probe -= 1
            self.remote_on = self._choice()
            if self.until_probe <= 0:  # run the next window the other way
                self.probing, self.before_probe = True, self.remote_on
                self.remote_on = not self.remote_on
        return True


def offload(pipe, dispatcher=None, **kwargs):
    """An `Offload` of `pipe` (a rustfx.pipeline.FilesPipeline) to the
    tf.data service workers of `dispatcher` ("HOST:PORT"; None starts one
    in this process, its address in `.dispatcher_address`). Keyword
    arguments: labels (one per file, yielded with each batch), cut
    ("after_fx", "before_fx" or None: measured), remote ("when_waiting" or
    "always"), patience, seed (shuffle each epoch), queue_batches."""
    return Offload(pipe, dispatcher, **kwargs)
