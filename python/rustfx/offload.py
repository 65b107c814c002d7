"""FX on tf.data service workers, by itself, on stock TensorFlow
(docs/stalls.md, "Offloading").

    pipe = rustfx.pipeline.from_files(paths, rustfx.ember_features, batch_size=32)
    off = rustfx.offload(pipe, dispatcher="trainer-host:5050", labels=labels)
    model.fit(off.dataset(), epochs=10)       # or: for x, y in off: ...
    print(off.report)                          # the last epoch: who did what

Workers are `rustfx-worker --dispatcher HOST:PORT` (the tf.data service
worker of `rustfx.service`): they need no training code, the dataset
graph is sent to them. Or the Offload starts, sizes and stops its own:
`workers=rustfx.workers.Local(...)` or `rustfx.workers.Ray(...)`
(rustfx.workers; the count: rustfx.offload_autoscaler).

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

The local sweep alone covers the epoch: the workers only add. Where the
trainer's batches come from is decided window by window by the governor
(rustfx.offload_governor.Governor, whose doc holds its rules): its arms
run from the local sweep alone, through a cap on the local sweep's share
of the batches, to the local sweep paused, and it climbs between them on
the measured files/s; `remote=` fixes its choice ("always": cap 1,
"only": cap 0, or a number from 0 to 1). If the workers stop delivering
while the local side waits for them, it resumes after 4 times their
usual time per batch (0.25-2 s; report["stalls"]).

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
worker at all, the epoch runs locally. However an epoch ends (its last
batch, an exception, or its generator closed or dropped), the thread that
reads the workers' job has its read cancelled and is joined
(report["remote_joined"]; rustfx._tf_internals.CancellableIterator says
how), and both iterators, the local sweep's and the job's, often left
mid-way, are dropped on threads that end once TF has deleted them
(_retire: TF's delete waits for its calls under way, seconds the trainer
need not wait), so nothing is left behind epoch after epoch. (A read
that outlives its cancel by JOIN_SECONDS is left with a warning; later
epochs' jobs go on beside it: _why_no_job.)
An Offload runs one epoch at a time: a second iteration while one runs
raises RuntimeError.

Rows are those of local FX, bit for bit: the same ops, deterministic.
"""

import os
import queue
import threading
import time
import warnings

import numpy as np
import tensorflow as tf

from rustfx import io
from rustfx._tf_internals import CancellableIterator, CancellationManager
from rustfx.offload_governor import Governor, check_policy, work
from rustfx.files_pipeline import FilesPipeline
from rustfx.pipeline import NOT_INPUT_BOUND_SECONDS, element_bytes
from rustfx.workers import start_workers

__all__ = ["Offload", "offload"]

CUTS = ("after_fx", "before_fx")


