"""The input pipeline a user runs, side by side with its alternatives.

Job: for each text file, the first 1,024 ids of its whitespace uni- and
bigrams hashed into 2**20 buckets (TF / Keras parity: Fingerprint64), padded
with -1: an int64 [batch, 1024] tensor per batch of 64 files. Every pipeline
below computes exactly these rows (checked: each pipeline's rows equal the
first's, bit for bit), on the same files, page cache warm, best of N:

  rustfx, one op    hashed_ngrams(rustfx.files(paths), output="sequence"):
                    the op reads each file into a buffer of its thread
  rustfx, two ops   read_files + hashed_ngrams(output="sequence") in one map
  TF ops, batched   tf.io.read_file per file, then split/ngrams/
                    to_hash_bucket_fast on the batch (ragged), cut and padded
  TF ops, per file  read_file + split/ngrams/hash per element, then batch
  Python FX         read_file, then split/join in tf.py_function (hashing
                    with TF's own op so the ids are the same)
  read floor        tf.io.read_file alone, no FX at all
  pure Rust         the same read + FX in a plain Rust loop over the crate on
                    rayon (benches/pipeline.rs): the ceiling

    make bench-pipeline          # or: .venv/bin/python benches/pipeline.py
    .venv/bin/python benches/pipeline.py --files 12000 --repeat 5
    .venv/bin/python benches/pipeline.py --advice   # pipeline choices, rustfx only
"""

import argparse
import glob
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402
from bench_ops import best_seconds  # noqa: E402  (benches/, the script's own dir)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Must match benches/pipeline.rs.
MAX_TOKENS = 1024
NUM_BUCKETS = 1 << 20
MAX_BYTES = 1 << 20
WIDTHS = [1, 2]
PAD = -1
BATCH = 64
PATTERNS = ["/usr/lib/python3*/**/*.py", "/usr/include/**/*.h",
            "/usr/share/perl/**/*.pm", os.path.expanduser("~/.pyenv/versions/**/*.py"),
            os.path.join(ROOT, ".venv/lib/python3*/site-packages/**/*.py")]


def corpus(count, seed=0):
    """`count` text files found on this machine (1 byte to 1 MiB, no NUL in
    their first 4 KiB), in a fixed pseudo-random order."""
    found = set()
    for pattern in PATTERNS:
        found.update(os.path.realpath(p) for p in glob.glob(pattern, recursive=True))
    found = sorted(p for p in found
                   if os.path.isfile(p) and 0 < os.path.getsize(p) <= MAX_BYTES)
    random.Random(seed).shuffle(found)
    paths = []
    for p in found:
        with open(p, "rb") as f:
            if b"\0" not in f.read(4096):
                paths.append(p)
        if len(paths) == count:
            break
    return paths


def sequence_from_ragged(ids):
    """First MAX_TOKENS ids of each ragged row, padded with PAD."""
    return ids[:, :MAX_TOKENS].to_tensor(default_value=PAD, shape=[None, MAX_TOKENS])


def tf_fx(contents):
    grams = tf.strings.ngrams(tf.strings.split(contents), WIDTHS, separator=" ")
    return sequence_from_ragged(tf.strings.to_hash_bucket_fast(grams, NUM_BUCKETS))


def python_fx(contents):
    def fx(batch):
        grams = []
        for doc in batch.numpy():
            tokens = doc.split()  # bytes.split(): ASCII whitespace, like TF
            row = tokens + [b" ".join(tokens[i:i + 2]) for i in range(len(tokens) - 1)]
            grams.append(row[:MAX_TOKENS])
        flat = tf.strings.to_hash_bucket_fast([g for row in grams for g in row] or [""],
                                              NUM_BUCKETS).numpy()
        out = np.full((len(grams), MAX_TOKENS), PAD, np.int64)
        k = 0
        for i, row in enumerate(grams):
            out[i, :len(row)] = flat[k:k + len(row)]
            k += len(row)
        return out

    rows = tf.py_function(fx, [contents], tf.int64)
    rows.set_shape([None, MAX_TOKENS])
    return rows


