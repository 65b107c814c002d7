"""The trainer's stall, swept from input-bound to compute-bound
(docs/stalls.md, "Reading the profile"; issue 39, part 4).

A simulated trainer spends a fixed step time per batch of 32, sleeping (as
a GPU step leaves the CPU free). It and its local pipeline run on CPU 0
(`taskset -c 0`, and sched_setaffinity here if run directly). For each
workload the step time is swept from 0 to 4x the time the local pipeline
takes per batch, and each row gives the trainer's throughput (files/s)
and stall (share of wall time blocked in next()) from
rustfx.pipeline.profile, for:

  pipeline   the local pipeline alone, no trainer (the profile's
             "pipeline" stage, measured in the same row: the machine's
             load moves it)
  local      the pipeline as written: from_tensor_slices(paths).batch(32)
             .map(fx(rustfx.files(p))).prefetch(AUTOTUNE)
  cache      tf.data's in-memory cache(), its second epoch (the first is
             run through once, untimed)
  ceiling    FastFlow's GThp: take(1).cache().repeat(), input free

and the profile's recommendation for the local pipeline; then, with one
tf.data service worker (`python -m rustfx.service worker`, pinned to CPU 1
with taskset) and the dispatcher in this process:

  full       every batch from the worker (distribute, "distributed_epoch")
  FastFlow   FastFlow's rule applied once: offload iff ceiling / local >=
             1.3, then a fixed local share LThp / (LThp + N*RThp) (N = 1,
             RThp the worker's files/s with no trainer), the two sides
             merged by sample_from_datasets with those weights
  best split the best of the static local shares in SPLITS, same merge;
             the share chosen on one run each and then run again, the
             figure shown (the best of seven noisy runs is biased up);
             with --pairs K, K runs of it and of auto in turn, the pair
             with the median ratio shown, "auto / best" the median ratio
             (and the range)
  auto       rustfx.offload(pipe, dispatcher) as a user would call it
             (remote="when_waiting", the cut it measures): its first epoch
             at this step time ("auto, 1st epoch"), then its next (it keeps
             what it measured from epoch to epoch, as in training)

each as files/s and stall; then "auto / best" and the goals' ratios. The
epoch's file list is long enough that each measurement (at least 3 s) is
one epoch. Before each table, the machine's own bound for two CPUs: the
local pipeline alone on CPU 0 and, at the same time, in a second process
on CPU 1. After the tables, a mid-run shift: an epoch whose middle files
are 4x larger than its ends, the files/s of rustfx.offload in 2 s windows
after the last small batch against the best static split on the large
files alone.

Workloads: EMBER2024 vectors (rustfx.ember_features) of PE files
(tests/golden/pe by default, --pe-dir for a larger corpus such as
benches/pe_from_wheels.py's), and hashed word 1-2-grams (2**20 buckets,
sequence of 1,024 ids) of the venv's Python files.

    make bench-stall            # or: taskset -c 0 .venv/bin/python benches/stall.py
    .venv/bin/python benches/stall.py --steps 40 --pe-dir /work/pe-corpus
"""

import argparse
import datetime
import glob
import os
import random
import subprocess
import sys
import time

if hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 1 \
        and "--any-cpu" not in sys.argv:
    os.sched_setaffinity(0, {0})  # the trainer and its pipeline on CPU 0

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402
from rustfx import pipeline  # noqa: E402
from rustfx.offload import batched_source  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 32
SWEEP = (0, 0.25, 0.5, 1, 2, 4)  # step time, in units of the local time per batch
SPLITS = (0.2, 0.35, 0.5, 0.65, 0.8)  # static local shares tried (plus 0 and 1)
WARMUP = 2
MIN_SECONDS = 3.0
PAIRS = 1  # --pairs


