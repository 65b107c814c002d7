"""The op library's threads under tf.data (BUILD_NOTES.md, "One op library
for every TensorFlow": TF's C API has no thread pool, so a batch's chunks run
on rustfx's rayon pool). Does a parallel map oversubscribe the cores, and
does one large eager call scale?

For each setting, in a process of its own (RUSTFX_NUM_THREADS is read once):
  - map   files -> hashed_ngrams(rustfx.files(paths), output="sequence")
          over `--files` files in batches of 64, `num_parallel_calls`
          1 or AUTOTUNE: files/s, and CPU seconds per wall second (at most
          the cores if nothing oversubscribes);
  - eager one call on a batch of 4,000 random 4 KiB records (byte 3-gram
          counts into 4096 buckets), best of `--repeat`: MB/s.
Settings: the default pool (a thread per core) and RUSTFX_NUM_THREADS=1.

    .venv/bin/python benches/threads.py [--files 4000] [--repeat 5]
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, os, sys, time
import tensorflow as tf
import rustfx
sys.path.insert(0, os.path.join(sys.argv[1], "benches"))
from pipeline import corpus
files, repeat, parallel = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
paths = corpus(files)
calls = tf.data.AUTOTUNE if parallel == "autotune" else 1
ds = (tf.data.Dataset.from_tensor_slices(paths).batch(64)
      .map(lambda p: rustfx.hashed_ngrams(rustfx.files(p, max_bytes=1 << 20),
                                          num_buckets=1 << 20, ngram_widths=(1, 2),
                                          output="sequence", max_tokens=1024),
           num_parallel_calls=calls)
      .prefetch(tf.data.AUTOTUNE))
for _ in ds: pass

best = None
for _ in range(repeat):
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in ds: pass
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if best is None or wall < best[0]:
        best = (wall, cpu)
docs = tf.constant([os.urandom(4096) for _ in range(4000)])
f = lambda: rustfx.hashed_ngrams(docs, num_buckets=4096, tokenizer="byte", ngram_widths=(3,),
                                 output="counts")
f()
eager = min((lambda t: (f(), time.perf_counter() - t)[1])(time.perf_counter())
            for _ in range(repeat))
print(json.dumps({"files_per_s": files / best[0], "cpu_per_wall": best[1] / best[0],
                  "eager_mb_per_s": 4000 * 4096 / eager / 1e6}))
"""


def run(threads, parallel, files, repeat):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("RUSTFX_NUM_THREADS", None)
    if threads:
        env["RUSTFX_NUM_THREADS"] = str(threads)
    out = subprocess.run([sys.executable, "-c", CHILD, ROOT, str(files), str(repeat), parallel],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; {args.files} files, best of {args.repeat}")
    print(f"{'pool':>10} {'map calls':>10} {'files/s':>9} {'CPU/wall':>9} {'eager MB/s':>11}")
    rows = {}
    for threads in (None, 1):
        for parallel in ("1", "autotune"):
            r = run(threads, parallel, args.files, args.repeat)
            rows[(threads, parallel)] = r
            print(f"{'default' if threads is None else threads:>10} {parallel:>10} "
                  f"{r['files_per_s']:>9,.0f} {r['cpu_per_wall']:>9.2f} "
                  f"{r['eager_mb_per_s']:>11.0f}")
    scaling = rows[(None, "1")]["eager_mb_per_s"] / rows[(1, "1")]["eager_mb_per_s"]
    print(f"one large eager call, default pool vs one thread: {scaling:.2f}x")


if __name__ == "__main__":
    main()