def pipelines(paths):
    files = tf.data.Dataset.from_tensor_slices(paths)
    auto = tf.data.AUTOTUNE

    def ids(contents):
        return rustfx.hashed_ngrams(contents, num_buckets=NUM_BUCKETS, ngram_widths=WIDTHS,
                                    output="sequence", max_tokens=MAX_TOKENS, pad_value=PAD)

    def rustfx_one_op(p):
        return ids(rustfx.files(p, max_bytes=MAX_BYTES, on_error="empty"))

    def rustfx_two_ops(p):
        return ids(rustfx.read_files(p, max_bytes=MAX_BYTES, on_error="empty"))

    def tf_per_file(p):
        grams = tf.strings.ngrams(tf.strings.split(tf.io.read_file(p)), WIDTHS, separator=" ")
        ids = tf.strings.to_hash_bucket_fast(grams, NUM_BUCKETS)[:MAX_TOKENS]
        return tf.pad(ids, [[0, MAX_TOKENS - tf.shape(ids)[0]]], constant_values=PAD)

    read = files.map(tf.io.read_file, num_parallel_calls=auto)
    return [
        ("rustfx, one op: hashed_ngrams(rustfx.files(paths))",
         files.batch(BATCH).map(rustfx_one_op, num_parallel_calls=auto)),
        ("rustfx, two ops: read_files, then hashed_ngrams",
         files.batch(BATCH).map(rustfx_two_ops, num_parallel_calls=auto)),
        ("TF ops, batched", read.batch(BATCH).map(tf_fx, num_parallel_calls=auto)),
        ("TF ops, per file", files.map(tf_per_file, num_parallel_calls=auto).batch(BATCH)),
        ("Python FX in tf.py_function", read.batch(BATCH).map(python_fx, num_parallel_calls=auto)),
        ("read floor: tf.io.read_file, no FX", read.batch(BATCH)),
    ]


def digest_of(ds):
    """sha256 of every batch's int64 rows, in order."""
    h = hashlib.sha256()
    for rows in ds:
        h.update(rows.numpy().astype("<i8").tobytes())
    return h.hexdigest()


