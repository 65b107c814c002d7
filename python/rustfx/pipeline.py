"""How long does the trainer wait for its input, and why?

`profile(dataset, step=..., steps=N)` runs a simulated trainer on a tf.data
pipeline and returns a `Profile`: the consumer's throughput, the **stall**
(the share of wall time the trainer is blocked in `next()`), per-step
samples of the wait, each stage's throughput on its own, the ceiling with
input free, the bytes per element before and after FX, and a
`Recommendation` with the figures behind it. `StallCallback` gives the same
kind of Profile from inside Keras `fit`. `Profile.to_html(path)` draws it
(inline SVG, no script, no network).

    pipe = rustfx.pipeline.from_files(paths, rustfx.ember_features, batch_size=32)
    prof = rustfx.pipeline.profile(pipe, step=0.05, steps=40)  # a 50 ms step
    print(prof)                  # figures and the recommendation
    prof.to_html("stall.html")
    model.fit(pipe.dataset(), ...)

Stages. A `tf.data.Dataset` is a graph TF can run but that is hard to take
apart again, so the profile takes the pipeline in parts when it can:
`from_files(paths, fx, batch_size)` is the rustfx pipeline
`from_tensor_slices(paths).batch(n).map(lambda p: fx(rustfx.files(p)))`,
and knowing its parts, the profile times reading alone
(`rustfx.read_files` on the same batches), FX alone (`fx` on the contents
already in memory), batching alone (the paths batched, nothing else), and
the whole pipeline with no trainer. Given a plain Dataset, the profile
measures everything but the separate stages and the bytes before FX (both
then None). Every stage is timed on the same files, page cache warm, from
its second batch on (the first pays for iterator creation).

The ceiling is FastFlow's: the same trainer fed by
`dataset.take(1).cache().repeat()`, one batch served from memory forever,
so the step rate when input costs nothing.

The recommendation (`recommend`, a pure function of the figures):
  1. "nothing" if the trainer waits less than `stall_threshold` (5%) of
     the time, or its median `next()` returns within 50 us (TF's data
     performance guide: such a pipeline is not input-bound);
  2. "cache" if the FX is deterministic (two passes over the same batch
     give the same bytes), the features of all elements fit `cache_bytes`
     (default half the available RAM) and there is more than one epoch:
     with tf.data's in-memory cache() every later epoch then runs at about
     the ceiling. On disk, a rustfx.FeatureCache (content key) runs a later
     epoch at most at its floor, reading and hashing (BLAKE3) every file:
     a FilesPipeline's profile measures that floor on its files, on this
     CPU, and the reasons quote it (stage "cache_floor");
  3. "offload" if ceiling / local >= 1.3 (FastFlow's rule), to
     N = ceil((ceiling - local) / per_worker) workers, per_worker being the
     input pipeline's own throughput with no trainer (a worker like this
     host), at the cut where the fewest bytes are shipped: "after_fx"
     (workers read and extract, ship features) when the features are smaller
     than the files, "before_fx" (workers read, ship the files' bytes, FX
     stays here) otherwise;
  4. else "nothing": the wait is real but offloading would not pay.
"""

import collections
import math
import statistics
import time

import keras
import numpy as np
import tensorflow as tf

from rustfx import io
from rustfx.files_pipeline import FilesPipeline, from_files

__all__ = ["profile", "from_files", "FilesPipeline", "Profile", "Stage", "Sample",
           "Recommendation", "recommend", "StallCallback"]

# FastFlow's cpu_bottleneck_threshold: offload only if the ceiling is at
# least this many times the local throughput.
OFFLOAD_RATIO = 1.3
# TF's data performance guide: IteratorGetNext within 50 us is not input-bound.
NOT_INPUT_BOUND_SECONDS = 50e-6
STALL_THRESHOLD = 0.05

