"""Hits per second of a warm feature cache, through the core's C ABI
(rustfx_core.FeatureCache, no TensorFlow): 1 thread, 2 threads of one
process (a handle each: the C ABI's rule), then 2 processes, for the
content key and the stat key (docs/safety.md, "Hits scale").

Pairs two checkouts' Python packages (their _rustfx_core.so built), A B A
B, each measurement in a new process on a new warm cache:

    python benches/cache_hits.py --compare BEFORE/python AFTER/python \\
        --files /work/pe-corpus --rounds 3

Each figure is the files/s of an epoch of hits (EMBER2024 vectors,
batches of 32), best of --epochs, with the files in the page cache; and the
machine's own bound: two processes of CPU work (hashing in memory, nothing
shared) against one. A
checkout older than rustfx's BLAKE3 keys hashes with SHA-256: compare the
stat key for the lookups alone.
"""

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BATCH = 32
SPEC = {"extractor": "ember_features"}


def _files(root, limit):
    found = []
    for dirpath, _, names in os.walk(root):
        found += [os.path.join(dirpath, n) for n in names]
    found = sorted(p for p in found if os.path.isfile(p) and not os.path.islink(p))
    return found[:limit] if limit else found


def _batches(files):
    return [files[i:i + BATCH] for i in range(0, len(files), BATCH)]


def _epochs(directory, key, files, epochs, start=None):
    """Best files/s of `epochs` epochs of hits on a handle of its own; waits
    for `start` (a barrier) first."""
    import rustfx_core
    cache = rustfx_core.FeatureCache(directory, key=key)
    best = 0.0
    for _ in range(epochs):
        if start is not None:
            start.wait()
        t0 = time.perf_counter()
        for batch in _batches(files):
            cache.extract_files(SPEC, batch)
        best = max(best, len(files) / (time.perf_counter() - t0))
    return best, cache.stats()


def _process_worker(directory, key, files, epochs, start, results):
    rate, stats = _epochs(directory, key, files, epochs, start)
    results.put((rate, stats["misses"]))


def _hash_worker(seconds, start, results):
    """4 MiB hashed per second (hashlib's BLAKE2b, in memory): CPU only,
    no shared state, the same in every checkout."""
    import hashlib
    data = bytes(range(256)) * 16384
    if start is not None:
        start.wait()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        hashlib.blake2b(data).digest()
        n += 1
    results.put(n / (time.perf_counter() - t0))


def machine_bound(seconds=3.0):
    """What two processes of pure CPU work make against one on this
    machine: the most two threads of anything can give here."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    one = context.Process(target=_hash_worker, args=(seconds, None, results))
    one.start()
    alone = results.get(timeout=600)
    one.join()
    start = context.Barrier(2)
    procs = [context.Process(target=_hash_worker, args=(seconds, start, results))
             for _ in range(2)]
    for p in procs:
        p.start()
    both = sum(results.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    return both / alone


def measure(files, epochs):
    """{key: {"1 thread", "2 threads", "2 processes"}} files/s of hits."""
    import rustfx_core
    out = {}
    for key in ("content", "stat"):
        with tempfile.TemporaryDirectory() as directory:
            warm = rustfx_core.FeatureCache(directory, key=key)
            for batch in _batches(files):
                warm.extract_files(SPEC, batch)
            warm.stats()  # committed
            warm.close()
            one, stats = _epochs(directory, key, files, epochs)
            assert stats["misses"] == 0, stats
            # Two threads, each its handle, epochs in step: the files/s of
            # both together (each thread's epoch is all the files).
            start = threading.Barrier(2)
            rates = [None, None]

            def run(i):
                rates[i] = _epochs(directory, key, files, epochs, start)[0]

            threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            two_threads = 2 / (1 / rates[0] + 1 / rates[1]) * 2
            context = multiprocessing.get_context("spawn")
            start, results = context.Barrier(2), context.Queue()
            procs = [context.Process(target=_process_worker,
                                     args=(directory, key, files, epochs, start, results))
                     for _ in range(2)]
            for p in procs:
                p.start()
            got = [results.get(timeout=600) for _ in procs]
            for p in procs:
                p.join()
            assert all(misses == 0 for _, misses in got), got
            two_procs = 2 / (1 / got[0][0] + 1 / got[1][0]) * 2
            out[key] = {"1 thread": one, "2 threads": two_threads, "2 processes": two_procs}
    out["machine"] = {"2 processes of CPU work / 1": machine_bound()}
    return out


def compare(before, after, files_dir, limit, rounds, epochs):
    runs = {"before": [], "after": []}
    for r in range(rounds):
        for side, path in (("before", before), ("after", after)):
            env = {**os.environ, "PYTHONPATH": path}
            done = subprocess.run(
                [sys.executable, __file__, "--files", files_dir, "--limit", str(limit),
                 "--epochs", str(epochs)], env=env, capture_output=True, text=True, check=True)
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            runs[side].append(figures)
            print(f"round {r + 1} {side}: {json.dumps(figures)}", file=sys.stderr, flush=True)
    print(f"| key | measure | before, files/s | after, files/s | after / before |")
    print("|---|---|---:|---:|---:|")
    for key in ("content", "stat"):
        for what in ("1 thread", "2 threads", "2 processes"):
            b = statistics.median(run[key][what] for run in runs["before"])
            a = statistics.median(run[key][what] for run in runs["after"])
            print(f"| {key} | {what} | {b:,.0f} | {a:,.0f} | {a / b:.2f}x |")
        for side in ("before", "after"):
            one = statistics.median(run[key]["1 thread"] for run in runs[side])
            two = statistics.median(run[key]["2 threads"] for run in runs[side])
            procs = statistics.median(run[key]["2 processes"] for run in runs[side])
            print(f"| {key} | {side}: 1 -> 2 threads, 1 -> 2 processes | | | "
                  f"{two / one:.2f}x, {procs / one:.2f}x |")
    bound = statistics.median(run["machine"]["2 processes of CPU work / 1"]
                              for side in runs.values() for run in side)
    print(f"\nthe machine's bound: 2 processes of CPU work (hashing in memory) made "
          f"{bound:.2f}x one (median of {2 * rounds})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", default=os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests/golden/pe"))
    parser.add_argument("--limit", type=int, default=0, help="at most this many files")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                        help="two python/ directories to pair, A B A B")
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare, args.files, args.limit, args.rounds, args.epochs)
        return
    files = _files(args.files, args.limit)
    print(json.dumps(measure(files, args.epochs)))


if __name__ == "__main__":
    main()
