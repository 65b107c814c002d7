"""rustfx.offload at scale: its launchers' workers on a Ray cluster, fixed
counts against autoscaled (docs/scale.md, "At scale"; issue 52, part 5).

The cluster is ray.cluster_utils.Cluster on this machine: NODES nodes of
NODE_CPUS Ray CPUs each. Every worker is held to a fraction of a CPU
(--worker-cpu, 0.25 by default) by a cgroup v1 `cpu` quota made for its
process, and pinned to CPU 1 (the trainer and its local pipeline are on
CPU 0), so one worker is far from enough and the best worker count is
well above 1. Both need root and cgroup v1's cpu controller
(/sys/fs/cgroup/cpu); without them the bench says so and runs unheld.

For each workload (EMBER2024 vectors of PE files; hashed word 1-2-grams of
the venv's Python files) and each trainer step time (0 / 20 / 50 ms a
batch of 32, slept, as a GPU step leaves the CPU free), the trainer's
files/s on an epoch, the workers' count (mean and most) and, for the
autoscaled run, how long after the epoch began it reached its most:

  local      no offload: the pipeline as written, on CPU 0
  fixed k    rustfx.offload(pipe, workers=rustfx.workers.Ray(max_workers=k,
             min_workers=k, cpus_per_worker=1, setup=hold))
  auto       rustfx.offload(pipe, workers=rustfx.workers.Ray(
             max_workers=MAX, cpus_per_worker=1, setup=hold))

Each row is 3 epochs, each right after an epoch of the local pipeline
(this machine kind's speed moves 1.5-2x from minute to minute, so only a
pair compares): the median files/s and the median of the pairs' ratios
to local (the local row: local against local, the pairs' noise). An
offload's epochs are timed once its workers are in place (they live from
epoch to epoch, as in training): for a fixed count once they serve, for
the autoscaler after 30 s of epochs. The autoscaler's first epoch is
shown too: its ramp. Goals (issue 52): auto >= 90% of the best fixed
count's ratio to local; auto's mean count <= the best fixed count + 1, and
0 when the trainer is the bottleneck; auto reaches its count within 15 s.

    make bench-scale SCALE_PE_DIR=/data/pe    # as root: the quotas
    .venv/bin/python benches/scale.py --max-workers 4 --steps-ms 0,20 --pe-dir DIR

PE files of at least --pe-min-kb (100) from --pe-dir (tests/golden/pe by
default, whose files are small: benches/pe_from_wheels.py makes a corpus
of real ones); an epoch is those files repeated to --epoch-seconds of the
local pipeline alone.
"""

import argparse
import datetime
import functools
import os
import random
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402,F401  (before ray: one TF per process)
import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

import rustfx  # noqa: E402
from rustfx import pipeline  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stall import BATCH, ember, ngrams, pe_files, pin_threads, text_files  # noqa: E402

CGROUP = "/sys/fs/cgroup/cpu/rustfx-scale"
NODES, NODE_CPUS = 3, 2
PERIOD_US = 100_000
WARM_SECONDS = 30.0
TIMED_EPOCHS = 3
VERBOSE = False  # --verbose: each timed epoch's report
EPOCH_KEYS = ("seconds", "local", "remote", "dropped_duplicates", "waits", "stalls",
              "remote_first", "windows", "workers_mean", "remote_error")


def hold(share, cpu):
    """A worker's setup (rustfx.workers' `setup=`): this process into a
    cgroup of its own, held to `share` of a CPU, and onto CPU `cpu`. Every
    thread it has now is moved; later ones inherit both. Self-contained:
    it runs in Ray actors, pickled by value, and stall.pin_threads would
    import stall there (TensorFlow, and stall's own pin to CPU 0)."""
    if cpu is not None:
        for tid in os.listdir("/proc/self/task"):
            try:
                os.sched_setaffinity(int(tid), {cpu})
            except OSError:
                pass  # a thread that ended meanwhile
    if share is None:
        return
    group = os.path.join(CGROUP, str(os.getpid()))
    os.makedirs(group, exist_ok=True)
    with open(os.path.join(group, "cpu.cfs_period_us"), "w") as f:
        f.write(str(PERIOD_US))
    with open(os.path.join(group, "cpu.cfs_quota_us"), "w") as f:
        f.write(str(int(share * PERIOD_US)))
    with open(os.path.join(group, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))


def quotas_work():
    """Whether this process can make cgroup v1 cpu quotas (root, v1 mounted)."""
    try:
        os.makedirs(CGROUP, exist_ok=True)
        return os.access(os.path.join(CGROUP, "cgroup.procs"), os.W_OK)
    except OSError:
        return False


def remove_groups():
    """The workers' cgroups, once their processes are gone (a group with a
    process left in it cannot be removed: it is kept)."""
    if not os.path.isdir(CGROUP):
        return
    for name in os.listdir(CGROUP):
        path = os.path.join(CGROUP, name)
        if os.path.isdir(path):
            try:
                os.rmdir(path)
            except OSError:
                pass