Sample = collections.namedtuple("Sample", ["time", "wait", "step"])
Sample.__doc__ = """One trainer step: `time` (s since the first timed step
began), `wait` (s blocked for the batch) and `step` (s in the step)."""

Stage = collections.namedtuple("Stage", ["name", "elements_per_second", "elements", "seconds",
                                         "what"])
Stage.__doc__ = """A stage timed on its own: elements (files) per second over
`elements` in `seconds`; `what` says what ran."""


class Recommendation(collections.namedtuple("Recommendation",
                                            ["action", "workers", "cut", "reasons"])):
    """`action`: "nothing", "cache" or "offload"; `workers` (offload: how
    many; cache: how many the first epoch would need, else 0); `cut`
    ("after_fx" or "before_fx", None when nothing is shipped); `reasons`:
    sentences with the figures behind the choice."""

    def __str__(self):
        head = self.action
        if self.action == "offload":
            head = f"offload to {self.workers} worker{'s' * (self.workers != 1)} at cut {self.cut}"
        return head + "".join(f"\n  - {r}" for r in self.reasons)


def recommend(*, stall, median_wait, local, ceiling, per_worker=None, bytes_before_fx=None,
              bytes_after_fx=None, deterministic=None, elements=None, epochs=None,
              cache_bytes=None, stall_threshold=STALL_THRESHOLD, cache_floor=None):
    """The rule of the module doc, on figures: `stall` (share), `median_wait`
    (s), `local` and `ceiling` (consumer elements/s with the pipeline and with
    input free), `per_worker` (elements/s one worker gives; default `local`),
    bytes per element before and after FX, `deterministic`, `elements` per
    epoch, `epochs` (None: unknown, taken as more than one), `cache_bytes`
    (the budget) and `cache_floor` (elements/s of reading and hashing the
    files: the most a warm rustfx.FeatureCache epoch gives; None: not
    measured)."""
    reasons = []
    ratio = ceiling / local if local and ceiling else None
    cut = None
    if bytes_after_fx is not None:
        if bytes_before_fx is None or bytes_after_fx < bytes_before_fx:
            cut = "after_fx"
        else:
            cut = "before_fx"
    if stall < stall_threshold:
        reasons.append(f"the trainer waits {stall:.1%} of the time, below {stall_threshold:.0%}")
        return Recommendation("nothing", 0, None, reasons)
    if median_wait <= NOT_INPUT_BOUND_SECONDS:
        reasons.append(f"the median next() returns in {duration_text(median_wait)}: not "
                       f"input-bound (<= 50 us, TF's guide), though waits add up to {stall:.1%}")
        return Recommendation("nothing", 0, None, reasons)
    reasons.append(f"the trainer waits {stall:.1%} of the time, "
                   f"median next() {duration_text(median_wait)}")
    workers = 0
    if ratio is not None:
        reasons.append(f"ceiling {ceiling:,.1f} elements/s with input free, local "
                       f"{local:,.1f}: {ratio:.2f}x")
        per_worker = per_worker or local
        workers = max(1, math.ceil((ceiling - local) / per_worker))
    if cut is not None and bytes_before_fx is not None:
        shipped = "features" if cut == "after_fx" else "files"
        reasons.append(f"{bytes_before_fx:,.0f} bytes per element before FX, "
                       f"{bytes_after_fx:,.0f} after: ship {shipped}")
    total = elements * bytes_after_fx if elements and bytes_after_fx is not None else None
    fits = total is not None and cache_bytes is not None and total <= cache_bytes
    if deterministic and fits and epochs != 1:
        reasons.append(f"FX is deterministic and the features of {elements:,} elements "
                       f"({total / 1e6:,.1f} MB) fit the cache ({cache_bytes / 1e6:,.0f} MB): "
                       f"with tf.data's in-memory cache(), epochs after the first run at "
                       f"about the ceiling")
        if cache_floor:
            reasons.append(_feature_cache_speed(cache_floor, local))
        if ratio is not None and ratio >= OFFLOAD_RATIO:
            reasons.append(f"the first epoch would need {workers} worker(s) to stop waiting")
        return Recommendation("cache", workers if ratio and ratio >= OFFLOAD_RATIO else 0,
                              None, reasons)
    if not deterministic:
        reasons.append("no cache: FX not shown deterministic (two passes differ, or not checked)")
    elif not fits:
        reasons.append("no cache: the number of elements is unknown" if total is None else
                       f"no cache: {total / 1e6:,.1f} MB of features exceed the budget "
                       f"({(cache_bytes or 0) / 1e6:,.0f} MB)")
    elif epochs == 1:
        reasons.append("no cache: one epoch only")
    if deterministic and not fits and epochs != 1 and cache_floor:
        reasons.append(_feature_cache_speed(cache_floor, local))
    if ratio is not None and ratio >= OFFLOAD_RATIO:
        reasons.append(f"ceiling / local >= {OFFLOAD_RATIO} (FastFlow's rule): "
                       f"ceil(({ceiling:,.1f} - {local:,.1f}) / {per_worker:,.1f} per worker) "
                       f"= {workers}")
        return Recommendation("offload", workers, cut or "after_fx", reasons)
    reasons.append(f"ceiling / local < {OFFLOAD_RATIO} (FastFlow's rule): offloading would not pay")
    return Recommendation("nothing", 0, None, reasons)


