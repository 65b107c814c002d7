"""Arrow in and out of the core, against TensorFlow's op on the same strings
and against the core's pre-Arrow path (docs/arrow.md).

    make bench-arrow
    .venv/bin/python benches/arrow.py [--urls 500000] [--pairs 5]

On --urls synthetic URLs (deterministic), byte 3-grams hashed into 2^20
buckets, ragged ids, one thread everywhere (RAYON_NUM_THREADS=1 for the
core, RUSTFX_NUM_THREADS=1 and one TF thread for the op), in one process,
alternated pair by pair (each figure is the median of --pairs):

- arrow: rustfx_core.extract(spec, a pyarrow string array) and
  pyarrow.array(rows): the documents read in place, the rows handed over
  at the core's address (checked);
- list: the same from a Python list of bytes (Documents.of joins them once);
- tf: rustfx.hashed_ngrams on a tf.constant of the same strings (built
  once, outside the timing), values and row splits as numpy.

The ratio is tf / arrow (above 1: the core from Arrow is faster). Every
run checks the three give the same ids.
"""

import argparse
import os
import random
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["RUSTFX_NUM_THREADS"] = "1"


def urls(count, seed=0):
    rng = random.Random(seed)
    hosts = [f"{rng.choice(['www.', 'api.', 'cdn.', ''])}"
             f"{''.join(rng.choices('abcdefghijklmnopqrstuvwxyz', k=rng.randint(4, 12)))}"
             f".{rng.choice(['com', 'org', 'net', 'io', 'example'])}" for _ in range(5000)]
    words = ["index", "login", "api", "v2", "static", "img", "search", "download", "user",
             "account", "update", "files", "docs", "assets"]
    return [f"{rng.choice(['http', 'https'])}://{rng.choice(hosts)}/"
            + "/".join(rng.choices(words, k=rng.randint(1, 5)))
            + (f"?id={rng.randint(0, 10**6)}" if rng.random() < 0.4 else "")
            for _ in range(count)]


def timed(function):
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--urls", type=int, default=500_000)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()

    import numpy as np
    import pyarrow as pa
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import rustfx
    import rustfx_core

    texts = urls(args.urls)
    strings = pa.array(texts, pa.string())
    as_bytes = [t.encode() for t in texts]
    constant = tf.constant(as_bytes)
    params = dict(num_buckets=1 << 20, tokenizer="byte", ngram_widths=[3], output="ragged")
    spec = rustfx_core.FeatureSpec("hashed_ngrams", **params)

    def from_arrow():
        rows = rustfx_core.extract(spec, strings)
        array = pa.array(rows)
        assert array.values.buffers()[1].address == rows.values.ctypes.data  # no copy
        return array

    def from_list():
        return pa.array(rustfx_core.extract(spec, as_bytes))

    def through_tf():
        ids = rustfx.hashed_ngrams(constant, **params)
        return ids.values.numpy(), ids.row_splits.numpy()

    values, splits = through_tf()
    for array in (from_arrow(), from_list()):
        assert np.array_equal(array.offsets.to_numpy(), splits)
        assert np.array_equal(array.values.to_numpy(), values)
    times = {"arrow": [], "list": [], "tf": []}
    for _ in range(args.pairs):
        for name, function in (("arrow", from_arrow), ("tf", through_tf), ("list", from_list)):
            times[name].append(timed(function)[0])
    median = {name: statistics.median(t) for name, t in times.items()}
    size = sum(map(len, as_bytes))
    print(f"{args.urls:,} URLs ({size / 1e6:.1f} MB), byte 3-grams, {len(values):,} ids, "
          f"one thread, medians of {args.pairs} alternated runs:")
    for name, label in (("arrow", "rustfx_core from a pyarrow array -> pyarrow"),
                        ("list", "rustfx_core from a list of bytes -> pyarrow"),
                        ("tf", "TF op (rustfx.hashed_ngrams) -> numpy")):
        print(f"  {label:<46} {median[name]:.3f} s  ({args.urls / median[name] / 1e6:.2f} M "
              f"URLs/s)")
    print(f"ratio tf / arrow: {median['tf'] / median['arrow']:.2f} (pairs: "
          + " ".join(f"{t / a:.2f}" for t, a in zip(times["tf"], times["arrow"])) + ")")


if __name__ == "__main__":
    main()
