"""rustfx-sensor against rustfx-predict and Python (Keras/TF) on the same
files and the same model: cold start, peak RSS, binary size and links,
files/s on one thread (docs/sensor.md has the table).

    make bench-sensor              # builds everything, then runs this
    .venv/bin/python benches/sensor.py [--files 2000] [--runs 5] [--repeat 5]

The model is the one `make demo` exports, twice: target/demo-model (the
SavedModel, for rustfx-predict and Python) and target/demo-sensor (for
rustfx-sensor); run `make demo` first. Every program runs pinned to one CPU
(`taskset -c 0`) and reads at most 64 KiB per file, as the demo does.

- cold start: wall time of a whole process that loads the model and scores
  one file (median of --runs);
- peak RSS: the maximum resident set of that process (GNU time's %M), for
  one file and for the files/s run;
- binary: the program stripped (`strip -o`), and what `ldd` lists;
- files/s: (N - 1) / (wall(N files) - wall(1 file)), N = --files times
  --repeat, page cache warm, so start-up is left out; batches of 32.
"""

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "demo"))
# rustfx-sensor is built with its own cargo profile (`make sensor`, Cargo.toml).
SENSOR = os.path.join(ROOT, "target", "sensor", "rustfx-sensor")
PREDICT = os.path.join(ROOT, "target", "release", "rustfx-predict")
OPS = os.path.join(ROOT, "python", "rustfx", "_rustfx_ops.so")
SAVED = os.path.join(ROOT, "target", "demo-model")
SENSOR_DIR = os.path.join(ROOT, "target", "demo-sensor")
MAX_BYTES = 64 << 10
PIN = ["taskset", "-c", "0"] if shutil.which("taskset") else []
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}

PYTHON_SCORER = """
import sys, tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
import rustfx
model = tf.saved_model.load(sys.argv[1])
paths = sys.argv[2:]
for i in range(0, len(paths), 32):
    contents = rustfx.read_files(paths[i:i + 32], max_bytes=%d, on_error="empty")
    model.serve(contents).numpy()
""" % MAX_BYTES


def commands():
    return {
        "rustfx-sensor": [*PIN, SENSOR, "--model", SENSOR_DIR, "--max-bytes", str(MAX_BYTES)],
        "rustfx-predict": [*PIN, PREDICT, "--ops", OPS, "--model", SAVED,
                           "--max-bytes", str(MAX_BYTES)],
        "Python (TF/Keras)": [*PIN, sys.executable, "-c", PYTHON_SCORER, SAVED],
    }


def run(command, files):
    """(wall seconds, peak RSS in MB) of one process. The peak comes from
    GNU time (its %M), whose child starts from a small process: a child
    forked from this one (TF imported) would count this process's pages."""
    with tempfile.NamedTemporaryFile("r") as rss:
        start = time.perf_counter()
        out = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, *command, *files],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
        wall = time.perf_counter() - start
        if out.returncode != 0:
            sys.exit(f"{command[len(PIN)]} failed: {out.stderr.decode()[-2000:]}")
        return wall, int(rss.read().split()[-1]) / 1024


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def binary(path):
    """(stripped size in MB, the libraries ldd lists) of a program."""
    with tempfile.TemporaryDirectory() as tmp:
        stripped = os.path.join(tmp, "stripped")
        subprocess.run(["strip", "-o", stripped, path], check=True)
        size = os.path.getsize(stripped) / 1e6
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    libs = [line.split()[0] for line in out.splitlines()
            if line.strip() and "linux-vdso" not in line and "ld-linux" not in line]
    return size, libs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5,
                        help="the files/s run scores the file list this many times, so "
                             "scoring outweighs start-up")
    args = parser.parse_args()
    for path, make in [(SENSOR, "make sensor"), (PREDICT, "make predict"),
                       (SAVED, "make demo"), (SENSOR_DIR, "make demo")]:
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: run `{make}` first")
    from train_language_classifier import find_files
    paths, _ = find_files(args.files // 8 + 1, seed=7)
    paths = paths[:args.files]
    total = sum(min(os.path.getsize(p), MAX_BYTES) for p in paths)
    for p in paths:  # warm the page cache
        with open(p, "rb") as f:
            f.read(MAX_BYTES)
    print(f"{datetime.date.today()}, {os.cpu_count()} CPUs, pinned to one "
          f"({' '.join(PIN) or 'no taskset'}); {len(paths)} files x {args.repeat}, "
          f"{total / 1e6:.1f} MB read per pass "
          f"(at most {MAX_BYTES // 1024} KiB each); model: `make demo`'s language classifier")
    rows = []
    for name, command in commands().items():
        cold = [run(command, paths[:1]) for _ in range(args.runs)]
        many = paths * args.repeat
        wall, rss = run(command, many)
        files_per_second = (len(many) - 1) / (wall - median(c[0] for c in cold))
        rows.append((name, median(c[0] for c in cold), max(c[1] for c in cold), rss,
                     files_per_second))
    sizes = {"rustfx-sensor": binary(SENSOR), "rustfx-predict": binary(PREDICT)}
    print("\n| program | cold start (load + 1 file) | peak RSS, 1 file | peak RSS, all files "
          "| files/s, one thread | binary (stripped) | links |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, cold, rss_one, rss_all, fps in rows:
        size, libs = sizes.get(name, (None, None))
        size_text = f"{size:.1f} MB" if size is not None else "(Python + TF wheel)"
        libs_text = ", ".join(libs) if libs is not None else "libtensorflow_cc, libpython, ..."
        print(f"| {name} | {cold * 1000:.0f} ms | {rss_one:.0f} MB | {rss_all:.0f} MB "
              f"| {fps:,.0f} | {size_text} | {libs_text} |")


if __name__ == "__main__":
    main()
