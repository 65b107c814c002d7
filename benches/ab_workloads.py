"""Fixed workloads for timing two builds of rustfx against each other as
whole processes (timed from outside, A B A B: the pair's ratio, run by run).

    PYTHONPATH=<checkout>/python .venv/bin/python benches/ab_workloads.py WORKLOAD

WORKLOAD:
- records: short records (lines of Python and C headers, 10-200 bytes):
  hashed word 1-2-gram ids (ragged int64), byte histograms (dense float32)
  and word counts (sparse), one eager call per 20,000 records, 30 times;
- pipeline: text files through tf.data: rustfx.files(paths) in map (batch
  64, AUTOTUNE) for hashed word ids and byte histograms, 3 epochs of
  3,000 files;
- sequences: byte_sequence dense int32 rows and ragged int16 rows of the
  same files.

The corpus is what the machine has (deterministic); PYTHONPATH picks the
build (its python/ has the op library `make build` copied there).
"""

import glob
import os
import random
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402


def text_files(n):
    paths = sorted(p for p in glob.glob("/usr/lib/python3*/**/*.py", recursive=True)
                   + glob.glob("/usr/include/**/*.h", recursive=True)
                   if os.path.isfile(p) and os.path.getsize(p) < (1 << 20))
    random.Random(0).shuffle(paths)
    return paths[:n]


def records():
    lines = []
    for path in text_files(400):
        with open(path, "rb") as f:
            lines += [line for line in f.read().splitlines() if 10 <= len(line) <= 200]
    batch = tf.constant(lines[:20000])
    for _ in range(30):
        rustfx.hashed_ngrams(batch, num_buckets=1 << 20, ngram_widths=(1, 2))
        rustfx.byte_histogram(batch)
        rustfx.hashed_ngrams(batch, num_buckets=1 << 18, output="sparse")


def pipeline():
    paths = tf.constant(text_files(3000))
    ds = tf.data.Dataset.from_tensor_slices(paths).batch(64)
    ids = ds.map(lambda p: rustfx.hashed_ngrams(rustfx.files(p), num_buckets=1 << 20,
                                                ngram_widths=(1, 2)).row_lengths(),
                 num_parallel_calls=tf.data.AUTOTUNE)
    histograms = ds.map(lambda p: rustfx.byte_histogram(rustfx.files(p)),
                        num_parallel_calls=tf.data.AUTOTUNE)
    for _ in range(3):
        for _ in ids:
            pass
        for _ in histograms:
            pass


def sequences():
    paths = tf.constant(text_files(3000))
    ds = tf.data.Dataset.from_tensor_slices(paths).batch(64)
    dense = ds.map(lambda p: rustfx.byte_sequence(rustfx.files(p), 4096),
                   num_parallel_calls=tf.data.AUTOTUNE)
    for _ in range(3):
        for _ in dense:
            pass
    if "dtype" in rustfx.byte_sequence.__code__.co_varnames:
        ragged = ds.map(lambda p: rustfx.byte_sequence(
            rustfx.files(p), 4096, dtype="int16", output="ragged").to_tensor(),
            num_parallel_calls=tf.data.AUTOTUNE)
        for _ in range(3):
            for _ in ragged:
                pass


if __name__ == "__main__":
    {"records": records, "pipeline": pipeline, "sequences": sequences}[sys.argv[1]]()
