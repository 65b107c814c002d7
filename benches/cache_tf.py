"""The feature cache where users run it: `rustfx.files(paths, cache=...)` in
a parallel tf.data map, files/s per epoch, against extraction, the floor of
each key and tf.data's in-memory cache(), all through TensorFlow, in one
run on this machine (docs/feature_cache.md; the Rust-only
figures are benches/feature_cache.rs').

Workloads: EMBER2024 vectors (ember_features) of PE files (--pe-dir, the
files of at least --min-kb kB; default tests/golden/pe), and word 1-2-gram
ids of ~10 kB text files (the .py files of this venv of 8-12 kB). Each
pipeline: from_tensor_slices(paths).batch(32).map(fx, AUTOTUNE).prefetch,
page cache warm; each figure the median of --repeats runs of whole epochs
of at least a second (a first epoch: that epoch alone). Each op call runs
on one thread (RUSTFX_NUM_THREADS=1): tf.data's parallel map calls are the
parallelism, so "warm hits, 2 threads / 1 thread" is the map's threadpool
of 2 against 1.

    .venv/bin/python benches/cache_tf.py --pe-dir /work/pe-corpus

A first epoch at the op's default threads, in more alternated pairs, each
printed: benches/cache_first_epoch.py (make bench-cache-first-epoch).
"""

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("RUSTFX_NUM_THREADS", "1")

import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 32


def cpu():
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                  if line.startswith("model name")), "?")
    flags = next((line for line in open("/proc/cpuinfo") if line.startswith("flags")), "")
    simd = [f for f in ("sha_ni", "avx512f", "avx2") if f" {f}" in flags]
    return f"{model}, {os.cpu_count()} CPUs, {' '.join(simd) or 'no sha_ni/avx2'}"


def pe_files(directory, min_kb, count):
    directory = directory or os.path.join(ROOT, "tests", "golden", "pe")
    found = sorted(p for p in glob.glob(os.path.join(directory, "**", "*"), recursive=True)
                   if os.path.isfile(p) and os.path.getsize(p) >= min_kb * 1000)
    return found[:count]


def text_files(count):
    found = sorted(p for p in glob.glob(os.path.join(sys.prefix, "lib", "python3*",
                                                     "site-packages", "**", "*.py"),
                                        recursive=True)
                   if os.path.isfile(p) and 8000 <= os.path.getsize(p) <= 12000)
    return found[:count]


def epoch_rate(dataset, n):
    start = time.perf_counter()
    for _ in dataset:
        pass
    return n / (time.perf_counter() - start)


MIN_SECONDS = 1.0


def steady_rate(dataset, n):
    """Files/s of whole epochs run until MIN_SECONDS have passed (a short
    epoch's start costs as much as its batches)."""
    epochs, start = 0, time.perf_counter()
    while True:
        for _ in dataset:
            pass
        epochs += 1
        elapsed = time.perf_counter() - start
        if elapsed >= MIN_SECONDS:
            return n * epochs / elapsed


def median_rate(make, n, repeats):
    dataset = make()
    epoch_rate(dataset, n)  # traced, and the page cache warm
    return statistics.median(steady_rate(dataset, n) for _ in range(repeats))


def pipeline(paths, fx, threads=None, cache_after=False):
    ds = tf.data.Dataset.from_tensor_slices(paths).batch(BATCH)
    ds = ds.map(fx, num_parallel_calls=threads or tf.data.AUTOTUNE)
    if cache_after:
        ds = ds.cache()
    ds = ds.prefetch(2)
    if threads:
        options = tf.data.Options()
        options.threading.private_threadpool_size = threads
        ds = ds.with_options(options)
    return ds


#: Warm epochs hold at least this many files (the list repeated): a
#: dataset's iterator and its function's kernels are made anew each epoch,
#: which costs milliseconds whatever the epoch holds.
EPOCH_FILES = 4000
#: First epochs, cached and not, measured in turn this many times.
PAIRS = 3


