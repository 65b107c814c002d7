"""rustfx ops against the alternatives, in one run, on the same data.

Each family runs the same input through a tf.data pipeline (batch, then map
with num_parallel_calls=AUTOTUNE), once per implementation, and reports
MB/s and the ratio to rustfx. Alternatives: TensorFlow's own ops where they
exist, the Python implementation behind tf.py_function (what teams run
today), and scikit-learn called directly (no TF at all).

    make bench              # or: .venv/bin/python benches/bench_ops.py
    .venv/bin/python benches/bench_ops.py --files 500 --repeat 3
"""

import argparse
import gc
import glob
import os
import random
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))


def corpus(count, seed=0):
    """Real text and binary files from this machine, read into memory."""
    patterns = ["/usr/lib/python3*/**/*.py", "/usr/include/**/*.h",
                "/usr/bin/*", "/usr/lib/x86_64-linux-gnu/*.so*"]
    paths = []
    for pattern in patterns:
        found = sorted(p for p in glob.glob(pattern, recursive=True)
                       if os.path.isfile(p) and 0 < os.path.getsize(p) <= 4 << 20)
        paths += random.Random(seed).sample(found, min(count // len(patterns), len(found)))
    return paths, [open(p, "rb").read() for p in paths]


def best_call_seconds(fn, repeat, warm_up=True):
    """Best-of-`repeat` seconds of `fn()`; with `warm_up`, after one untimed
    call (which builds kernels and fills caches). Python's garbage collector
    is off while timing, as in `timeit`: a full collection walks every
    object TensorFlow created (tens of ms) whenever it happens to trigger,
    which would be charged to whichever pipeline was running."""
    if warm_up:
        fn()
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
    finally:
        if enabled:
            gc.enable()
    return best


def best_seconds(ds, repeat):
    """Best-of-`repeat` seconds of one pass over `ds`."""
    def one_pass():
        for _ in ds:
            pass
    return best_call_seconds(one_pass, repeat, warm_up=False)


def run(contents, fx, batch_size, repeat):
    """Best-of-`repeat` seconds to push `contents` through fx in tf.data."""
    ds = (tf.data.Dataset.from_tensor_slices(contents).batch(batch_size)
          .map(fx, num_parallel_calls=tf.data.AUTOTUNE))
    return best_seconds(ds, repeat)


def report(title, megabytes, timings):
    print(f"\n{title}")
    base = timings[0][1]
    for name, seconds in timings:
        print(f"  {name:<46} {megabytes / seconds:8.1f} MB/s  "
              f"{seconds / base:6.2f}x rustfx time")


def py_function(fn, dtype):
    def wrapped(batch):
        out = tf.py_function(lambda b: fn([x for x in b.numpy()]), [batch], dtype)
        return out
    return wrapped


def bench_tf_parity(contents, batch_size, repeat):
    widths = [1, 2]
    n = 1 << 20

    def rust(x):
        return rustfx.hashed_ngrams(x, num_buckets=n, ngram_widths=widths).values

    def tf_ops(x):
        grams = tf.strings.ngrams(tf.strings.split(x), widths, separator=" ")
        return tf.strings.to_hash_bucket_fast(grams, n).values

    def python(docs):
        # What a py_function user writes; hashing with TF's own op on the
        # Python-made n-grams keeps the output identical.
        grams = []
        for d in docs:
            t = d.split()
            grams += t + [b" ".join(t[i:i + 2]) for i in range(len(t) - 1)]
        return tf.strings.to_hash_bucket_fast(grams, n)

    return [("rustfx.hashed_ngrams (whitespace, 1-2)", run(contents, rust, batch_size, repeat)),
            ("tf.strings split+ngrams+to_hash_bucket_fast", run(contents, tf_ops, batch_size, repeat)),
            ("python split/join in tf.py_function", run(contents, py_function(python, tf.int64), batch_size, repeat))]


def bench_sklearn(texts, batch_size, repeat):
    from sklearn.feature_extraction.text import HashingVectorizer
    vectorizer = HashingVectorizer(ngram_range=(1, 2), n_features=2**18)

    def rust(x):
        return rustfx.hashed_ngrams(x, num_buckets=2**18, ngram_widths=(1, 2),
                                    tokenizer="sklearn_word", lowercase=True,
                                    hash="murmur3", output="sparse",
                                    alternate_sign=True, norm="l2").values

    def sklearn_py(docs):
        return vectorizer.transform([d.decode("utf-8", "replace") for d in docs]).data.astype(np.float32)

    decoded = [t.decode("utf-8", "replace") for t in texts]
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        vectorizer.transform(decoded)
        best = min(best, time.perf_counter() - start)
    return [("rustfx sklearn_word murmur3 sparse l2", run(texts, rust, batch_size, repeat)),
            ("HashingVectorizer in tf.py_function", run(texts, py_function(sklearn_py, tf.float32), batch_size, repeat)),
            ("HashingVectorizer.transform, no TF (1 core)", best)]


def bench_read(paths, batch_size, repeat):
    def rust(p):
        return rustfx.read_files(p)

    def tf_io(p):
        return tf.map_fn(tf.io.read_file, p, fn_output_signature=tf.string)

    return [("rustfx.read_files", run(paths, rust, batch_size, repeat)),
            ("tf.io.read_file (map_fn)", run(paths, tf_io, batch_size, repeat))]


def bench_byte_features(contents, batch_size, repeat):
    """EMBER features: rustfx ops vs the numpy reference (EMBER's own
    operations, written from its definitions) in tf.py_function."""
    import ember_reference as ref

    def rust(x):
        return (rustfx.byte_histogram(x), rustfx.byte_entropy_histogram(x),
                rustfx.string_features(x))

    def numpy_rows(docs):
        return np.stack([np.concatenate([ref.byte_histogram(d, exact=False),
                                         ref.byte_entropy_histogram(d, exact=False),
                                         ref.string_features(d, exact=False)])
                         for d in docs])

    nonempty = [c for c in contents if c]
    return [("rustfx histogram+entropy+strings", run(nonempty, rust, batch_size, repeat)),
            ("numpy (EMBER's operations) in tf.py_function",
             run(nonempty, py_function(numpy_rows, tf.float32), batch_size, 1))]


def bench_byte_sequence(contents, batch_size, repeat):
    max_len = 1 << 20

    def rust(x):
        return rustfx.byte_sequence(x, max_len, preset="ember")

    def numpy_rows(docs):
        out = np.full((len(docs), max_len), 256, np.int32)
        for i, d in enumerate(docs):
            row = np.frombuffer(d[:max_len], np.uint8)
            out[i, :len(row)] = row
        return out

    return [("rustfx.byte_sequence (ember, 1 MiB)", run(contents, rust, batch_size, repeat)),
            ("numpy frombuffer in tf.py_function", run(contents, py_function(numpy_rows, tf.int32), batch_size, repeat))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=800)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    paths, contents = corpus(args.files)
    texts = [c for c in contents if b"\0" not in c[:4096]]
    mb = sum(map(len, contents)) / 1e6
    text_mb = sum(map(len, texts)) / 1e6
    print(f"corpus: {len(contents)} files, {mb:.1f} MB ({len(texts)} text files, "
          f"{text_mb:.1f} MB); {os.cpu_count()} cores; TF {tf.__version__}; "
          f"best of {args.repeat}")
    report("hashed n-grams, TF parity (all files)", mb,
           bench_tf_parity(contents, args.batch_size, args.repeat))
    report("scikit-learn HashingVectorizer parity (text files)", text_mb,
           bench_sklearn(texts, args.batch_size, args.repeat))
    report("reading files (page cache warm)", mb,
           bench_read(paths, args.batch_size, args.repeat))
    report("EMBER byte features (all files)", mb,
           bench_byte_features(contents, args.batch_size, args.repeat))
    report("MalConv byte sequences (all files)", mb,
           bench_byte_sequence(contents, 8, args.repeat))

if __name__ == "__main__":
    main()