def trained(batches, step):
    """The trainer: `step` seconds slept per batch; its files/s over the epoch."""
    files, start = 0, time.perf_counter()
    for rows in batches:
        files += pipeline.element_rows(rows)
        if step:
            time.sleep(step)
    return files / (time.perf_counter() - start)


def timed(batches, local_dataset, step):
    """TIMED_EPOCHS epochs of `batches`, each right after one of the local
    pipeline's `local_dataset` (made once, as a training loop keeps it;
    this machine kind's speed moves by 1.5-2x from minute
    to minute, so rows timed minutes apart compare nothing; a pair does):
    the median files/s, the median of the pairs' ratios to local, and the
    workers serving on average (the epochs' time-weighted means)."""
    rates, ratios, workers = [], [], []
    for _ in range(TIMED_EPOCHS):
        local = trained(local_dataset, step)
        rates.append(trained(batches, step))
        ratios.append(rates[-1] / local)
        report = getattr(batches, "report", None) or {}
        workers.append(report.get("workers_mean", 0.0))
        if VERBOSE and report:
            print(f"    epoch: local {local:,.0f}, offload {rates[-1]:,.0f} files/s; "
                  + ", ".join(f"{key} {report.get(key)}" for key in EPOCH_KEYS), flush=True)
    return (statistics.median_high(rates), statistics.median_high(ratios),
            sum(workers) / len(workers))


class Row:
    """A table row: the timed files/s, its ratio to the local pipeline (the
    median of pairs) and the workers serving on average, and from the
    first epoch's report (the ramp: `first_report`) its files/s, when it
    reached its most workers and when the workers' first batch came."""

    def __init__(self, name, timing, first=None, first_report=None):
        self.name, self.first = name, first
        self.rate, self.ratio, self.mean = timing
        self.first_report = first_report or {}
        most = self.first_report.get("workers_max", 0)
        self.reached = next((seconds for seconds, count in self.first_report.get("workers") or []
                             if count == most and most), None)
        self.remote_first = self.first_report.get("remote_first")

    def __str__(self):
        first = f"{self.first:8,.0f}" if self.first is not None else " " * 8
        reached = f"{self.reached:6.1f}" if self.reached is not None else "     -"
        remote = f"{self.remote_first:6.1f}" if self.remote_first is not None else "     -"
        return (f"  {self.name:<10} {self.rate:9,.0f} {self.ratio:7.2f}  {first}  "
                f"{self.mean:5.2f}  {reached}  {remote}")


def offloaded(name, pipe, local_dataset, step, launcher, want=None):
    """The trainer's files/s on one epoch of `launcher`'s offload, timed
    once its workers are in place: for a fixed count, once `want` serve in
    an epoch (at most WARM_SECONDS of epochs: a cold worker imports
    TensorFlow in 4-5 s on an idle CPU, 20 s or more on a busy one); for
    the autoscaler, after WARM_SECONDS of epochs (its count then is its
    own doing). The first epoch's report is kept: the autoscaler's ramp."""
    with rustfx.offload(pipe, workers=launcher) as off:
        start = time.perf_counter()
        first = trained(off, step)
        first_report = dict(off.report)
        while time.perf_counter() - start < WARM_SECONDS and (
                want is None or off.report.get("workers_max", 0) < want):
            trained(off, step)
        timing = timed(off, local_dataset, step)
        counts = off.workers_over_time
    remove_groups()
    row = Row(name, timing, first, first_report)
    # When it first served the count it held in the timed epochs (their
    # mean, rounded), from the Offload's making: its first epoch, and the
    # trainer's first wait, began at once.
    held = round(row.mean)
    row.held_at = next((t for t, c in counts if c >= held), None) if held else 0.0
    return row