class Offload:
    """Iterate it for one epoch of `fx` batches (with labels if given);
    `dataset()` wraps that in a tf.data.Dataset for Keras `fit` or a
    custom loop. `report` is the running (then last) epoch's dict: files,
    local and remote (files each side delivered), dropped_duplicates,
    local_batches, remote_batches, waits (batches the trainer waited for),
    stalls (the workers stopped delivering while the local side waited
    for them), windows (how many ran each arm: "local", or the local cap
    as "1.00" ... "0.00"), local_cap (the last arm's), cut, seconds,
    remote_error, remote_first (seconds from the epoch's start to the
    workers' first batch taken, None: none), remote_finished (False: the
    job was abandoned),
    remote_joined (False: the thread reading it had not ended when the
    epoch did), finished; with workers= (rustfx.workers), also workers
    (their count over the epoch: [(seconds, count)] at each change),
    workers_mean, workers_max, workers_started, workers_replaced,
    workers_error. One epoch at a time. See the module doc for the rules."""

    def __init__(self, pipe, dispatcher=None, *, workers=None, labels=None, cut=None,
                 remote="when_waiting", patience=8, seed=None, queue_batches=4):
        if not isinstance(pipe, FilesPipeline):
            raise TypeError("offload takes a rustfx.pipeline.FilesPipeline "
                            "(rustfx.pipeline.from_files(paths, fx, batch_size)), "
                            f"not {type(pipe).__name__}")
        if cut is not None and cut not in CUTS:
            raise ValueError(f"cut must be one of {CUTS} or None (measured), got {cut!r}")
        check_policy(remote)
        if int(patience) < 1 or int(queue_batches) < 1:
            raise ValueError("patience and queue_batches must be >= 1")
        self.pipe = pipe
        self.paths = np.array([bytes(os.fsencode(p)) for p in pipe.paths],
                              dtype=object)
        self.labels = None if labels is None else np.asarray(labels)
        if self.labels is not None and len(self.labels) != len(self.paths):
            raise ValueError(f"labels has {len(self.labels)} rows for {len(self.paths)} files")
        self._dispatcher_server = self._pool = None
        if workers is not None:
            self._dispatcher_server, self._pool = start_workers(workers, dispatcher)
            self.dispatcher = self._dispatcher_server.target
        elif dispatcher is None:
            from rustfx import service  # here: it imports rustfx, which imports this
            self._dispatcher_server = service.start_dispatcher()
            self.dispatcher = self._dispatcher_server.target
        else:
            self.dispatcher = dispatcher if "://" in dispatcher else f"grpc://{dispatcher}"
        self.remote, self.patience = remote, int(patience)
        self.queue_batches = int(queue_batches)
        self.seed, self._epoch_count = seed, 0
        self._guard, self._iterating = threading.Lock(), False
        self._lingering = []  # past epochs' remote threads not ended: (thread, job made)
        # With a cache, the workers extract (and fill it where they run).
        self.cut = cut or ("after_fx" if getattr(pipe, "cache", None) else self._measure_cut())
        self.report = None
        self._built = None
        # Kept from epoch to epoch: the next starts where the last left off.
        self._governor = Governor(self.remote, self.patience)
        self._batch_seconds = None
        self._sizes = np.full(len(self.paths), -1, np.int64)  # _work's, -1: not yet

    def close(self):
        """Stops the workers this Offload started (workers=; also done at
        exit, not when it is dropped). Later epochs run locally."""
        if self._pool is not None:
            self._pool.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def workers_over_time(self):
        """[(seconds since this Offload was made, workers serving)], one
        entry per change, between epochs too (report["workers"] is one
        epoch's); None unless it started its own (workers=)."""
        if self._pool is None:
            return None
        with self._pool.lock:
            timeline = list(self._pool.timeline)
        return [(round(t - timeline[0][0], 3), c) for t, c in timeline]

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
        after = element_bytes(self.pipe.fx(contents))
        return "after_fx" if after < before else "before_fx"

    # -- the two sides -------------------------------------------------------

    def _remote_dataset(self, order):
        fx, max_bytes, cut = self.pipe.fx, self.pipe.max_bytes, self.cut
        ds = batched_source(order, self.paths[order].tolist(), self.pipe.batch_size)
        if cut == "after_fx":
            ds = ds.map(lambda i, p: (i, fx(self.pipe.files(p))),
                        num_parallel_calls=tf.data.AUTOTUNE)
        else:
            ds = ds.map(lambda i, p: (i, io.read_files(p, max_bytes=max_bytes)),
                        num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE).apply(tf.data.experimental.service.distribute(
            processing_mode="distributed_epoch", service=self.dispatcher, compression=None))

    def _why_no_job(self):
        """Why this epoch makes no job for the workers (None: it does).
        A past epoch's thread still making its job (the dispatcher does
        not answer): no second one. One whose read was cancelled but has
        not ended (TF's client waiting on a worker killed mid-task: a CI
        run under load saw one outlive 6 epochs, each then local though 2
        workers served): the next epochs' jobs go on beside it, up to
        LINGERING_MOST of them left."""
        self._lingering = [(t, made) for t, made in self._lingering if t.is_alive()]
        if not all(made for _, made in self._lingering):
            return "the dispatcher did not answer the last epoch's job"
        if len(self._lingering) >= LINGERING_MOST:
            return (f"the cancelled reads of {len(self._lingering)} past epochs' jobs have "
                    f"not ended; this epoch makes no job")
        return None

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
        fx = self.pipe.fx
        paths = tf.constant(self.paths[order[::-1]].tolist(), tf.string)
        ds = tf.data.Dataset.from_tensor_slices((tf.constant(order[::-1], tf.int64), paths))
        return ds.batch(self.pipe.batch_size).map(
            lambda i, p: (i, fx(self.pipe.files(p))),
            num_parallel_calls=self.pipe.num_parallel_calls).prefetch(self.pipe.prefetch)

    def _work(self, indices):
        """The governor's measure of a batch of these files (offload_governor.
        FILE_BYTES): each file stat'ed once, when first delivered (one that
        cannot be weighs as empty)."""
        sizes = self._sizes[indices]
        for k in np.flatnonzero(sizes < 0):
            try:
                sizes[k] = os.stat(self.paths[indices[k]]).st_size
            except OSError:
                sizes[k] = 0
        self._sizes[indices] = sizes
        return work(sizes, self.pipe.max_bytes)

    # -- one epoch -----------------------------------------------------------

    def __iter__(self):
        # One epoch at a time: two would share the governor and its
        # figures, and report would be either one's. The guard is taken
        # when the generator starts, and given back when the epoch ends
        # (its last batch, an exception, close() or garbage collection).
        with self._guard:
            if self._iterating:
                raise RuntimeError(
                    "this Offload is already being iterated (an epoch is running): "
                    "iterate it one epoch at a time, or make another Offload")
            self._iterating = token = object()

        def release():
            with self._guard:
                if self._iterating is token:
                    self._iterating = False

        try:
            yield from self._epoch(release)
        finally:
            release()

    def _epoch(self, release):
        n = len(self.paths)
        order = np.arange(n, dtype=np.int64)
        if self.seed is not None:
            np.random.default_rng([self.seed, self._epoch_count]).shuffle(order)
        self._epoch_count += 1
        delivered = np.zeros(n, bool)
        state = _EpochState(self.queue_batches, self._batch_seconds)
        governor = self._governor
        governor.new_epoch(time.perf_counter())
        report = self.report = {"files": n, "local": 0, "remote": 0, "dropped_duplicates": 0,
                                "local_batches": 0, "remote_batches": 0, "waits": 0,
                                "stalls": 0, "windows": {}, "local_cap": governor.local_cap,
                                "cut": self.cut,
                                "seconds": 0.0, "remote_error": None, "remote_finished": False,
                                "remote_joined": True, "remote_first": None,
                                "finished": False}
        pool = self._pool
        if pool is not None:
            report.update(pool.summary(time.perf_counter()))

        def remote():  # a thread: the workers' batches, fetched only while allowed
            # The job's iterator is held in a list only, and dropped on a
            # thread of its own (_retire) when this one ends: deleting it
            # waits for TF's client threads, whose retries of a lost worker
            # sleep up to 10 s between tries, and the trainer's epoch end
            # joins this thread (measured: a join of 1-10+ s was that delete).
            batches = []
            try:
                batches.append(CancellableIterator(remote_dataset, state.cancel))
                if not state.start_reading():
                    return
                while True:
                    asked = time.perf_counter()
                    indices, rows = batches[0].next() or (None, None)
                    if indices is None:
                        break
                    if self.cut == "before_fx":
                        rows = self.pipe.fx(rows)
                    state.took(time.perf_counter() - asked)
                    while not state.allowed.wait(0.05):
                        if state.done.is_set():
                            return
                    if not state.put((indices, rows)):
                        return
                state.put((None, None))
            except Exception as error:  # noqa: BLE001 - reported, the local sweep goes on
                if not state.done.is_set():  # not the epoch's end cancelling it
                    state.put((None, error))
            finally:
                _retire(batches)

        local_dataset, remote_dataset = self._datasets(order)
        local = [iter(local_dataset)]  # a list: _retire takes it out of this frame
        thread, why_not = None, self._why_no_job()
        if why_not:
            report["remote_error"], report["remote_joined"] = why_not, False
        elif n:
            state.allowed.set()  # until the first window: the workers' job starts
            thread = threading.Thread(target=remote, daemon=True, name="rustfx-offload-remote")
            thread.start()
        start = time.perf_counter()
        if pool is not None:
            pool.epoch(True)  # ended by end()
        remaining, credit = n, 0.0  # credit: local batches the cap allows now
        window_began = start  # the running governor window's start

        def ramp():
            """The running window began before the workers' first batch
            of the epoch (within RAMP_SECONDS of its start: workers that
            give nothing for longer are measured as they are)."""
            first, began = report["remote_first"], window_began - start
            return began < RAMP_SECONDS and (first is None or first > began)

        def end():
            """The epoch is over: its remote thread ends and is joined (see
            CancellableIterator; one still making its job is left to end when
            the dispatcher answers, and no other is started meanwhile)."""
            if state.done.is_set():
                return
            state.finish()
            if thread is not None:
                report["remote_joined"] = _join(thread, JOIN_SECONDS if state.reading else 1.0,
                                                warn=state.reading)
                if not report["remote_joined"]:
                    self._lingering.append((thread, state.reading))
            self._batch_seconds = state.batch_seconds
            report["seconds"] = time.perf_counter() - start
            if pool is not None:
                pool.epoch(False)
                report.update(pool.summary(start))
            report["finished"] = remaining == 0
            release()

        try:
            while remaining > 0:
                item, side, cap = None, "remote", governor.local_cap
                t0 = time.perf_counter()
                if cap is not None:
                    credit = min(credit + cap, 2.0)
                    try:
                        item = state.queue.get_nowait()
                    except queue.Empty:
                        # Over its cap, the local side waits for the workers:
                        # once their job has started (a new job takes a
                        # while), or from the start with the local sweep paused.
                        if credit < 1 and (state.started or cap == 0):
                            try:
                                item = state.queue.get(timeout=state.patience())
                            except queue.Empty:
                                report["stalls"] += 1
                                governor.stalled(time.perf_counter())
                if item is None:
                    # The local sweep alone covers the epoch: it cannot end
                    # before every file has been delivered.
                    side, item = "local", next(local[0])
                    credit = max(credit - 1, -1.0)
                wait = time.perf_counter() - t0
                waited = wait > NOT_INPUT_BOUND_SECONDS
                report["waits"] += waited
                indices, rows = item
                if side == "remote" and not state.started:
                    state.started = True
                    report["remote_first"] = time.perf_counter() - start
                if indices is None:  # the remote side ended (or failed)
                    report["remote_finished"] = rows is None
                    if isinstance(rows, Exception):
                        report["remote_error"] = str(rows)
                    governor.gone(time.perf_counter())
                    continue
                indices = indices.numpy()
                fresh = ~delivered[indices]
                report["dropped_duplicates"] += int((~fresh).sum())
                if not fresh.any():
                    continue
                if not fresh.all():
                    rows = tf.nest.map_structure(
                        lambda t, keep=np.flatnonzero(fresh): tf.gather(t, keep), rows)
                    indices = indices[fresh]
                delivered[indices] = True
                remaining -= len(indices)
                report[side] += len(indices)
                report[f"{side}_batches"] += 1
                now = time.perf_counter()
                report["seconds"] = now - start
                cap = governor.local_cap
                if governor.batch(len(indices), wait, now, ramp=ramp(),
                                  work=self._work(indices)):
                    name = Governor.name(cap)
                    report["windows"][name] = report["windows"].get(name, 0) + 1
                    report["local_cap"] = governor.local_cap
                    if pool is not None:  # the worker count, from the same window
                        pool.window(governor, idle=cap is None or state.queue.full())
                        report.update(pool.summary(start))
                    window_began = now
                    (state.allowed.clear if governor.local_cap is None else state.allowed.set)()
                if remaining == 0:
                    # Ended before the last batch is yielded, so a consumer
                    # that stops at the epoch's size (Keras fit, on
                    # dataset()) finds the thread joined and the guard free.
                    end()
                if self.labels is None:
                    yield rows
                else:
                    yield rows, tf.constant(self.labels[indices])
        finally:
            end()
            _retire(local)

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

    def __init__(self, size, batch_seconds=None):
        self.queue = queue.Queue(size)
        self.done = threading.Event()     # the epoch is over: the thread stops
        self.allowed = threading.Event()  # the workers' batches are wanted now
        self.batch_seconds = batch_seconds  # how long the workers take per batch
        self.started = False              # the workers' job has delivered
        self.cancel = CancellationManager()  # ends the thread's reads
        self.lock = threading.Lock()
        self.reading = False              # the job is made: its reads can be cancelled

    def took(self, seconds):
        """A remote batch came `seconds` after it was asked for."""
        old = self.batch_seconds
        self.batch_seconds = seconds if old is None else 0.8 * old + 0.2 * seconds

    def patience(self):
        """How long the consumer waits for the workers' batch before they
        count as stalled: 4 times their usual time per batch, 0.25-2 s."""
        if self.batch_seconds is None:
            return 2.0
        return min(2.0, max(0.25, 4 * self.batch_seconds))

    def put(self, item):
        """Queues `item` unless the epoch ended first; False then."""
        while not self.done.is_set():
            try:
                self.queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False

    def start_reading(self):
        """The job is made: True unless the epoch ended meanwhile."""
        with self.lock:
            self.reading = not self.done.is_set()
            return self.reading

    def finish(self):
        """The epoch is over: the thread's reads are cancelled. Only once
        its job is made: cancelling MakeIterator while TF's client waits
        for the dispatcher blocks the cancelling thread (measured, TF 2.21)."""
        with self.lock:
            self.done.set()
            reading = self.reading
        if reading:
            self.cancel.start_cancel()