def pin_threads(cpu):
    """Every thread of this process onto CPU `cpu` (TF's pools included,
    once they exist; threads started later inherit it)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), {cpu})
        except OSError:
            pass  # a thread that ended meanwhile


def pe_files(directory, count=None):
    directory = directory or os.path.join(ROOT, "tests", "golden", "pe")
    found = sorted(p for p in glob.glob(os.path.join(directory, "**", "*"), recursive=True)
                   if os.path.isfile(p) and os.path.getsize(p) > 0)
    return random.Random(0).sample(found, min(count, len(found))) if count else found


def text_files(count):
    found = sorted(p for p in glob.glob(os.path.join(sys.prefix, "lib", "python3*",
                                                     "site-packages", "**", "*.py"),
                                        recursive=True)
                   if os.path.isfile(p) and 0 < os.path.getsize(p) <= 1 << 20)
    return random.Random(0).sample(found, min(count, len(found)))


def ember(contents):
    return rustfx.ember_features(contents)


def ngrams(contents):
    return rustfx.hashed_ngrams(contents, num_buckets=1 << 20, ngram_widths=(1, 2),
                                tokenizer="word", output="sequence", max_tokens=1024,
                                pad_value=-1)


def cached_second_epoch(pipe, step, steps):
    """The profile of tf.data's cache() on its second epoch."""
    cached = pipe.dataset().cache()
    for _ in cached:  # the first epoch fills the cache
        pass
    return pipeline.profile(cached, step=step, steps=steps, ceiling_steps=3)


class Trained:
    """A simulated trainer's run: files/s and stall."""

    def __init__(self, elements, step, steps):
        samples, rows, wall, _ = pipeline._consume(elements, pipeline._step_function(step),
                                                   steps, WARMUP)
        self.files_per_second = rows / wall if wall else 0.0
        self.stall = sum(s.wait for s in samples) / wall if wall else 0.0

    def __str__(self):
        return f"{self.files_per_second:,.0f} ({self.stall:.0%})"