def _feature_cache_speed(floor, local):
    """What a warm rustfx.FeatureCache epoch would give, from its measured
    floor."""
    against = f" ({floor / local:,.1f}x the pipeline's {local:,.1f})" if local else ""
    return (f"on disk, a rustfx.FeatureCache (content key) runs later epochs at most at "
            f"{floor:,.1f} elements/s on this CPU{against}: reading and hashing these files, "
            f"measured (a warm epoch reached about 80% of it in docs/feature_cache.md); "
            f"key='stat' reads no file")


def duration_text(seconds):
    return f"{seconds * 1e6:,.0f} us" if seconds < 0.01 else f"{seconds * 1e3:,.1f} ms"


def element_rows(element):
    """Elements in a batch: the leading dimension of its first tensor."""
    for leaf in tf.nest.flatten(element, expand_composites=False):
        shape = leaf.shape
        return int(shape[0]) if shape.rank else 1
    return 1


def element_bytes(element):
    """Bytes a (possibly nested, ragged or sparse) element holds."""
    total = 0
    for leaf in tf.nest.flatten(element, expand_composites=True):
        leaf = tf.convert_to_tensor(leaf)
        if leaf.dtype == tf.string:
            total += int(tf.reduce_sum(tf.strings.length(leaf)))
        else:
            total += int(tf.size(leaf)) * leaf.dtype.size
    return total


def _timed(dataset, keep=False):
    """((elements/s, elements, seconds), kept numpy batches) from the second
    batch to the last (the first pays for the iterator)."""
    it = iter(dataset)
    kept = []
    try:
        first = next(it)
    except StopIteration:
        return (0.0, 0, 0.0), kept
    if keep:
        kept.append(list(first.numpy()))
    start, elements = time.perf_counter(), 0
    for batch in it:
        elements += element_rows(batch)
        if keep:
            kept.append(list(batch.numpy()))
    seconds = time.perf_counter() - start
    if elements == 0:  # one batch only: time it whole
        start = time.perf_counter()
        elements = sum(element_rows(b) for b in dataset)
        seconds = time.perf_counter() - start
    return (elements / seconds if seconds > 0 else float("inf"), elements, seconds), kept


