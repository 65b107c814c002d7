"""The trainer's stall, swept from input-bound to compute-bound
(docs/stalls.md, "Reading the profile"; issue 39, part 4).

A simulated trainer spends a fixed step time per batch of 32, sleeping (as
a GPU step leaves the CPU free). It and its local pipeline run on CPU 0
(`taskset -c 0`, and sched_setaffinity here if run directly). For each
workload the step time is swept from 0 to 4x the time the local pipeline
takes per batch, and each row gives the trainer's throughput (files/s)
and stall (share of wall time blocked in next()) from
rustfx.pipeline.profile, for:

  pipeline   the local pipeline alone, no trainer (the profile's
             "pipeline" stage, measured in the same row: the machine's
             load moves it)
  local      the pipeline as written: from_tensor_slices(paths).batch(32)
             .map(fx(rustfx.files(p))).prefetch(AUTOTUNE)
  cache      tf.data's in-memory cache(), its second epoch (the first is
             run through once, untimed)
  ceiling    FastFlow's GThp: take(1).cache().repeat(), input free

and the profile's recommendation for the local pipeline. The columns for
full offload, FastFlow's rule (offload iff GThp/LThp >= 1.3, local ratio
LThp / (LThp + N*RThp), fixed once), the best static split and rustfx's
automatic choice are left as TODO: they need the offload of issue 39,
part 3 (one worker on CPU 1).

Workloads: EMBER2024 vectors (rustfx.ember_features) of PE files
(tests/golden/pe by default, --pe-dir for a larger corpus such as
benches/pe_from_wheels.py's), and hashed word 1-2-grams (2**20 buckets,
sequence of 1,024 ids) of the venv's Python files.

    make bench-stall            # or: taskset -c 0 .venv/bin/python benches/stall.py
    .venv/bin/python benches/stall.py --steps 40 --pe-dir /work/pe-corpus
"""

import argparse
import datetime
import glob
import os
import random
import sys

if hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 1 \
        and "--any-cpu" not in sys.argv:
    os.sched_setaffinity(0, {0})  # the trainer and its pipeline on CPU 0

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402
from rustfx import pipeline  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 32
SWEEP = (0, 0.25, 0.5, 1, 2, 4)  # step time, in units of the local time per batch


def pe_files(directory):
    directory = directory or os.path.join(ROOT, "tests", "golden", "pe")
    return sorted(p for p in glob.glob(os.path.join(directory, "**", "*"), recursive=True)
                  if os.path.isfile(p) and os.path.getsize(p) > 0)


def text_files(count):
    found = sorted(p for p in glob.glob(os.path.join(sys.prefix, "lib", "python3*",
                                                     "site-packages", "**", "*.py"),
                                        recursive=True)
                   if os.path.isfile(p) and 0 < os.path.getsize(p) <= 1 << 20)
    return random.Random(0).sample(found, min(count, len(found)))


def ember(contents):
    return rustfx.ember_features(contents)


def ngrams(contents):
    return rustfx.hashed_ngrams(contents, num_buckets=1 << 20, ngram_widths=(1, 2),
                                tokenizer="word", output="sequence", max_tokens=1024,
                                pad_value=-1)


def cached_second_epoch(pipe, step, steps):
    """The profile of tf.data's cache() on its second epoch."""
    cached = pipe.dataset().cache()
    for _ in cached:  # the first epoch fills the cache
        pass
    return pipeline.profile(cached, step=step, steps=steps, ceiling_steps=3)


def sweep(name, paths, fx, steps):
    pipe = pipeline.from_files(paths, fx, batch_size=BATCH)
    probe = pipeline.profile(pipe, step=0, steps=steps)
    per_batch = BATCH / probe.input_elements_per_second
    mean_size = probe.bytes_before_fx
    print(f"\n### {name} (load average {os.getloadavg()[0]:.1f}): {len(paths)} files, "
          f"{mean_size / 1e3:,.1f} kB mean, "
          f"{probe.bytes_after_fx:,.0f} feature bytes per file; "
          f"local pipeline alone {probe.input_elements_per_second:,.0f} files/s "
          f"({per_batch * 1e3:.1f} ms per batch of {BATCH}); stages: "
          + ", ".join(f"{s.name} {s.elements_per_second:,.0f}/s" for s in probe.stages.values())
          + "\n")
    print("| step (ms) | pipeline alone files/s | local files/s | local stall "
          "| cache ep. 2 files/s | cache stall | ceiling files/s | profile says | full offload "
          "| FastFlow rule | best static split | rustfx auto |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|---|")
    for factor in SWEEP:
        step = factor * per_batch
        local = pipeline.profile(pipe, step=step, steps=steps)
        cache = cached_second_epoch(pipe, step, steps)
        rec = local.recommendation
        said = rec.action if rec.action != "offload" else f"offload {rec.workers} @ {rec.cut}"
        if rec.action == "cache" and rec.workers:
            said += f" (epoch 1: {rec.workers} worker{'s' * (rec.workers != 1)})"
        print(f"| {step * 1e3:.1f} | {local.input_elements_per_second:,.0f} "
              f"| {local.elements_per_second:,.0f} | {local.stall:.0%} "
              f"| {cache.elements_per_second:,.0f} | {cache.stall:.0%} "
              f"| {local.ceiling_elements_per_second:,.0f} | {said} "
              f"| TODO | TODO | TODO | TODO |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per profile")
    parser.add_argument("--pe-dir", help="PE files (default tests/golden/pe)")
    parser.add_argument("--text-files", type=int, default=2000)
    parser.add_argument("--any-cpu", action="store_true", help="do not pin to CPU 0")
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    print(f"rustfx.pipeline stall sweep, {datetime.date.today()}, TF {tf.__version__}, "
          f"CPUs {cpus} of {os.cpu_count()}, batch {BATCH}, {args.steps} steps per profile, "
          f"load average {os.getloadavg()[0]:.1f}")
    sweep("EMBER2024 vectors of PE files", pe_files(args.pe_dir), ember, args.steps)
    sweep("hashed word 1-2-grams of text files", text_files(args.text_files), ngrams, args.steps)


if __name__ == "__main__":
    main()