class Worker:
    """A tf.data service worker process on CPU 1, and the dispatcher here."""

    def __init__(self):
        self.dispatcher = tf.data.experimental.service.DispatchServer()
        address = self.dispatcher.target.split("://")[1]
        self.log = open(os.devnull, "w")
        pin = ["taskset", "-c", "1"] if os.cpu_count() > 1 else []
        self.process = subprocess.Popen(
            [*pin, sys.executable, "-m", "rustfx.service", "worker", "--dispatcher", address],
            stdout=subprocess.PIPE, stderr=self.log, text=True,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
        self.process.stdout.readline()  # "... worker started on port N ..."

    def stop(self):
        # A worker still serving an abandoned job can hang in its server's
        # stop (docs/data_service.md): SIGTERM, then SIGKILL.
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def remote(pipe, service, paths):
    # One split per batch, as rustfx.offload does (one per file would make
    # every file a request to the dispatcher, on CPU 0).
    ds = batched_source(range(len(paths)), paths, BATCH)
    fx, max_bytes = pipe.fx, pipe.max_bytes
    ds = ds.map(lambda i, p: fx(rustfx.files(p, max_bytes=max_bytes)),
                num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
    return ds.apply(tf.data.experimental.service.distribute("distributed_epoch", service,
                                                            compression=None))


def static_split(pipe, service, share):
    """A fixed local share of the batches (FastFlow's kind of split)."""
    if share >= 1:
        return pipe.dataset()
    if share <= 0:
        return remote(pipe, service, pipe.paths)
    k = int(round(share * len(pipe.paths)))
    return tf.data.Dataset.sample_from_datasets(
        [pipe.dataset(pipe.paths[:k]), remote(pipe, service, pipe.paths[k:])],
        weights=[share, 1 - share], seed=0, stop_on_empty_dataset=False)


def pipeline_alone(paths, fx, seconds):
    """Files/s of the local pipeline, looped for about `seconds`."""
    pipe = pipeline.from_files(paths, fx, batch_size=BATCH)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for batch in pipe.dataset():
            done += pipeline.element_rows(batch)
    return done / (time.perf_counter() - start)


def two_cpu_bound(workload, args):
    """The machine's bound for any split over CPUs 0 and 1: the pipeline
    alone here (CPU 0) and in a second process on CPU 1 at the same time,
    their files/s summed (on a VM whose two vCPUs share a physical core or
    its memory bandwidth, this is well under twice one)."""
    if os.cpu_count() < 2:
        return None
    command = ["taskset", "-c", "1", sys.executable, os.path.abspath(__file__), "--alone",
               workload, "--seconds", "8", *_corpus_args(args)]
    other = subprocess.Popen(command, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    time.sleep(3)  # its import and first batches
    here = pipeline_alone(*WORKLOADS[workload](args), 6)
    there = float(other.communicate()[0].strip().splitlines()[-1])
    return here, there


def _corpus_args(args):
    out = ["--text-files", str(args.text_files)]
    if args.pe_dir:
        out += ["--pe-dir", args.pe_dir]
    if args.pe_files:
        out += ["--pe-files", str(args.pe_files)]
    return out


def sweep(name, paths, fx, steps, worker, bound):
    pipe = pipeline.from_files(paths, fx, batch_size=BATCH)
    probe = pipeline.profile(pipe, step=0, steps=steps)
    per_batch = BATCH / probe.input_elements_per_second
    mean_size = probe.bytes_before_fx
    # A measurement lasts at least MIN_SECONDS (more steps where batches
    # are quick), and one epoch covers it: the paths repeated as needed.
    def steps_at(step):
        return max(steps, int(MIN_SECONDS / max(step, per_batch)))
    need = (steps_at(0) + WARMUP + 4) * BATCH
    long_paths = (paths * (need // len(paths) + 1))[:need]
    long_pipe = pipeline.from_files(long_paths, fx, batch_size=BATCH)
    service = worker.dispatcher.target
    remote_alone = Trained(remote(long_pipe, service, long_paths), 0,
                           steps_at(0)).files_per_second
    auto = rustfx.offload(long_pipe, service)
    print(f"\n### {name} (load average {os.getloadavg()[0]:.1f}): {len(paths)} files, "
          f"{mean_size / 1e3:,.1f} kB mean, "
          f"{probe.bytes_after_fx:,.0f} feature bytes per file; "
          f"local pipeline alone {probe.input_elements_per_second:,.0f} files/s "
          f"({per_batch * 1e3:.1f} ms per batch of {BATCH}), the worker alone "
          f"{remote_alone:,.0f} files/s; stages: "
          + ", ".join(f"{s.name} {s.elements_per_second:,.0f}/s" for s in probe.stages.values())
          + f"; rustfx.offload's cut: {auto.cut}")
    if bound:
        print(f"\nThe machine's bound for two CPUs: the pipeline alone on CPU 0 and CPU 1 at "
              f"once made {bound[0]:,.0f} + {bound[1]:,.0f} = {sum(bound):,.0f} files/s "
              f"({sum(bound) / probe.input_elements_per_second:.2f}x one alone).")
    print()
    print("files/s (stall)\n")
    print("| step (ms) | pipeline alone | local | cache ep. 2 | ceiling | profile says "
          "| full offload | FastFlow rule | best static split | rustfx auto, 1st epoch "
          "| rustfx auto | auto / best | auto / local |")
    print("|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for factor in SWEEP:
        step = factor * per_batch
        local = pipeline.profile(pipe, step=step, steps=steps)
        cache = cached_second_epoch(pipe, step, steps)
        rec = local.recommendation
        said = rec.action if rec.action != "offload" else f"offload {rec.workers} @ {rec.cut}"
        if rec.action == "cache" and rec.workers:
            said += f" (epoch 1: {rec.workers} worker{'s' * (rec.workers != 1)})"
        lthp, gthp = local.input_elements_per_second, local.ceiling_elements_per_second
        n = steps_at(step)
        splits = {share: Trained(static_split(long_pipe, service, share), step, n)
                  for share in (1.0, *SPLITS, 0.0)}
        best_share = max(splits, key=lambda s: splits[s].files_per_second)
        # The best of seven noisy runs is biased up (the winner's curse):
        # the share is chosen on those runs, then measured again, in turn
        # with rustfx's choice (pairs: the median of the pairs' ratios).
        first = Trained(auto, step, n)
        pairs = []
        for _ in range(PAIRS):
            pairs.append((Trained(static_split(long_pipe, service, best_share), step, n),
                          Trained(auto, step, n)))
        pairs.sort(key=lambda p: p[1].files_per_second / p[0].files_per_second)
        best, ran = pairs[len(pairs) // 2]
        ratios = [a.files_per_second / b.files_per_second for b, a in pairs]
        if gthp / max(lthp, 1e-9) >= pipeline.OFFLOAD_RATIO:
            ff_share = lthp / (lthp + 1 * remote_alone)
            fastflow = Trained(static_split(long_pipe, service, ff_share), step, n)
            ff = f"{fastflow} @ {ff_share:.2f}"
        else:
            ff = f"{splits[1.0]} (local)"
        print(f"| {step * 1e3:.1f} | {local.input_elements_per_second:,.0f} "
              f"| {local.elements_per_second:,.0f} ({local.stall:.0%}) "
              f"| {cache.elements_per_second:,.0f} ({cache.stall:.0%}) "
              f"| {gthp:,.0f} | {said} | {splits[0.0]} | {ff} "
              f"| {best} @ {best_share:.2f} (sweep: {splits[best_share].files_per_second:,.0f}) "
              f"| {first} | {ran} "
              f"| {ratios[len(ratios) // 2]:.2f}"
              + (f" ({ratios[0]:.2f}-{ratios[-1]:.2f})" if len(ratios) > 1 else "") + " "
              f"| {ran.files_per_second / splits[1.0].files_per_second:.2f} |", flush=True)
        auto_report = auto.report
    print(f"\nrustfx.offload's last epoch: {auto_report['local']} files local, "
          f"{auto_report['remote']} remote, {auto_report['dropped_duplicates']} dropped twins, "
          f"windows per local cap {auto_report['windows']}, {auto_report['stalls']} stalls")


def shift(args, worker, seconds=2.0):
    """A mid-run shift: an epoch whose middle files are 4x larger than its
    ends (workers take the front, the local sweep the back, so both meet
    the larger files mid-run), run by rustfx.offload with an input-bound
    trainer. Prints the files/s of 2 s windows after the last small batch
    against the best static split on the large files alone."""
    found = [(os.path.getsize(p), p) for p in pe_files(args.pe_dir)]
    small = [p for size, p in found if 150e3 <= size <= 300e3]
    large = [p for size, p in found if 600e3 <= size <= 1.2e6]
    if len(small) < 64 or len(large) < 64:
        print("\n(no shift measurement: the PE corpus lacks 64 files of 150-300 kB and of "
              "0.6-1.2 MB; --pe-dir a larger one)")
        return
    rng = random.Random(0)
    small, large = rng.sample(small, 64), rng.sample(large, 64)
    n_small, n_large = 2000, 1200
    smalls = [small[i % 64] for i in range(n_small)]
    larges = [large[i % 64] for i in range(n_large)]
    paths = smalls[: n_small // 2] + larges + smalls[n_small // 2:]
    is_large = np.array([False] * (n_small // 2) + [True] * n_large + [False] * (n_small // 2))
    service = worker.dispatcher.target
    large_pipe = pipeline.from_files(larges, ember, batch_size=BATCH)
    shares = {share: Trained(static_split(large_pipe, service, share), 0, 20).files_per_second
              for share in (1.0, *SPLITS, 0.0)}
    best_share = max(shares, key=shares.get)
    off = rustfx.offload(pipeline.from_files(paths, ember, batch_size=BATCH), service,
                         labels=np.arange(len(paths)))
    events, start = [], time.perf_counter()
    for _, labels in off:
        labels = labels.numpy()
        events.append((time.perf_counter() - start, len(labels), bool(is_large[labels].all())))
    last_small = max(t for t, _, big in events if not big)
    after = [(t, n) for t, n, _ in events if t > last_small]
    windows = []
    t = last_small
    while after and t + seconds <= after[-1][0]:
        windows.append(sum(n for u, n in after if t < u <= t + seconds) / seconds)
        t += seconds
    best = shares[best_share]
    first_ok = next((i for i, w in enumerate(windows) if w >= 0.95 * best), None)
    print(f"\n### A mid-run shift: EMBER2024 vectors, files 4x larger mid-epoch "
          f"({np.mean([os.path.getsize(p) for p in small]) / 1e3:,.0f} kB -> "
          f"{np.mean([os.path.getsize(p) for p in large]) / 1e3:,.0f} kB on average)\n")
    print(f"best static split on the large files: {best:,.0f} files/s at local share "
          f"{best_share:.2f} (" + ", ".join(f"{s:.2f}: {v:,.0f}" for s, v in shares.items())
          + ")")
    print(f"rustfx.offload after the last small batch ({last_small:.1f} s into the epoch), "
          f"files/s per {seconds:.0f} s window: "
          + ", ".join(f"{w:,.0f} ({w / best:.0%})" for w in windows))
    print("back within 95% of the best: " + (
        f"in the window ending {(first_ok + 1) * seconds:.0f} s after the shift"
        if first_ok is not None else "not within the epoch"))
    print(f"the epoch: {off.report['local']} files local, {off.report['remote']} remote")


def merge_cost(args, worker, share=0.5, pairs=5):
    """What rustfx.offload's merge costs: the text workload at step 0, the
    local share fixed at `share` both ways: sample_from_datasets in the
    graph, and rustfx.offload(remote=share) (its consumer in Python, the
    workers' batches through a thread), `pairs` runs of each in turn."""
    paths, fx = WORKLOADS["text"](args)
    n = int(MIN_SECONDS * 12_000 / BATCH)
    need = (n + WARMUP + 4) * BATCH
    long_paths = (paths * (need // len(paths) + 1))[:need]
    pipe = pipeline.from_files(long_paths, fx, batch_size=BATCH)
    service = worker.dispatcher.target
    off = rustfx.offload(pipe, service, remote=share)
    ratios = []
    for _ in range(pairs):
        graph = Trained(static_split(pipe, service, share), 0, n).files_per_second
        ratios.append(Trained(off, 0, n).files_per_second / graph)
    ratios.sort()
    print(f"\n### The merge's cost: text, step 0, local share {share} both ways\n")
    print(f"rustfx.offload(remote={share}) / sample_from_datasets at {share}, {pairs} pairs: "
          f"median {ratios[pairs // 2]:.2f} (" + ", ".join(f"{r:.2f}" for r in ratios) + ")")


def long_text_pipeline(paths, fx, step, per_batch, steps):
    """(pipe, n): n timed steps at `step` (at least MIN_SECONDS), and a
    pipeline whose one epoch covers them and the warm-up (paths repeated)."""
    n = max(steps, int(MIN_SECONDS / max(step, per_batch)))
    need = (n + WARMUP + 4) * BATCH
    return pipeline.from_files((paths * (need // len(paths) + 1))[:need], fx,
                               batch_size=BATCH), n


def best_static_share(pipe, service, step, n):
    """(the best local share, {share: files/s}): the static splits swept once."""
    sweep_once = {share: Trained(static_split(pipe, service, share), step, n).files_per_second
                  for share in (1.0, *SPLITS, 0.0)}
    return max(sweep_once, key=sweep_once.get), sweep_once


def caps(args, worker, factor=0.5, rounds=3):
    """Whether any fixed cap reaches the best static split where rustfx's
    choice fell short on text (step = `factor` x the local time per batch):
    the static shares swept once, then `rounds` rounds, in turn, of the best
    share, rustfx.offload(remote=cap) for each cap of the governor's line,
    and rustfx's own choice; each one's median over the rounds."""
    from rustfx.offload_governor import Governor
    paths, fx = WORKLOADS["text"](args)
    pipe = pipeline.from_files(paths, fx, batch_size=BATCH)
    per_batch = BATCH / pipeline.profile(pipe, step=0, steps=args.steps) \
        .input_elements_per_second
    step = factor * per_batch
    long_pipe, n = long_text_pipeline(paths, fx, step, per_batch, args.steps)
    service = worker.dispatcher.target
    best_share, sweep_once = best_static_share(long_pipe, service, step, n)
    fixed = {cap: rustfx.offload(long_pipe, service, remote=cap)
             for cap in Governor.ARMS[Governor.UNCAPPED:]}
    auto = rustfx.offload(long_pipe, service)
    Trained(auto, step, n)  # its first epoch: it learns
    runs = {}
    for _ in range(rounds):
        runs.setdefault("best static", []).append(
            Trained(static_split(long_pipe, service, best_share), step, n).files_per_second)
        for cap, off in fixed.items():
            runs.setdefault(f"cap {cap:.2f}", []).append(Trained(off, step, n).files_per_second)
        runs.setdefault("auto", []).append(Trained(auto, step, n).files_per_second)
    median = {k: sorted(v)[len(v) // 2] for k, v in runs.items()}
    print(f"\n### Fixed caps against the best static split: text, step {step * 1e3:.1f} ms\n")
    print(f"best static share {best_share:.2f} (sweep: " + ", ".join(
        f"{s:.2f}: {v:,.0f}" for s, v in sweep_once.items()) + f"); median of {rounds} rounds:\n")
    print("| run | files/s | / best static |")
    print("|---|---:|---:|")
    for k, v in median.items():
        print(f"| {k} | {v:,.0f} | {v / median['best static']:.2f} |")


def graph_merge(pipe, service):
    """rustfx.offload's first-come merge, in the graph, of rustfx.offload's
    own two sides: the workers' job from the front and the local sweep
    from the back, interleaved as they come (parallel interleave,
    deterministic=False), the first copy of each file kept (a scan over a
    bool per file), rebatched, the epoch ended by take(n). A measurement,
    not a product: with a worker lost mid-epoch, take(n) hangs the trainer
    (TF 2.16-2.21 cannot destroy an interleave whose tf.data service input
    waits for a dead worker; docs/stalls.md, "The merge in the graph")."""
    n = len(pipe.paths)
    remote_side, local_side = rustfx.offload(pipe, service, cut="after_fx")._datasets(
        np.arange(n, dtype=np.int64))[::-1]
    sides = tf.data.Dataset.from_tensors(remote_side).concatenate(
        tf.data.Dataset.from_tensors(local_side))
    merged = sides.interleave(lambda side: side, cycle_length=2, block_length=1,
                              num_parallel_calls=2, deterministic=False)

    def first_copy(delivered, batch):
        indices, rows = batch
        fresh = tf.logical_not(tf.gather(delivered, indices))
        delivered = tf.tensor_scatter_nd_update(delivered, indices[:, None],
                                                tf.ones_like(indices, tf.bool))
        keep = tf.where(fresh)[:, 0]
        return delivered, tf.nest.map_structure(lambda t: tf.gather(t, keep), rows)

    return merged.scan(tf.zeros([n], tf.bool), first_copy).unbatch().take(n).batch(BATCH)


def merge_in_graph(args, worker, factors=(0, 0.5, 1, 2), rounds=3):
    """The merge in the graph against the best static split and
    rustfx.offload (text): at each step time (`factors` x the local time
    per batch) the static shares swept once, then `rounds` rounds, in
    turn, of the best share, graph_merge and rustfx's choice (its first
    epoch run before, untimed); each one's median over the rounds."""
    paths, fx = WORKLOADS["text"](args)
    pipe = pipeline.from_files(paths, fx, batch_size=BATCH)
    per_batch = BATCH / pipeline.profile(pipe, step=0, steps=args.steps) \
        .input_elements_per_second
    service = worker.dispatcher.target
    print("\n### The merge in the graph: text, against the best static split\n")
    print(f"median of {rounds} rounds, files/s (/ best static)\n")
    print("| step (ms) | best static (share) | merge in the graph | rustfx auto |")
    print("|---:|---:|---:|---:|")
    for factor in factors:
        step = factor * per_batch
        long_pipe, n = long_text_pipeline(paths, fx, step, per_batch, args.steps)
        best_share, _ = best_static_share(long_pipe, service, step, n)
        auto = rustfx.offload(long_pipe, service)
        Trained(auto, step, n)  # its first epoch: it learns
        merged = graph_merge(long_pipe, service)
        runs = {"best": [], "graph": [], "auto": []}
        for _ in range(rounds):
            runs["best"].append(Trained(static_split(long_pipe, service, best_share), step, n)
                                .files_per_second)
            runs["graph"].append(Trained(merged, step, n).files_per_second)
            runs["auto"].append(Trained(auto, step, n).files_per_second)
        med = {k: sorted(v)[len(v) // 2] for k, v in runs.items()}
        print(f"| {step * 1e3:.1f} | {med['best']:,.0f} @ {best_share:.2f} "
              f"| {med['graph']:,.0f} ({med['graph'] / med['best']:.2f}) "
              f"| {med['auto']:,.0f} ({med['auto'] / med['best']:.2f}) |", flush=True)


WORKLOADS = {"pe": lambda args: (pe_files(args.pe_dir, args.pe_files), ember),
             "text": lambda args: (text_files(args.text_files), ngrams)}


def main():
    global MIN_SECONDS, PAIRS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per profile")
    parser.add_argument("--pe-dir", help="PE files (default tests/golden/pe)")
    parser.add_argument("--pe-files", type=int, help="a sample of this many PE files")
    parser.add_argument("--text-files", type=int, default=2000)
    parser.add_argument("--any-cpu", action="store_true", help="do not pin to CPU 0")
    parser.add_argument("--alone", choices=sorted(WORKLOADS),
                        help="only print the files/s of this workload's local pipeline")
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--min-seconds", type=float, default=MIN_SECONDS,
                        help="the shortest measurement (one epoch)")
    parser.add_argument("--pairs", type=int, default=1,
                        help="runs of the best static share and rustfx's choice, in turn")
    parser.add_argument("--workloads", default="pe,text",
                        help="which sweeps: pe, text (the shift runs with pe); merge: "
                             "what rustfx.offload's merge costs against the graph's; caps: "
                             "each fixed cap against the best static split (text); graph: "
                             "the merge in the graph against it and rustfx.offload (text)")
    args = parser.parse_args()
    if args.alone:
        print(pipeline_alone(*WORKLOADS[args.alone](args), args.seconds))
        return
    cpus = sorted(os.sched_getaffinity(0))
    print(f"rustfx.pipeline stall sweep, {datetime.date.today()}, TF {tf.__version__}, "
          f"CPUs {cpus} of {os.cpu_count()}, batch {BATCH}, {args.steps} steps per profile, "
          f"load average {os.getloadavg()[0]:.1f}")
    worker = Worker()
    try:
        MIN_SECONDS, PAIRS = args.min_seconds, max(1, args.pairs)
        chosen = args.workloads.split(",")
        for workload, name in (("pe", "EMBER2024 vectors of PE files"),
                               ("text", "hashed word 1-2-grams of text files")):
            if workload in chosen:
                bound = two_cpu_bound(workload, args)
                sweep(name, *WORKLOADS[workload](args), args.steps, worker, bound)
        if "pe" in chosen:
            shift(args, worker)
        if "merge" in chosen:
            merge_cost(args, worker)
        if "caps" in chosen:
            caps(args, worker)
        if "graph" in chosen:
            merge_in_graph(args, worker)
    finally:
        worker.stop()


if __name__ == "__main__":
    main()