def time_stages(pipe, count):
    """(stages, bytes_before_fx, contents of the first batch) of `pipe`, a
    FilesPipeline: reading, FX and batching timed alone on its first
    `count` files."""
    paths = pipe.paths[:count]
    npc = pipe.num_parallel_calls
    max_bytes = pipe.max_bytes
    read, contents = _timed(pipe.batches(paths).map(
        lambda p: io.read_files(p, max_bytes=max_bytes), num_parallel_calls=npc
    ).prefetch(pipe.prefetch), keep=True)
    flat = [c for batch in contents for c in batch]
    before = sum(len(c) for c in flat) / max(1, len(flat))
    in_memory = tf.data.Dataset.from_tensor_slices(tf.constant(flat, tf.string)).batch(
        pipe.batch_size).map(pipe.fx, num_parallel_calls=npc).prefetch(pipe.prefetch)
    fx, _ = _timed(in_memory)
    batching, _ = _timed(pipe.batches(paths))
    whole, _ = _timed(pipe.dataset(paths))
    floor, _ = _timed(pipe.batches(paths).map(
        lambda p: io.content_key(io.read_files(p, max_bytes=max_bytes)),
        num_parallel_calls=npc).prefetch(pipe.prefetch))
    return ([Stage("read", *read, "rustfx.read_files on batches of paths"),
             Stage("fx", *fx, "fx on the contents, in memory"),
             Stage("batch", *batching, "from_tensor_slices(paths).batch(n) alone"),
             Stage("pipeline", *whole, "the whole pipeline, no trainer"),
             Stage("cache_floor", *floor, "read and hash (rustfx.content_key): the most "
                   "a warm rustfx.FeatureCache epoch gives")],
            before, contents[0] if contents else [])


def _step_function(step):
    if callable(step):
        return step
    seconds = float(step)
    if seconds < 0:
        raise ValueError(f"step must be a callable or seconds >= 0, got {step}")
    return lambda element: time.sleep(seconds) if seconds else None


def _consume(dataset, step, steps, warmup):
    """Runs the trainer: per step, the wait in next() and the step's time.
    A dataset that ends is restarted (the new iterator counts as wait)."""
    it = iter(dataset)
    samples, rows, first = [], 0, None
    origin = None
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        try:
            element = next(it)
        except StopIteration:
            it = iter(dataset)
            element = next(it)
        t1 = time.perf_counter()
        step(element)
        t2 = time.perf_counter()
        if first is None:
            first = element
        if i >= warmup:
            origin = t0 if origin is None else origin
            samples.append(Sample(t0 - origin, t1 - t0, t2 - t1))
            rows += element_rows(element)
    wall = time.perf_counter() - origin if origin is not None else 0.0
    return samples, rows, wall, first


def _available_memory():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _same(a, b):
    fa, fb = (tf.nest.flatten(x, expand_composites=True) for x in (a, b))
    return len(fa) == len(fb) and all(
        np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(fa, fb))