# How long an epoch's end waits for its remote thread's read to end once
# cancelled: it ends at once (0.00-0.01 s measured under 2 busy loops, the
# job's delete being _retire's); 10 s before that delete moved off it.
JOIN_SECONDS = 3.0
# The most past epochs' threads, their reads cancelled but not ended, that
# later epochs make their jobs beside (each holds a TF client's threads).
LINGERING_MOST = 2
# The longest an epoch's ramp (its start, before the workers' first batch)
# is kept out of the governor's and the autoscaler's figures.
RAMP_SECONDS = 5.0


def _retire(holder):
    """Drops an epoch's iterator (holder[0]) on a thread of its own: its
    local sweep's or its workers' job's, each often left mid-way. TF's
    delete of an iterator waits, with the GIL released, for its calls
    under way: the local sweep's map calls and autotuning (measured 4-10 s
    at some epochs' ends with the trainer's CPU busy, 0.0-1.0 s idle), the
    job client's threads (a retry of a lost worker sleeps up to 10 s):
    time the trainer need not wait for."""
    threading.Thread(target=holder.clear, daemon=True, name="rustfx-offload-retire").start()


def _join(thread, seconds, warn):
    """Joins an epoch's remote thread; False (and a warning if `warn`) if it
    did not end within `seconds`."""
    thread.join(seconds)
    if thread.is_alive() and warn:
        warnings.warn(f"rustfx.offload: the remote thread of an epoch did not end within "
                      f"{seconds:.0f} s of the epoch's end; left running",
                      RuntimeWarning, stacklevel=3)
    return not thread.is_alive()


def offload(pipe, dispatcher=None, **kwargs):
    """An `Offload` of `pipe` (a rustfx.pipeline.FilesPipeline) to the
    tf.data service workers of `dispatcher` ("HOST:PORT"; None starts one
    in this process, its address in `.dispatcher_address`), or to workers
    it starts, sizes and stops itself: workers=rustfx.workers.Local(...) or
    rustfx.workers.Ray(...) (rustfx.workers; not with dispatcher=). Keyword
    arguments: labels (one per file, yielded with each batch), cut
    ("after_fx", "before_fx" or None: measured), remote ("when_waiting",
    "always", "only" or a local cap from 0 to 1), patience, seed (shuffle
    each epoch), queue_batches."""
    return Offload(pipe, dispatcher, **kwargs)
