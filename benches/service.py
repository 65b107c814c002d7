"""Input pipeline throughput: local tf.data vs tf.data service workers.

The same rustfx pipeline (read_files, word n-gram sequences of 512 ids and
the EMBER byte features, batch 64) run locally and through each dispatcher
given, best of 3 (the first pass also warms the page cache).

    python -m rustfx.service dispatcher --port 5050 &
    python -m rustfx.service worker --dispatcher localhost:5050 &   # one or more
    .venv/bin/python benches/service.py localhost:5050
    REPEAT=10 BATCH=64 .venv/bin/python benches/service.py   # local only, 10x the files
"""

import glob
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402

PATHS = sorted(p for p in glob.glob("/usr/lib/python3*/**/*.py", recursive=True)
               + glob.glob("/usr/bin/*") if os.path.isfile(p) and not os.path.islink(p))[:3000]
PATHS *= int(os.environ.get("REPEAT", 1))
SIZE = sum(min(os.path.getsize(p), 1 << 20) for p in PATHS)


def fx(p):
    x = rustfx.read_files(p, max_bytes=1 << 20, on_error="empty")
    return {"ngrams": rustfx.hashed_ngrams(x, num_buckets=1 << 18, tokenizer="word",
                                           ngram_widths=(1, 2), output="sequence",
                                           max_tokens=512, pad_value=1 << 18),
            "bytes": tf.concat([rustfx.byte_histogram(x), rustfx.byte_entropy_histogram(x),
                                rustfx.string_features(x)], -1)}


def pipeline():
    return (tf.data.Dataset.from_tensor_slices(PATHS).batch(int(os.environ.get("BATCH", 64)))
            .map(fx, num_parallel_calls=tf.data.AUTOTUNE))


def run(name, ds):
    times, n = [], 0
    for _ in range(3):
        start, n = time.perf_counter(), 0
        for batch in ds:
            n += int(batch["bytes"].shape[0])
        times.append(time.perf_counter() - start)
    seconds = min(times)
    print(f"{name}: {n} files in {seconds:.2f} s = {n / seconds:,.0f} files/s, "
          f"{SIZE / seconds / 1e6:,.0f} MB/s", flush=True)


def main():
    print(f"{len(PATHS)} files, {SIZE / 1e6:.1f} MB (first MiB of each)")
    run("local", pipeline().prefetch(tf.data.AUTOTUNE))
    for i, address in enumerate(sys.argv[1:]):
        run(f"service {address}", pipeline().apply(tf.data.experimental.service.distribute(
            "distributed_epoch", f"grpc://{address}", job_name=f"bench{i}-{time.time()}"))
            .prefetch(tf.data.AUTOTUNE))


if __name__ == "__main__":
    main()