class Profile:
    """What `profile` or `StallCallback` measured. Rates are per second.

    Attributes:
      elements_per_second, batches_per_second: the consumer's throughput.
      stall: share of wall time the trainer waited in next(); wait_seconds,
        wall_seconds; median_wait (s); samples: a Sample per timed step.
      stages: {name: Stage} timed alone (empty when not known).
      ceiling_elements_per_second, ceiling_batches_per_second: the trainer
        with input free (take(1).cache().repeat()); for StallCallback,
        estimated as 1 / mean step time.
      input_elements_per_second: the pipeline alone, no trainer (or None).
      bytes_before_fx, bytes_after_fx: per element (None when not known).
      deterministic: two passes over the same batch gave the same bytes
        (None: not checked). elements: per epoch (None: unknown).
      recommendation: a Recommendation.
    """

    def __init__(self, samples, rows, wall, *, ceiling_batches=None, ceiling_rows=None,
                 stages=(), bytes_before_fx=None, bytes_after_fx=None, deterministic=None,
                 elements=None, epochs=None, cache_bytes=None, step=None,
                 stall_threshold=STALL_THRESHOLD, source="profile"):
        self.samples, self.source, self.step = list(samples), source, step
        self.wall_seconds = wall
        self.wait_seconds = sum(s.wait for s in self.samples)
        self.stall = self.wait_seconds / wall if wall > 0 else 0.0
        self.median_wait = statistics.median(s.wait for s in self.samples) if self.samples else 0.0
        self.batches_per_second = len(self.samples) / wall if wall > 0 else 0.0
        self.elements_per_second = rows / wall if wall > 0 else 0.0
        self.batch_size = rows / len(self.samples) if self.samples else 0
        self.ceiling_batches_per_second = ceiling_batches
        self.ceiling_elements_per_second = ceiling_rows
        self.stages = {s.name: s for s in stages}
        pipeline = self.stages.get("pipeline")
        self.input_elements_per_second = pipeline.elements_per_second if pipeline else None
        self.bytes_before_fx, self.bytes_after_fx = bytes_before_fx, bytes_after_fx
        self.deterministic, self.elements, self.epochs = deterministic, elements, epochs
        self.cache_bytes = cache_bytes
        self.recommendation = recommend(
            stall=self.stall, median_wait=self.median_wait, local=self.elements_per_second,
            ceiling=ceiling_rows, per_worker=self.input_elements_per_second,
            bytes_before_fx=bytes_before_fx, bytes_after_fx=bytes_after_fx,
            deterministic=deterministic, elements=elements, epochs=epochs,
            cache_bytes=cache_bytes, stall_threshold=stall_threshold,
            cache_floor=getattr(self.stages.get("cache_floor"), "elements_per_second", None))

    def to_dict(self):
        """The figures as plain data (JSON-able), samples included."""
        return dict(
            source=self.source, step=self.step if not callable(self.step) else "callable",
            elements_per_second=self.elements_per_second,
            batches_per_second=self.batches_per_second, batch_size=self.batch_size,
            stall=self.stall, wait_seconds=self.wait_seconds, wall_seconds=self.wall_seconds,
            median_wait=self.median_wait,
            ceiling_elements_per_second=self.ceiling_elements_per_second,
            ceiling_batches_per_second=self.ceiling_batches_per_second,
            input_elements_per_second=self.input_elements_per_second,
            stages={k: s._asdict() for k, s in self.stages.items()},
            bytes_before_fx=self.bytes_before_fx, bytes_after_fx=self.bytes_after_fx,
            deterministic=self.deterministic, elements=self.elements,
            recommendation=dict(self.recommendation._asdict()),
            samples=[s._asdict() for s in self.samples])

    def __str__(self):
        lines = [f"consumer: {self.elements_per_second:,.1f} elements/s, "
                 f"{self.batches_per_second:,.2f} batches/s ({len(self.samples)} steps)",
                 f"stall: {self.stall:.1%} of {self.wall_seconds:.2f} s waiting, "
                 f"median next() {duration_text(self.median_wait)}"]
        if self.ceiling_elements_per_second is not None:
            lines.append(f"ceiling (input free): {self.ceiling_elements_per_second:,.1f} "
                         f"elements/s, {self.ceiling_batches_per_second:,.2f} batches/s")
        for s in self.stages.values():
            lines.append(f"stage {s.name}: {s.elements_per_second:,.1f} elements/s ({s.what})")
        if self.bytes_after_fx is not None:
            before = "?" if self.bytes_before_fx is None else f"{self.bytes_before_fx:,.0f}"
            lines.append(f"bytes per element: {before} before FX, {self.bytes_after_fx:,.0f} after")
        lines.append(f"recommendation: {self.recommendation}")
        return "\n".join(lines)

    def to_html(self, path, workers=None):
        """Writes a self-contained HTML page (inline SVG, no script, no
        network): the wait and step time of every step over time, the
        rolling stall, and the stages' throughputs against the consumer's
        and the ceiling; with `workers` (a rustfx.offload report whose
        workers were started by rustfx.workers), their count over time."""
        from rustfx import stall_picture  # the picture's code, loaded when drawn
        with open(path, "w", encoding="utf-8") as f:
            f.write(stall_picture.page(self, workers))
        return path