def measure(name, paths, extractor, repeats, scratch):
    n = len(paths)
    mb = sum(os.path.getsize(p) for p in paths) / n / 1e3
    rows = []
    first_paths, paths = paths, paths * max(1, -(-EPOCH_FILES // n))
    tiled = len(paths)

    def row(what, rate, against):
        rows.append((what, rate, rate / against if against else None))

    extract = median_rate(lambda: pipeline(paths, lambda p: extractor(rustfx.files(p))), tiled,
                          repeats)
    row("extraction, no cache", extract, extract)
    caches = {}
    for key in ("content", "stat"):
        # A first epoch (every file a miss) against extraction's first epoch
        # of a new pipeline (both make their iterator and kernels), in
        # turn, PAIRS times, each with a new cache: the median ratio.
        ratios = []
        for pair in range(PAIRS):
            plain = epoch_rate(pipeline(first_paths, lambda p: extractor(rustfx.files(p))), n)
            cache = rustfx.FeatureCache(os.path.join(scratch, f"{name}-{key}-{pair}"), key=key)
            fx = (lambda c: lambda p: extractor(rustfx.files(p, cache=c)))(cache)
            ratios.append(epoch_rate(pipeline(first_paths, fx), n) / plain)
            cache.stats()  # the first epoch's rows committed
        caches[key] = cache
        rows.append((f"{key} key, first epoch ({n} misses) / extraction's first epoch "
                     f"(median of {PAIRS} pairs)", statistics.median(ratios), None))
        warm = median_rate(lambda: pipeline(paths, fx), tiled, repeats)
        row(f"{key} key, warm", warm, extract)
        one = median_rate(lambda: pipeline(paths, fx, threads=1), tiled, repeats)
        two = median_rate(lambda: pipeline(paths, fx, threads=2), tiled, repeats)
        rows.append((f"{key} key, warm hits: 2 threads / 1 thread", two / one, None))
    floor = median_rate(lambda: pipeline(
        paths, lambda p: rustfx.content_key(rustfx.read_files(p))), tiled, repeats)
    row("floor of the content key: read + BLAKE3 (Rustfx>ContentKey)", floor, extract)
    in_memory = pipeline(paths, lambda p: extractor(rustfx.files(p)), cache_after=True)
    epoch_rate(in_memory, tiled)  # fills tf.data's cache
    memory = statistics.median(steady_rate(in_memory, tiled) for _ in range(repeats))
    row("tf.data in-memory cache(), second epoch on", memory, extract)
    stats = caches["content"].stats()
    print(f"\n{name}: {n} files, {mb:.0f} kB mean (warm epochs: the list {tiled // n} times); "
          f"batches of {BATCH}, AUTOTUNE map; median of {repeats} runs")
    print("| epoch | files/s | vs extraction |")
    print("|---|---:|---:|")
    for what, rate, ratio in rows:
        if ratio is None:
            print(f"| {what} | {rate:.2f}x | |")
        else:
            print(f"| {what} | {rate:,.0f} | {ratio:.2f}x |")
    content = next(r for w, r, _ in rows if w == "content key, warm")
    stat = next(r for w, r, _ in rows if w == "stat key, warm")
    print(f"content key warm: {100 * content / floor:.0f}% of its floor; stat key warm: "
          f"{100 * stat / memory:.0f}% of tf.data's in-memory cache(); cache: "
          f"{stats['entries']} entries, {stats['bytes'] / 1e6:.1f} MB, "
          f"dropped {stats['dropped']}, errors {stats['errors']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pe-dir", help="PE files (default tests/golden/pe)")
    parser.add_argument("--min-kb", type=int, default=500, help="PE files of at least this")
    parser.add_argument("--files", type=int, default=300, help="PE files")
    parser.add_argument("--text-files", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workloads", default="pe,text")
    args = parser.parse_args()
    print(f"CPU: {cpu()}; TensorFlow {tf.__version__}")
    scratch = tempfile.mkdtemp(prefix="rustfx-cache-tf-")
    try:
        if "pe" in args.workloads:
            paths = pe_files(args.pe_dir, args.min_kb, args.files)
            if not paths:
                paths = pe_files(args.pe_dir, 0, args.files)
                print(f"(no PE file of {args.min_kb} kB or more: all sizes)")
            measure("EMBER2024 vectors of PE files", paths, rustfx.ember_features,
                    args.repeats, scratch)
        if "text" in args.workloads:
            spec = rustfx.FeatureSpec("hashed_ngrams", ngram_widths=[1, 2], num_buckets=1 << 20)
            paths = text_files(args.text_files)
            measure("word 1-2-gram ids of ~10 kB text", paths,
                    lambda files: rustfx.extract(spec, files), args.repeats, scratch)

    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