def epoch_of(files, fx, seconds):
    """`files` repeated to about `seconds` of the local pipeline's epoch
    (its rate measured on a warm pass), so that every run's epoch is long
    enough for workers to start and the autoscaler to act in it."""
    probe = (files * (-(-256 // len(files))))[:max(256, len(files))]
    pipe = pipeline.from_files(probe, fx, batch_size=BATCH)
    dataset = pipe.dataset()
    trained(dataset, 0)  # traced, files read once
    rate = trained(dataset, 0)
    n = max(BATCH, int(rate * seconds))
    paths = (files * (-(-n // len(files))))[:n]
    # Sizes mixed along the list: the workers take it from the front and
    # the local sweep from the back, so a sorted list would give one side
    # the large files.
    random.Random(0).shuffle(paths)
    return paths, rate


def table(title, files, fx, steps_ms, max_workers, hold_setup, seconds, fixed=None):
    paths, rate = epoch_of(files, fx, seconds)
    print(f"\n{title}: {len(paths)} files an epoch ({len(files)} distinct; the local "
          f"pipeline alone at {rate:,.0f} files/s), batches of {BATCH}")
    for step_ms in steps_ms:
        step = step_ms / 1000
        # A trainer slower than the pipeline sets the epoch's pace: fewer
        # files, so each epoch stays about `seconds` long.
        trainer_rate = BATCH / step if step else rate
        count = max(BATCH, int(len(paths) * min(1, trainer_rate / rate)))
        pipe = pipeline.from_files(paths[:count], fx, batch_size=BATCH)
        print(f"\n step {step_ms} ms   files/s  x local  1st epoch  workers  "
              f"in the 1st epoch: most reached at (s), 1st remote batch at (s)")
        local_dataset = pipe.dataset()  # one, as a training loop keeps it
        trained(local_dataset, step)  # warm: traced
        rows = [Row("local", timed(local_dataset, local_dataset, step))]  # the pairs' noise
        print(rows[0], flush=True)
        for k in fixed or range(1, max_workers + 1):
            launcher = rustfx.workers.Ray(max_workers=k, min_workers=k, cpus_per_worker=1,
                                          setup=hold_setup)
            rows.append(offloaded(f"fixed {k}", pipe, local_dataset, step, launcher, want=k))
            print(rows[-1], flush=True)
        launcher = rustfx.workers.Ray(max_workers=max_workers, cpus_per_worker=1,
                                      setup=hold_setup)
        auto = offloaded("auto", pipe, local_dataset, step, launcher)
        print(auto, flush=True)
        best = max(rows, key=lambda r: r.ratio)
        best_count = 0 if best.name == "local" else int(best.name.split()[1])
        first, reached = auto.first_report, auto.reached
        print(f"  auto / best ({best.name}) = {auto.ratio / best.ratio:.2f} of their ratios "
              f"to local (goal >= 0.90); "
              f"auto held {auto.mean:.2f} workers on average (goal <= the best count + 1 = "
              f"{best_count + 1}); in its 1st epoch {first.get('workers_mean', 0):.2f} on "
              f"average, its most ({first.get('workers_max', 0)}) reached "
              f"{'-' if reached is None else f'{reached:.1f} s'} after the epoch began; "
              f"the count it held ({round(auto.mean)}) first served "
              f"{'-' if auto.held_at is None else f'{auto.held_at:.1f} s'} after the Offload "
              f"was made (goal <= 15 s)", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-workers", type=int, default=5)
    parser.add_argument("--steps-ms", default="0,20,50")
    parser.add_argument("--worker-cpu", type=float, default=0.25,
                        help="each worker's CPU quota, a share of one CPU")
    parser.add_argument("--pe-dir", help="PE files (default tests/golden/pe)")
    parser.add_argument("--pe-min-kb", type=int, default=100, help="PE files of at least this")
    parser.add_argument("--epoch-seconds", type=float, default=10.0,
                        help="an epoch's length for the local pipeline alone")
    parser.add_argument("--workloads", default="pe,text")
    parser.add_argument("--verbose", action="store_true", help="each timed epoch's report")
    parser.add_argument("--fixed", help="the fixed counts to run, e.g. 3 or 2,4 "
                        "(default: 1 to --max-workers)")
    args = parser.parse_args()
    global VERBOSE
    VERBOSE = args.verbose
    steps_ms = [int(s) for s in args.steps_ms.split(",")]
    fixed = [int(k) for k in args.fixed.split(",")] if args.fixed else None

    held = quotas_work()
    share = args.worker_cpu if held else None
    cpu = 1 if os.cpu_count() > 1 else None
    hold_setup = functools.partial(hold, share, cpu)
    print(f"rustfx.offload at scale, {datetime.date.today()}, {os.cpu_count()} CPUs "
          f"({_cpu_name()}); Ray cluster of {NODES} nodes x {NODE_CPUS} CPUs; each worker "
          + (f"held to {share:.0%} of CPU {cpu} (a cgroup v1 quota)" if held
             else "unheld (no cgroup v1 cpu quota: not root, or not mounted)")
          + ", the trainer on CPU 0")

    # Ray's processes on every CPU (importing stall pinned this one to CPU 0,
    # and they inherit the affinity of the process that starts them).
    os.sched_setaffinity(0, range(os.cpu_count()))
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": NODE_CPUS})
    for _ in range(NODES - 1):
        cluster.add_node(num_cpus=NODE_CPUS)
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    # The trainer and its local pipeline on CPU 0, once Ray's processes are
    # started: they inherit the affinity of the process that starts them, and
    # a worker pinned so would import TensorFlow on the trainer's CPU.
    if cpu is not None:
        pin_threads(0)
    try:
        if "pe" in args.workloads:
            pe = pe_files(args.pe_dir)
            large = [p for p in pe if os.path.getsize(p) >= args.pe_min_kb << 10]
            if not large:
                print(f"(no PE file of {args.pe_min_kb} kB or more: all sizes)")
            table("EMBER2024 vectors of PE files", large or pe, ember, steps_ms,
                  args.max_workers, hold_setup, args.epoch_seconds, fixed)
        if "text" in args.workloads:
            table("Hashed word 1-2-grams of text", text_files(100_000), ngrams, steps_ms,
                  args.max_workers, hold_setup, args.epoch_seconds, fixed)
    finally:
        ray.shutdown()
        cluster.shutdown()
        remove_groups()


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    main()