def profile(dataset, step=0.0, steps=50, *, warmup=2, ceiling_steps=None, epochs=None,
            cache_bytes=None, stall_threshold=STALL_THRESHOLD):
    """Profiles a trainer fed by `dataset` (a tf.data.Dataset of batches, or
    a FilesPipeline from `from_files`, whose stages are then timed alone).

    Args:
      step: the train step, a callable taking one element, or a number of
        seconds that stands in for one (spent in time.sleep, as a GPU step
        leaves the CPU free).
      steps: timed steps, after `warmup` untimed ones. A dataset that ends
        is restarted. A FilesPipeline's stages are timed on the files of
        the first warmup + steps batches.
      ceiling_steps: steps timed on take(1).cache().repeat() (default
        min(steps, 20), at least 3).
      epochs: how many epochs the training runs (None: unknown, more than
        one); cache is recommended only for more than one.
      cache_bytes: the cache's budget (default half of MemAvailable).
      stall_threshold: below it, "nothing" (default 5%).

    Returns:
      A Profile; str() of it is a report, .to_html(path) a picture, and
      .recommendation follows the rule of the module doc.
    """
    step_fn = _step_function(step)
    parts = dataset if isinstance(dataset, FilesPipeline) else None
    ds = parts.dataset() if parts else dataset
    if not isinstance(ds, tf.data.Dataset):
        raise TypeError(f"profile takes a tf.data.Dataset or a FilesPipeline, got {type(dataset)}")
    samples, rows, wall, first = _consume(ds, step_fn, steps, warmup)
    ceiling_steps = ceiling_steps or max(3, min(steps, 20))
    # Two untimed steps: the second closes the cache's first epoch, which
    # stops the pipeline behind take(1) (waiting for its work in flight).
    c_samples, c_rows, c_wall, _ = _consume(ds.take(1).cache().repeat(), step_fn,
                                            ceiling_steps, 2)
    ceiling_batches = len(c_samples) / c_wall if c_wall > 0 else float("inf")
    ceiling_rows = c_rows / c_wall if c_wall > 0 else float("inf")
    bytes_after = element_bytes(first) / max(1, element_rows(first))
    stages, before = (), None
    if parts:
        stages, before, contents = time_stages(parts, (warmup + steps) * parts.batch_size)
        elements = len(parts.paths)
        batch = tf.constant(contents, tf.string)
        deterministic = _same(parts.fx(batch), parts.fx(batch))
    else:
        batches = int(ds.cardinality())
        elements = batches * element_rows(first) if batches > 0 else None
        a, b = (next(iter(ds)) for _ in range(2))
        deterministic = _same(a, b)
    if cache_bytes is None:
        available = _available_memory()
        cache_bytes = available // 2 if available else None
    return Profile(samples, rows, wall, ceiling_batches=ceiling_batches,
                   ceiling_rows=ceiling_rows, stages=stages, bytes_before_fx=before,
                   bytes_after_fx=bytes_after, deterministic=deterministic, elements=elements,
                   epochs=epochs, cache_bytes=cache_bytes, step=step,
                   stall_threshold=stall_threshold)


def _graph_nbytes(element):
    """In a graph: the bytes of an element (as element_bytes), and its rows."""
    leaves = tf.nest.flatten(element, expand_composites=True)
    total = tf.constant(0, tf.int64)
    for leaf in leaves:
        if leaf.dtype == tf.string:
            total += tf.reduce_sum(tf.cast(tf.strings.length(leaf), tf.int64))
        else:
            total += tf.size(leaf, out_type=tf.int64) * leaf.dtype.size
    first = tf.nest.flatten(element)[0]
    rows = tf.shape(first, out_type=tf.int64)[0] if first.shape.rank else tf.constant(1, tf.int64)
    return total, rows


