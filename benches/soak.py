"""A soak, not a test (docs/safety.md, "Soak"): the feature cache and
rustfx.offload run for a long time under faults, sampled as they go, so
"threads, memory, file descriptors and the cache's size stay flat" and
"every row exact" can be read off a table.

  --cache: 2 processes, each running rustfx.files(paths, fx,
    cache=rustfx.FeatureCache(dir, max_bytes=small)) in a tf.data map with
    num_parallel_calls=AUTOTUNE, epoch after epoch (each in a new
    shuffled order), on one cache directory whose cap is reached and
    evicting; every --kill-every seconds one of them is killed with
    SIGKILL and started again (--kill one: always process 1, so process 0
    lives the whole run; --kill alternate: each in turn). Each epoch's rows are compared with
    uncached extraction, bit for bit (np.array_equal, every row). Every
    --sample-every seconds: each process's RSS, open fds and threads
    (/proc/PID, once it has run an epoch), the directory's size on disk, the cache's entries and
    bytes, and the counters every process reported (summed over the
    killed ones too).
  --offload: --epochs epochs of rustfx.offload(from_files(paths, fx)) on
    a dispatcher started with a --work-dir and one rustfx-worker, the
    worker killed (SIGKILL) mid-epoch and a new one started every
    --worker-every epochs (the input files --offload-repeat times, a --step-ms sleep per batch
    for the training step),
    the dispatcher killed and started again once, mid-epoch, from its
    work dir (at epoch --epochs / 2). Every epoch must have every file exactly once
    (labels are the files' indices); the trainer's threads, RSS and fds
    are sampled after each epoch.

Inputs are made under --out (text files of 2-24 kB). Samples go to
--out/cache.csv and offload.csv, a summary (first, middle and last
sample, min and max) is printed and written to --out/summary.json.

    make soak SOAK_MINUTES=30                      # both parts
    .venv/bin/python benches/soak.py --cache --minutes 2
    .venv/bin/python benches/soak.py --offload --epochs 50
"""

import argparse
import csv
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
         "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi",
         "chi", "psi", "omega", "import", "return", "class", "def", "while", "for", "yield",
         "None", "True", "False", "tensor", "cache", "worker", "epoch"]
FX_BUCKETS = 1 << 12
BATCH = 16


# -- inputs and the extractor -----------------------------------------------

def make_inputs(directory, n, seed=0):
    """n text files of 2-24 kB of words, made once (the same seed: the same bytes)."""
    os.makedirs(directory, exist_ok=True)
    rng = random.Random(seed)
    paths = []
    for i in range(n):
        path = os.path.join(directory, f"doc-{i:04d}.txt")
        size = rng.randint(2_000, 24_000)
        if not os.path.exists(path) or os.path.getsize(path) < size // 2:
            words, total = [], 0
            while total < size:
                word = rng.choice(WORDS) + ("\n" if rng.random() < 0.1 else " ")
                words.append(word)
                total += len(word)
            with open(path, "w") as f:
                f.write("".join(words))
        paths.append(path)
    return paths


def fx(files):
    """A medium extractor, dense rows: word 1-2-gram counts and the byte histogram."""
    import rustfx
    return (rustfx.hashed_ngrams(files, num_buckets=FX_BUCKETS, ngram_widths=(1, 2),
                                 tokenizer="whitespace", output="counts"),
            rustfx.byte_histogram(files))


# -- /proc -------------------------------------------------------------------

