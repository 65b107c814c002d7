"""EMBER2024 groups: rustfx against thrember on the same files, one core.

rustfx runs each group through its op with TF's intra-op pool at 1 thread;
thrember (which needs pefile, signify, scikit-learn and numpy) runs in the
Python given by --thrember-python, from the directory given by
--thrember-dir. Both check they saw the same bytes (total size).

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
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# group name in thrember -> rustfx function
GROUPS = {"strings": "ember2024_string_features", "general": "general_file_info",
          "histogram": "byte_histogram", "byteentropy": "byte_entropy_histogram"}

THREMBER = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import features
files = json.loads(sys.argv[2])
data = [open(f, "rb").read() for f in files]
extractors = {"strings": features.StringExtractor(), "general": features.GeneralFileInfo(),
              "histogram": features.ByteHistogram(),
              "byteentropy": features.ByteEntropyHistogram()}
out = {"bytes": sum(map(len, data))}
for name, fe in extractors.items():
    start = time.perf_counter()
    for d in data:
        fe.process_raw_features(fe.raw_features(d, None))
    out[name] = time.perf_counter() - start
print(json.dumps(out))
"""


def corpus(per_pattern, seed=1):
    patterns = ["/usr/bin/*", "/usr/lib/python3.11/**/*.py", "/usr/include/**/*.h",
                "/usr/lib/x86_64-linux-gnu/*.so*"]
    files = []
    for pattern in patterns:
        found = sorted(p for p in glob.glob(pattern, recursive=True)
                       if os.path.isfile(p) and 0 < os.path.getsize(p) < 4 << 20)
        random.Random(seed).shuffle(found)
        files += found[:per_pattern]
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--thrember-python", required=True)
    parser.add_argument("--thrember-dir", required=True)
    parser.add_argument("--per-pattern", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import rustfx

    files = corpus(args.per_pattern)
    data = [open(f, "rb").read() for f in files]
    total = sum(map(len, data))
    thrember = json.loads(subprocess.run(
        [args.thrember_python, "-c", THREMBER, args.thrember_dir, json.dumps(files)],
        check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
    assert thrember["bytes"] == total, "thrember read other bytes"
    docs = tf.constant(data)
    print(f"{len(files)} files, {total / 1e6:.1f} MB; one core; rustfx best of "
          f"{args.repeat}, thrember one pass")
    print("\n| group | rustfx MB/s | thrember MB/s | rustfx is |\n|---|---:|---:|---:|")
    for group, fn_name in GROUPS.items():
        fn = getattr(rustfx, fn_name)
        fn(docs[:1])
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            fn(docs)
            best = min(best, time.perf_counter() - start)
        ours, theirs = total / 1e6 / best, total / 1e6 / thrember[group]
        print(f"| {group} (`{fn_name}`) | {ours:,.0f} | {theirs:,.1f} | {ours / theirs:,.0f}x |")


if __name__ == "__main__":
    sys.exit(main())