class StallCallback(keras.callbacks.Callback):
    """The stall of Keras `fit`, as a Profile (`callback.profile()`).

    Keras 3 fetches each batch inside its compiled train function, so the
    wait is inside the time between on_train_batch_begin and
    on_train_batch_end, where a callback cannot see it. Pass the dataset
    through `watch`, last (after prefetch): it adds a synchronous map that
    stamps, in the consumer's own next(), the time the batch became
    available. Then per step:

      wait = (begin - previous end) + max(0, stamp - begin)
      step = end - max(begin, stamp)

    Without `watch`, only the gap between steps counts as wait (which is
    all of it in a custom loop that calls the callbacks around next()).

        stall = rustfx.pipeline.StallCallback()
        model.fit(stall.watch(ds), epochs=2, callbacks=[stall])
        print(stall.profile())

    The ceiling is estimated as 1 / mean step time (no second run), and the
    stages are not timed (use `profile` on a FilesPipeline for them).
    """

    def __init__(self, *, warmup=2, epochs=None, cache_bytes=None,
                 stall_threshold=STALL_THRESHOLD):
        super().__init__()
        self.warmup, self.epochs, self.cache_bytes = warmup, epochs, cache_bytes
        self.stall_threshold = stall_threshold
        self._stamps = collections.deque(maxlen=1024)
        self._samples, self._rows, self._seen = [], [], 0
        self._begin = self._end = self._origin = None
        self._bytes = None
        self._cardinality = None

    def watch(self, dataset):
        """`dataset` with a synchronous stamp of each batch's arrival (same
        elements, same structure). Put it last, after prefetch."""
        batches = int(dataset.cardinality())
        self._cardinality = batches if batches > 0 else None

        def stamp(nbytes, rows):
            self._stamps.append((time.perf_counter(), int(nbytes), int(rows)))
            return 0

        def stamped(*element):
            element = element[0] if len(element) == 1 else element
            nbytes, rows = _graph_nbytes(element)
            done = tf.py_function(stamp, [nbytes, rows], tf.int32)
            with tf.control_dependencies([done]):
                return tf.nest.map_structure(tf.identity, element, expand_composites=True)

        return dataset.map(stamped)

    def on_train_batch_begin(self, batch, logs=None):
        self._begin = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        end = time.perf_counter()
        begin = self._begin
        gap = begin - self._end if self._end is not None else 0.0
        ready, rows = begin, None
        while self._stamps and self._stamps[0][0] <= end:
            t, nbytes, rows = self._stamps.popleft()
            ready = max(begin, t)
            self._bytes = nbytes / max(1, rows)
        self._end = end
        self._seen += 1
        if self._seen <= self.warmup:
            return
        if self._origin is None:
            self._origin = begin - gap
        self._samples.append(Sample(begin - gap - self._origin, gap + (ready - begin),
                                    end - ready))
        self._rows.append(rows)

    def on_epoch_begin(self, epoch, logs=None):
        self._end = None  # the time between epochs (validation, saving) is not input wait

    def profile(self):
        """The Profile of the steps seen so far (after `warmup`)."""
        samples = self._samples
        wall = sum(s.wait + s.step for s in samples)
        known = [r for r in self._rows if r]
        per_batch = statistics.mean(known) if known else 1
        rows = per_batch * len(samples)
        mean_step = statistics.mean(s.step for s in samples) if samples else 0
        ceiling_batches = 1 / mean_step if mean_step > 0 else None
        return Profile(samples, rows, wall, ceiling_batches=ceiling_batches,
                       ceiling_rows=ceiling_batches * per_batch if ceiling_batches else None,
                       bytes_after_fx=self._bytes, deterministic=None,
                       elements=self._cardinality * per_batch if self._cardinality else None,
                       epochs=self.epochs, cache_bytes=self.cache_bytes,
                       stall_threshold=self.stall_threshold, source="StallCallback")