def proc_figures(pid):
    """{rss_mb, fds, threads} of a live process, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024
        return {"rss_mb": round(rss, 1), "fds": len(os.listdir(f"/proc/{pid}/fd")),
                "threads": len(os.listdir(f"/proc/{pid}/task"))}
    except (OSError, AttributeError):
        return None


def disk_bytes(directory):
    total = 0
    for parent, _, names in os.walk(directory):
        for name in names:
            try:
                total += os.stat(os.path.join(parent, name)).st_blocks * 512
            except OSError:
                pass
    return total


# -- the cache soak ----------------------------------------------------------

def cache_child(args):
    """One trainer-like process: epochs until killed, each epoch's check
    and its handle's stats one JSON line on stdout."""
    import numpy as np
    import tensorflow as tf

    import rustfx

    with open(args.paths_file) as f:
        paths = f.read().splitlines()
    cache = rustfx.FeatureCache(args.cache_dir, max_bytes=args.cache_max_bytes)

    def dataset(order, cached):
        ds = tf.data.Dataset.from_tensor_slices(
            (tf.constant(order, tf.int64), tf.constant([paths[i] for i in order])))
        return ds.batch(BATCH).map(
            lambda i, p: (i, fx(rustfx.files(p, cache=cache if cached else None))),
            num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)

    def rows(ds):
        out = {}
        for indices, (counts, histogram) in ds:
            for j, i in enumerate(indices.numpy()):
                out[int(i)] = (counts[j].numpy(), histogram[j].numpy())
        return out

    expected = rows(dataset(list(range(len(paths))), cached=False))  # the oracle
    rng = np.random.default_rng([os.getpid(), args.seed])
    epoch = 0
    while True:
        order = rng.permutation(len(paths)).tolist()
        t0 = time.monotonic()
        got = rows(dataset(order, cached=True))
        exact = sum(1 for i, (c, h) in got.items()
                    if np.array_equal(c, expected[i][0]) and np.array_equal(h, expected[i][1]))
        line = {"pid": os.getpid(), "epoch": epoch, "rows": len(got), "exact": exact,
                "missing": len(paths) - len(got), "seconds": round(time.monotonic() - t0, 2),
                "stats": cache.stats()}
        print(json.dumps(line), flush=True)
        epoch += 1
        if args.epochs and epoch >= args.epochs:
            return 0


class CacheProcess:
    """One cache_child process, its JSON lines read by a thread."""

    def __init__(self, slot, args, paths_file, log_dir):
        self.slot, self.lines, self.last = slot, [], None
        with open(os.path.join(log_dir, f"cache-child-{slot}.log"), "a") as log:
            self.process = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--cache-child",
                 "--paths-file", paths_file, "--cache-dir", args.cache_dir,
                 "--cache-max-bytes", str(args.cache_max_bytes), "--seed", str(slot)],
                stdout=subprocess.PIPE, stderr=log, text=True,
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            if line.startswith("{"):
                self.last = json.loads(line)
                self.lines.append(self.last)

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.reader.join(10)


