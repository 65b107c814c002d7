"""A feature cache's first epoch against no cache, in alternated pairs, at
the settings users run: `rustfx.files(paths, cache=FeatureCache(new_dir))`
in `from_tensor_slices(paths).batch(32).map(fx, AUTOTUNE)`, EMBER2024
vectors (ember_features) of PE files, each pair an uncached first epoch
then a first epoch through a new cache (every file a miss), the median
ratio of the pairs (docs/feature_cache.md, "The first epoch").

This machine kind's speed drifts by up to 2x within minutes, so one pair
can read anything from 0.5 to 1.6: only the median of alternated pairs
means something. Three settings, each in a process of its own (the op's
threads are read once per process):
- the content key at the op's default threads (RUSTFX_NUM_THREADS unset:
  a thread per core), what a user gets;
- the content key with RUSTFX_NUM_THREADS=1 (benches/cache_tf.py's
  setting: tf.data's parallel calls are the only parallelism);
- the stat key at the default threads.

    .venv/bin/python benches/cache_first_epoch.py --pe-dir /work/pe-corpus
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 32
SETTINGS = [("content", None), ("content", "1"), ("stat", None)]


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def pe_files(directory, min_kb, count):
    import glob
    directory = directory or os.path.join(ROOT, "tests", "golden", "pe")
    found = sorted(p for p in glob.glob(os.path.join(directory, "**", "*"), recursive=True)
                   if os.path.isfile(p) and os.path.getsize(p) >= min_kb * 1000)
    return found[:count]


def pairs(paths, key, count):
    """`count` pairs (uncached files/s, cached files/s, uncached CPU
    seconds, cached CPU seconds), alternated, each cached epoch through a
    new cache, its rows committed (and that counted in its CPU seconds)
    before the next epoch."""
    import tensorflow as tf

    import rustfx

    def epoch(fx):
        """Files/s of an epoch, and the process's CPU time when it started
        (the pipeline made, its function traced)."""
        ds = tf.data.Dataset.from_tensor_slices(paths).batch(BATCH)
        ds = ds.map(fx, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)
        start, cpu = time.perf_counter(), time.process_time()
        for _ in ds:
            pass
        return len(paths) / (time.perf_counter() - start), cpu

    def plain(p):
        return rustfx.ember_features(rustfx.files(p))

    epoch(plain)  # the page cache warm, TF's first-call costs paid
    found = []
    with tempfile.TemporaryDirectory(prefix="rustfx-first-epoch-") as scratch:
        for i in range(count):
            uncached, cpu = epoch(plain)
            uncached_cpu = time.process_time() - cpu
            cache = rustfx.FeatureCache(os.path.join(scratch, str(i)), key=key)
            cached, cpu = epoch(lambda p, c=cache: rustfx.ember_features(rustfx.files(p, cache=c)))
            stats = cache.stats()  # the epoch's rows committed before the next epoch
            cached_cpu = time.process_time() - cpu  # the writer's commits included
            if stats["misses"] != len(paths) or stats["hits"]:
                raise SystemExit(f"a first epoch that was not all misses: {stats}")
            found.append((uncached, cached, uncached_cpu, cached_cpu))
    return found


def child(args):
    paths = pe_files(args.pe_dir, args.min_kb, args.files)
    print(json.dumps(pairs(paths, args.key, args.pairs)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pe-dir", help="PE files (default tests/golden/pe)")
    parser.add_argument("--min-kb", type=int, default=500, help="PE files of at least this")
    parser.add_argument("--files", type=int, default=240, help="at most this many PE files")
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--settings", default="content,content-1,stat",
                        help="of content, content-1 (RUSTFX_NUM_THREADS=1), stat")
    parser.add_argument("--key", help=argparse.SUPPRESS)  # a setting's own process
    args = parser.parse_args()
    if args.key:
        return child(args)
    paths = pe_files(args.pe_dir, args.min_kb, args.files)
    if not paths:
        # tests/golden/pe's files are small: make large ones with
        # benches/pe_from_wheels.py.
        print(f"(no PE file of {args.min_kb} kB or more: all sizes)")
        args.min_kb = 0
        paths = pe_files(args.pe_dir, 0, args.files)
    mean_kb = sum(os.path.getsize(p) for p in paths) / len(paths) / 1e3
    print(f"{len(paths)} PE files of at least {args.min_kb} kB ({mean_kb:,.0f} kB mean), "
          f"batches of {BATCH}, AUTOTUNE map, ember_features; {args.pairs} pairs per setting "
          f"(no cache, then a new cache); load average {load()}")
    names = {"content": SETTINGS[0], "content-1": SETTINGS[1], "stat": SETTINGS[2]}
    for name in args.settings.split(","):
        key, threads = names[name]
        env = dict(os.environ)
        env.pop("RUSTFX_NUM_THREADS", None)
        if threads:
            env["RUSTFX_NUM_THREADS"] = threads
        command = [sys.executable, os.path.abspath(__file__), "--key", key,
                   "--files", str(args.files), "--min-kb", str(args.min_kb),
                   "--pairs", str(args.pairs)] + (["--pe-dir", args.pe_dir] if args.pe_dir else [])
        out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
        found = json.loads(out.strip().splitlines()[-1])
        ratios = [cached / uncached for uncached, cached, _, _ in found]
        cpu = [cached / uncached for _, _, uncached, cached in found]
        shown = ", ".join(f"{u:.0f}/{c:.0f}={c / u:.2f}" for u, c, _, _ in found)
        print(f"{key} key, RUSTFX_NUM_THREADS={threads or 'unset'}: median "
              f"{statistics.median(ratios):.2f} of no cache; pairs (files/s no cache/cached): "
              f"{shown}; CPU seconds cached/uncached: median {statistics.median(cpu):.2f}; "
              f"load average {load()}")


if __name__ == "__main__":
    main()
