"""EMBER2024 vectors: rustfx against thrember on the same files, one core.

Two corpora: the PE corpus of the tests (tests/golden/pe: launchers from
Python packages, MinGW-built EXEs and DLLs, malformed variants) and files
of this machine (ELF binaries, libraries, Python sources: not PE, so only
the byte groups do work). For each: the whole 2568-value vector and each
group, rustfx through its op with TF's pools at 1 thread (best of
--repeat), thrember (pefile, signify, scikit-learn, numpy) in the Python
given by --thrember-python, one pass. Then the tf.data pipeline that
reads the files and extracts (batches of 64, AUTOTUNE), with the whole
vector against the byte groups alone (general, histogram, byteentropy,
strings: everything but the PE parse and the PE groups), on all cores.
Both sides check they saw the same bytes; rustfx's rows are checked equal
to thrember's on the PE groups before timing.

    .venv/bin/python benches/ember2024.py --thrember-python /path/to/venv/bin/python \\
        --thrember-dir ../shared/oracles/thrember
"""

import argparse
import glob
import json
import os
import random
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROUPS = ["general", "histogram", "byteentropy", "strings", "header", "section",
          "imports", "exports", "datadirectories", "richheader", "authenticode",
          "pefilewarnings"]
BYTE_GROUPS = GROUPS[:4]

THREMBER = """
import json, sys, time, io, contextlib
sys.path.insert(0, sys.argv[1])
import features, pefile, numpy as np
files = json.loads(sys.argv[2])
data = [open(f, "rb").read() for f in files]
fx = features.PEFeatureExtractor()
out = {"bytes": sum(map(len, data)), "group": {}}
def parse(d):
    try:
        return pefile.PE(data=d)
    except Exception:   # thrember catches PEFormatError and AttributeError only
        return None
# The whole vector, as users call it (one parse per file inside).
start = time.perf_counter()
rows = []
with contextlib.redirect_stdout(io.StringIO()):   # "WARN: Unknown pefile warning"
    for d in data:
        try:
            rows.append(fx.feature_vector(d).tolist())
        except Exception:   # the empty file (IndexError); pefile's uncaught errors
            rows.append(None)
out["all"] = time.perf_counter() - start
# Each group on a parse made beforehand, and the parse alone.
start = time.perf_counter()
pes = [parse(d) for d in data]
out["parse"] = time.perf_counter() - start
with contextlib.redirect_stdout(io.StringIO()):
    for fe in fx.features:
        start = time.perf_counter()
        for d, pe in zip(data, pes):
            try:
                fe.process_raw_features(fe.raw_features(d, pe))
            except Exception:
                pass
        out["group"][fe.name] = time.perf_counter() - start
out["rows"] = rows
print(json.dumps(out))
"""


def machine_files(per_pattern, seed=1):
    patterns = ["/usr/bin/*", "/usr/lib/python3.11/**/*.py",
                "/usr/lib/x86_64-linux-gnu/*.so*"]
    files = []
    for pattern in patterns:
        found = sorted(p for p in glob.glob(pattern, recursive=True)
                       if os.path.isfile(p) and 0 < os.path.getsize(p) < 4 << 20)
        random.Random(seed).shuffle(found)
        files += found[:per_pattern]
    return files


def pe_files():
    return sorted(p for p in glob.glob(os.path.join(ROOT, "tests", "golden", "pe", "**", "*"),
                                       recursive=True) if os.path.isfile(p))


def run_corpus(name, files, args, tf, rustfx):
    import numpy as np
    from bench_ops import best_call_seconds  # benches/; imports rustfx: after main's TF setup
    data = [open(f, "rb").read() for f in files]
    total = sum(map(len, data))
    theirs = json.loads(subprocess.run(
        [args.thrember_python, "-c", THREMBER, args.thrember_dir, json.dumps(files)],
        check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
    assert theirs["bytes"] == total, "thrember read other bytes"
    docs = tf.constant(data)
    ours = rustfx.ember_features(docs).numpy()
    # Same vectors (the empty file aside, where thrember raises); the
    # authenticode group of files signify fails on aside only if listed in
    # the tests' known differences, so compare the PE groups row by row.
    same = sum(r is not None and np.array_equal(np.float32(r).view(np.uint32)[696:],
                                                o.view(np.uint32)[696:])
               for r, o in zip(theirs["rows"], ours))
    print(f"\n### {name}: {len(files)} files, {total / 1e6:.2f} MB "
          f"({sum(o[2] == 1 for o in ours)} PE); PE groups equal to thrember's "
          f"on {same} of {len(files)} files\n")
    print("| extractor | rustfx files/s | rustfx MB/s | thrember files/s | thrember MB/s | rustfx is |")
    print("|---|---:|---:|---:|---:|---:|")

    def row(label, seconds, thrember_seconds):
        print(f"| {label} | {len(files) / seconds:,.0f} | {total / 1e6 / seconds:,.1f} | "
              f"{len(files) / thrember_seconds:,.1f} | {total / 1e6 / thrember_seconds:,.2f} | "
              f"{thrember_seconds / seconds:,.0f}x |")

    row("all 2568 values", best_call_seconds(lambda: rustfx.ember_features(docs), args.repeat),
        theirs["all"])
    for group in GROUPS:
        seconds = best_call_seconds(lambda: rustfx.ember_features(docs, groups=[group]), args.repeat)
        # thrember parses once for all PE groups: its parse is counted with
        # each PE group as rustfx's is.
        extra = theirs["parse"] if group not in BYTE_GROUPS else 0.0
        row(f"`{group}`", seconds, theirs["group"][group] + extra)
    return files


def pipelines(files, args, tf, rustfx):
    from bench_ops import best_call_seconds  # benches/; imports rustfx: after main's TF setup

    def run(groups):
        ds = (tf.data.Dataset.from_tensor_slices(files).batch(64)
              .map(lambda p: rustfx.ember_features(rustfx.read_files(p), groups=groups),
                   num_parallel_calls=tf.data.AUTOTUNE)
              .prefetch(tf.data.AUTOTUNE))
        return lambda: sum(int(b.shape[0]) for b in ds)
    total = sum(os.path.getsize(f) for f in files)
    whole = best_call_seconds(run([]), args.repeat)
    byte = best_call_seconds(run(BYTE_GROUPS), args.repeat)
    print(f"\ntf.data, read_files + ember_features, {len(files)} files, {total / 1e6:.1f} MB, "
          f"all cores: whole vector {total / 1e6 / whole:,.0f} MB/s, byte groups alone "
          f"{total / 1e6 / byte:,.0f} MB/s: the whole vector takes {whole / byte:.2f}x the time")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--thrember-python", required=True)
    parser.add_argument("--thrember-dir", required=True)
    parser.add_argument("--per-pattern", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    # After the thread settings: importing rustfx runs an op (its registry),
    # which fixes TF's pools.
    import rustfx

    with tf.device("CPU:0"):
        print(f"One core; rustfx best of {args.repeat}, thrember one pass.")
        pe = run_corpus("PE corpus (tests/golden/pe)", pe_files(), args, tf, rustfx)
        machine = run_corpus("machine files (not PE)", machine_files(args.per_pattern),
                             args, tf, rustfx)
    pipelines(pe * 20 + machine, args, tf, rustfx)


if __name__ == "__main__":
    sys.exit(main())