def pure_rust(paths, repeat):
    """benches/pipeline.rs on the same files: (seconds, digest, threads)."""
    with tempfile.TemporaryDirectory() as tmp:
        listing, rows = os.path.join(tmp, "files"), os.path.join(tmp, "rows")
        with open(listing, "w") as f:
            f.write("\n".join(paths) + "\n")
        out = subprocess.run(
            ["cargo", "bench", "--quiet", "--bench", "pipeline", "--", listing, rows,
             str(repeat)], cwd=ROOT, check=True, capture_output=True, text=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        data = np.fromfile(rows, dtype=np.int64).astype("<i8")
        digest = hashlib.sha256()
        for start in range(0, len(paths), BATCH):
            digest.update(data[start * MAX_TOKENS:(start + BATCH) * MAX_TOKENS].tobytes())
        return result["seconds"], digest.hexdigest(), result["threads"]


def one_pass(ds):
    """A timer of one pass over `ds`, for best_in_rounds."""
    return lambda: best_seconds(ds, 1)


def best_in_rounds(timers, rounds):
    """The best seconds of each timer (a call that times one pass), run in
    rounds of one call each: this shared VM has slow and fast phases of
    several seconds, and timing one pipeline's passes back to back let a
    phase decide a ratio."""
    best = [float("inf")] * len(timers)
    for _ in range(rounds):
        for k, timer in enumerate(timers):
            best[k] = min(best[k], timer())
    return best


def advice(paths, mb, repeat):
    """The same rustfx job under each pipeline choice: which ones pay."""
    files = tf.data.Dataset.from_tensor_slices(paths)
    auto = tf.data.AUTOTUNE

    def fx(max_bytes=MAX_BYTES, one_op=False, **out):
        kwargs = dict(output="sequence", max_tokens=MAX_TOKENS, pad_value=PAD,
                      num_buckets=NUM_BUCKETS)
        kwargs.update(out)
        if kwargs["output"] != "sequence":
            del kwargs["max_tokens"], kwargs["pad_value"]
        read = rustfx.files if one_op else rustfx.read_files

        def f(p):
            contents = read(p, max_bytes=max_bytes, on_error="empty")
            return rustfx.hashed_ngrams(contents, ngram_widths=WIDTHS, **kwargs)
        return f

    def batched(f, calls=auto, batch=BATCH):
        return files.batch(batch).map(f, num_parallel_calls=calls)

    counts = dict(output="counts", num_buckets=1 << 16)
    variants = [
        ("batch 64, then map (AUTOTUNE)  [baseline]", batched(fx())),
        ("rustfx.files(p) instead of read_files(p): one op", batched(fx(one_op=True))),
        ("map per file, then batch 64", files.map(fx(), num_parallel_calls=auto).batch(BATCH)),
        ("batch 64, map with num_parallel_calls=1", batched(fx(), calls=None)),
        ("batch 256, then map", batched(fx(), batch=256)),
        ("batch 8, then map", batched(fx(), batch=8)),
        ("max_bytes=64 KiB", batched(fx(max_bytes=64 << 10))),
        ("output=ragged (all ids)", batched(fx(output="ragged"))),
        ("output=counts, 2**16 buckets (dense)", batched(fx(**counts))),
        ("output=sparse", batched(fx(output="sparse"))),
        (".prefetch(AUTOTUNE) after the map", batched(fx()).prefetch(auto)),
    ]
    cached = batched(fx()).cache()
    best_seconds(cached, 1)  # fills the cache
    variants.append((".cache() after the map, later epochs", cached))
    for _, ds in variants:
        best_seconds(ds, 1)  # warm-up
    best = best_in_rounds([one_pass(ds) for _, ds in variants], repeat)
    results = [(name, seconds) for (name, _), seconds in zip(variants, best)]
    base = results[0][1]
    print("\n| rustfx pipeline variant | MB/s | files/s | vs baseline |\n|---|---:|---:|---:|")
    for name, seconds in results:
        print(f"| {name} | {mb / seconds:,.0f} | {len(paths) / seconds:,.0f} | "
              f"{base / seconds:.2f}x |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=12000)
    parser.add_argument("--repeat", type=int, default=5,
                        help="rounds: one timed pass of each pipeline per round")
    parser.add_argument("--python-repeat", type=int, default=1,
                        help="passes of the (slow) Python pipeline")
    parser.add_argument("--advice", action="store_true",
                        help="instead: the rustfx job under each pipeline choice")
    args = parser.parse_args()
    paths = corpus(args.files)
    sizes = [os.path.getsize(p) for p in paths]
    mb = sum(sizes) / 1e6
    for p in paths:  # warm the page cache
        with open(p, "rb") as f:
            f.read()
    print(f"corpus: {len(paths)} text files, {mb:.1f} MB (mean {mb * 1e3 / len(paths):.1f} KB); "
          f"{os.cpu_count()} cores; TF {tf.__version__}; best of {args.repeat}, "
          f"page cache warm; rows: first {MAX_TOKENS} whitespace 1-2-gram ids, batch {BATCH}")
    if args.advice:
        advice(paths, mb, args.repeat)
        return

    # Every pipeline checked (its rows equal the first's), which is also
    # its warm-up pass.
    candidates, reference = pipelines(paths), None
    for name, ds in candidates:
        if not name.startswith("read floor"):
            digest = digest_of(ds)
            reference = reference or digest
            assert digest == reference, f"{name}: rows differ from the rustfx pipeline's"
    # The Python pipeline (minutes per pass) is timed on its own.
    fast = [(name, ds) for name, ds in candidates if not name.startswith("Python")]
    rust_threads = []

    def pure_rust_pass():
        seconds, digest, threads = pure_rust(paths, 1)
        assert digest == reference, "pure-Rust rows differ from the rustfx pipeline's"
        rust_threads.append(threads)
        return seconds

    *fast_best, rust_best = best_in_rounds(
        [one_pass(ds) for _, ds in fast] + [pure_rust_pass], args.repeat)
    best = dict(zip((name for name, _ in fast), fast_best))
    for name, ds in candidates:
        if name.startswith("Python"):
            best[name] = best_seconds(ds, args.python_repeat)
    results = [(name, best[name]) for name, _ in candidates]
    results.append((f"pure Rust read + FX (rayon, {rust_threads[-1]} threads)", rust_best))
    for name, seconds in results:
        print(f"  ... {name}: {mb / seconds:.1f} MB/s", file=sys.stderr, flush=True)

    rust = results[0][1]
    print("\n| pipeline | MB/s | files/s | its time / rustfx's |\n|---|---:|---:|---:|")
    for name, seconds in results:
        ratio = seconds / rust
        print(f"| {name} | {mb / seconds:,.0f} | {len(paths) / seconds:,.0f} | "
              f"{'-' if ratio == 1 else f'{ratio:.2f}x'} |")
    print("\nAll pipelines gave the same rows (sha256 of the int64 rows in order).")
    print(f"rustfx reaches {results[-1][1] / rust:.0%} of the pure-Rust read + FX "
          f"(two ops: {results[-1][1] / results[1][1]:.0%}).")


if __name__ == "__main__":
    main()