def summarize(samples, columns):
    """First, middle and last sample, min and max of each column."""
    if not samples:
        return {}
    out = {}
    for name in columns:
        values = [s[name] for s in samples if s.get(name) is not None]
        if not values:
            continue
        out[name] = {"first": values[0], "middle": values[len(values) // 2],
                     "last": values[-1], "min": min(values), "max": max(values)}
    return out


def print_table(title, summary):
    print(f"\n{title}")
    print(f"{'':>22} {'first':>12} {'middle':>12} {'last':>12} {'min':>12} {'max':>12}")
    for name, v in summary.items():
        print(f"{name:>22} " + " ".join(f"{v[k]:>12}" for k in
                                        ("first", "middle", "last", "min", "max")))


def write_csv(path, samples):
    columns = sorted({k for s in samples for k in s})
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        writer.writerows(samples)


def cache_soak(args, paths):
    import rustfx

    os.makedirs(args.cache_dir, exist_ok=True)
    paths_file = os.path.join(args.out, "cache-paths.txt")
    with open(paths_file, "w") as f:
        f.write("\n".join(paths) + "\n")
    cache = rustfx.FeatureCache(args.cache_dir, max_bytes=args.cache_max_bytes)
    slots = [CacheProcess(k, args, paths_file, args.out) for k in range(2)]
    done = []  # the processes killed, their last lines kept
    samples, start = [], time.monotonic()
    # "one": process 1 is the one killed, so process 0 lives the whole run
    # (its figures over time are one process's); "alternate": each in turn.
    next_kill, next_sample, kills = start + args.kill_every, start, 0
    victim = 1 if args.kill == "one" else 0
    end = start + args.minutes * 60

    def totals():
        lines = [p.last for p in done + slots if p.last]
        counters = {k: sum(line["stats"][k] for line in lines)
                    for k in ("hits", "misses", "corrupt", "evicted", "dropped", "errors")}
        epochs = [line for p in done + slots for line in p.lines]
        counters.update(epochs=len(epochs), rows=sum(e["rows"] for e in epochs),
                        rows_exact=sum(e["exact"] for e in epochs),
                        missing=sum(e["missing"] for e in epochs))
        return counters

    while True:
        now = time.monotonic()
        if now >= next_sample or now >= end:
            sample = {"minute": round((now - start) / 60, 2), "kills": kills,
                      "cache_disk_mb": round(disk_bytes(args.cache_dir) / 2**20, 2)}
            stats = cache.stats()
            sample.update(entries=stats["entries"], cache_mb=round(stats["bytes"] / 2**20, 2))
            sample.update(totals())
            for p in slots:  # a process's figures once it has run an epoch (warm)
                figures = proc_figures(p.process.pid) if p.lines else None
                for key, value in (figures or {}).items():
                    sample[f"p{p.slot}_{key}"] = value
                sample[f"p{p.slot}_epochs"] = len(p.lines)  # this process's, since its start
            samples.append(sample)
            print(json.dumps(sample), flush=True)
            next_sample += args.sample_every
        if now >= end:
            break
        for k, p in enumerate(slots):  # a process that died by itself: said, restarted
            if p.process.poll() is not None:
                print(f"cache process {p.slot} exited with {p.process.returncode}: restarted",
                      flush=True)
                done.append(p)
                slots[k] = CacheProcess(p.slot, args, paths_file, args.out)
        if now >= next_kill:
            p = slots[victim]
            p.kill()
            kills += 1
            done.append(p)
            slots[victim] = CacheProcess(p.slot, args, paths_file, args.out)
            next_kill += args.kill_every
            if args.kill == "alternate":
                victim = 1 - victim
        time.sleep(0.5)
    for p in slots:
        p.kill()
        done.append(p)
    # The end: one more process, one epoch, no kill: its rows are exact.
    final = CacheProcess(2, args, paths_file, args.out)
    deadline = time.monotonic() + 600
    while final.last is None and final.process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    final.kill()
    last = final.last or {}
    write_csv(os.path.join(args.out, "cache.csv"), samples)
    columns = ["minute", "kills", "p0_rss_mb", "p1_rss_mb", "p0_fds", "p1_fds", "p0_threads",
               "p1_threads", "cache_disk_mb", "cache_mb", "entries", "hits", "misses",
               "evicted", "corrupt", "dropped", "errors", "epochs", "rows", "rows_exact",
               "missing"]
    summary = summarize(samples, columns)
    print_table(f"cache soak: {len(samples)} samples, {kills} kills, "
                f"cap {args.cache_max_bytes / 2**20:.1f} MiB", summary)
    print(f"final epoch (a fresh process, no kill): {last.get('rows')} rows, "
          f"{last.get('exact')} exact, {last.get('missing')} missing")
    return {"samples": len(samples), "kills": kills, "summary": summary, "final": last}


# -- the offload soak ---------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    """A `python -m rustfx.service` process, its output in a log."""

    def __init__(self, args, log_path):
        self.log_path = log_path
        with open(log_path, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "rustfx.service", *args], stdout=log,
                stderr=subprocess.STDOUT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with open(log_path) as f:
                if "started on port" in f.read():
                    return
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"{args[0]} did not start: see {log_path}")

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def offload_soak(args, paths):
    import numpy as np

    import rustfx
    from rustfx import pipeline

    port, work_dir = free_port(), os.path.join(args.out, "dispatcher-journal")
    address = f"127.0.0.1:{port}"
    logs = os.path.join(args.out, "service-logs")
    os.makedirs(logs, exist_ok=True)
    started = {"dispatcher": 0, "worker": 0}

    def start(role):
        started[role] += 1
        log = os.path.join(logs, f"{role}-{started[role]}.log")
        if role == "dispatcher":
            return Service(["dispatcher", "--port", str(port), "--work-dir", work_dir], log)
        return Service(["worker", "--dispatcher", address, "--port", "0",
                        "--worker-address", "127.0.0.1:%port%"], log)

    dispatcher, worker = start("dispatcher"), start("worker")
    paths = paths * args.offload_repeat  # long enough epochs for the worker to deliver
    pipe = pipeline.from_files(paths, fx, batch_size=BATCH)
    off = rustfx.offload(pipe, address, labels=np.arange(len(paths)), remote="always")
    samples, me = [], os.getpid()
    try:
        for epoch in range(args.epochs):
            event = ""
            # Every --worker-every epochs the worker is killed mid-epoch (once
            # it has delivered, or at the 8th batch) and a new one started.
            kill_worker = epoch % args.worker_every == args.worker_every - 1
            mid = epoch == args.epochs // 2
            seen, t0 = np.zeros(len(paths), np.int64), time.monotonic()
            for i, (_, labels) in enumerate(off):
                np.add.at(seen, labels.numpy(), 1)
                time.sleep(args.step_ms / 1000)  # a training step
                if kill_worker and (off.report["remote"] > 0 or i == 8):
                    worker.kill()
                    worker, kill_worker = start("worker"), False
                    event += f"worker killed at batch {i} and restarted; "
                if mid and i == 2:  # the dispatcher, killed mid-epoch and started again
                    dispatcher.kill()
                    dispatcher = start("dispatcher")
                    event += "dispatcher killed and restarted from its work dir; "
            report = off.report
            sample = {"epoch": epoch, "seconds": round(time.monotonic() - t0, 2),
                      "exactly_once": int((seen == 1).all()), "missing": int((seen == 0).sum()),
                      "twice": int((seen > 1).sum()), "local": report["local"],
                      "remote": report["remote"], "remote_joined": int(report["remote_joined"]),
                      "remote_error": (report["remote_error"] or "")[:80],
                      "py_threads": threading.active_count(), "event": event.rstrip("; ")}
            sample.update(proc_figures(me))
            samples.append(sample)
            print(json.dumps(sample), flush=True)
    finally:
        worker.kill()
        dispatcher.kill()
    write_csv(os.path.join(args.out, "offload.csv"), samples)
    summary = summarize(samples, ["epoch", "threads", "py_threads", "rss_mb", "fds", "remote",
                                  "local", "exactly_once", "missing", "twice", "remote_joined"])
    print_table(f"offload soak: {len(samples)} epochs, worker restarted every "
                f"{args.worker_every}, dispatcher once", summary)
    print(f"epochs with every file exactly once: {sum(s['exactly_once'] for s in samples)} "
          f"of {len(samples)}")
    return {"epochs": len(samples), "summary": summary,
            "exactly_once_epochs": sum(s["exactly_once"] for s in samples)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", action="store_true", help="the cache soak")
    parser.add_argument("--offload", action="store_true", help="the offload soak")
    parser.add_argument("--minutes", type=float, default=30, help="the cache soak's length")
    parser.add_argument("--kill-every", type=float, default=60, help="seconds between kills")
    parser.add_argument("--kill", choices=("one", "alternate"), default="one",
                        help="which cache process is killed: always process 1 (process 0 "
                        "lives the whole run), or each in turn")
    parser.add_argument("--sample-every", type=float, default=30, help="seconds between samples")
    parser.add_argument("--epochs", type=int, default=50, help="offload epochs")
    parser.add_argument("--offload-repeat", type=int, default=4,
                        help="each offload epoch: the input files this many times")
    parser.add_argument("--step-ms", type=float, default=20,
                        help="the offload trainer's step per batch, milliseconds")
    parser.add_argument("--worker-every", type=int, default=5,
                        help="offload epochs between worker restarts")
    parser.add_argument("--files", type=int, default=400, help="input files")
    parser.add_argument("--out", default=os.path.join(ROOT, "target", "soak"))
    parser.add_argument("--cache-dir", help="default: OUT/cache (emptied first)")
    parser.add_argument("--cache-max-bytes", type=int, default=4 << 20,
                        help="the cache's cap: small, so that it is reached and evicts")
    # A cache soak process (started by the soak itself).
    parser.add_argument("--cache-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--paths-file", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cache_child:
        args.epochs = 0
        return cache_child(args)
    if not (args.cache or args.offload):
        args.cache = args.offload = True
    os.makedirs(args.out, exist_ok=True)
    paths = make_inputs(os.path.join(args.out, "inputs"), args.files)
    result = {"command": sys.argv, "cpu": cpu(), "files": len(paths),
              "input_mb": round(sum(os.path.getsize(p) for p in paths) / 2**20, 2)}
    if args.cache:
        if args.cache_dir is None:
            args.cache_dir = os.path.join(args.out, "cache")
            subprocess.run(["rm", "-rf", args.cache_dir], check=True)
        t0 = time.monotonic()
        result["cache"] = cache_soak(args, paths)
        result["cache"]["minutes"] = round((time.monotonic() - t0) / 60, 1)
    if args.offload:
        t0 = time.monotonic()
        result["offload"] = offload_soak(args, paths)
        result["offload"]["minutes"] = round((time.monotonic() - t0) / 60, 1)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(result, f, indent=1)
    return 0


def cpu():
    try:
        out = subprocess.run(["lscpu"], check=False, capture_output=True, text=True).stdout
        return re.search(r"Model name:\s*(.+)", out).group(1).strip() + f", {os.cpu_count()} CPUs"
    except (OSError, AttributeError):
        return None


if __name__ == "__main__":
    sys.exit(main())
