"""A trainer-bound run through rustfx.offload's autoscaler (docs/scale.md,
"At scale"): hashed n-grams of 6,400 text files, a 50 ms busy step per
batch of 32, epochs alternated between an Offload whose Local launcher
may add one worker (min_workers=0) and one holding a fixed worker. The
trainer is the bottleneck, so the autoscaled one should hold no worker
and take as long as the fixed one (it had held one, on windows of two
batches closed early by hiccups of a few ms).

    .venv/bin/python benches/offload_trainer_bound.py
"""

import glob
import os
import sys
import time

import rustfx
from rustfx import pipeline

STEP_SECONDS, FILES, EPOCHS = 0.05, 6400, 3


def text_files(n):
    paths = sorted(p for p in glob.glob(os.path.join(sys.prefix, "lib", "python3*",
                                                     "site-packages", "numpy", "**", "*.py"),
                                        recursive=True) if os.path.getsize(p) > 0)
    return (paths * (n // len(paths) + 1))[:n]


def busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def epoch(off):
    start = time.perf_counter()
    for _ in off:
        busy(STEP_SECONDS)
    return time.perf_counter() - start


def main():
    pipe = pipeline.from_files(text_files(FILES), lambda files: rustfx.hashed_ngrams(
        files, num_buckets=1 << 20, ngram_widths=(1, 2)), batch_size=32)
    runs = {"auto": rustfx.offload(pipe, workers=rustfx.workers.Local(1, min_workers=0)),
            "fixed 1": rustfx.offload(pipe, workers=rustfx.workers.Local(1, min_workers=1))}
    time.sleep(15)  # the fixed worker serving
    print(f"{FILES} text files, {STEP_SECONDS * 1e3:.0f} ms a batch of 32, "
          f"{os.cpu_count()} CPUs")
    for _ in range(EPOCHS):
        for name, off in runs.items():
            seconds = epoch(off)
            report = off.report
            print(f"  {name:8} {seconds:6.2f} s  workers {report['workers_mean']:.2f}  "
                  f"windows {report['windows']}  remote {report['remote']}", flush=True)
    for off in runs.values():
        off.close()


if __name__ == "__main__":
    main()
