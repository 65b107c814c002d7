"""Peak memory of MalConv2's input for a batch of 32 real files:
byte_sequence(preset="malconv2") as int32 rows padded to max_len (rustfx
before dtype and ragged rows; max_len = 4,000,000, MalConv2's own), against
int16 ragged rows padded to the batch's longest file (to_tensor), as
MalConv2 feeds its network.

Each variant runs in a fresh process (the peak RSS of a process never
falls); the "floor" process reads the same files and stops there. The
files: 32 regular files drawn (seed 0) from the executables and libraries
of at least 64 KiB and at most 2**26 bytes among the PE test corpus,
/usr/bin and /usr/lib/x86_64-linux-gnu (--largest: the 32 largest).

    .venv/bin/python benches/malconv2_memory.py       (make bench-malconv2)
"""

import glob
import json
import os
import random
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAP = 1 << 26

CHILD = r"""
import json, os, resource, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
import rustfx
paths, variant = json.loads(sys.argv[1]), sys.argv[2]
contents = rustfx.read_files(tf.constant(paths), max_bytes=1 << 26)
if variant == "dense int32, max_len 4e6":
    rows = rustfx.byte_sequence(contents, preset="malconv2")
elif variant == "ragged int16":
    rows = rustfx.byte_sequence(contents, preset="malconv2", dtype="int16",
                                output="ragged").flat_values
elif variant == "ragged int16, padded to the longest":
    rows = rustfx.byte_sequence(contents, preset="malconv2", dtype="int16",
                                output="ragged").to_tensor()
else:
    rows = contents
shape = rows.shape.as_list()
nbytes = (tf.size(rows).numpy() * rows.dtype.size if rows.dtype != tf.string
          else int(tf.reduce_sum(tf.strings.length(rows)).numpy()))
print(json.dumps(dict(shape=shape, dtype=rows.dtype.name, nbytes=int(nbytes),
                      peak_kb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)))
"""


def files(largest):
    candidates = (glob.glob(os.path.join(ROOT, "tests", "golden", "pe", "**", "*"), recursive=True)
                  + glob.glob("/usr/bin/*") + glob.glob("/usr/lib/x86_64-linux-gnu/*"))
    regular = {os.path.realpath(p) for p in candidates if os.path.isfile(p)}
    sized = sorted((os.path.getsize(p), p) for p in regular
                   if (64 << 10) <= os.path.getsize(p) <= CAP)
    if largest:
        return [p for _, p in sized[-32:]]
    return random.Random(0).sample([p for _, p in sized], 32)


def main():
    paths = files("--largest" in sys.argv)
    total = sum(map(os.path.getsize, paths))
    print(f"32 files, {total / 1e6:.1f} MB, largest {max(map(os.path.getsize, paths)) / 1e6:.1f} MB")
    print(f"{'variant':40} {'output shape':>20} {'dtype':>6} {'output MB':>10} {'peak RSS MB':>12}")
    rows = {}
    for variant in ["floor: read the files", "dense int32, max_len 4e6", "ragged int16",
                    "ragged int16, padded to the longest"]:
        out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(paths), variant],
                             capture_output=True, text=True, check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        rows[variant] = r
        print(f"{variant:40} {str(r['shape']):>20} {r['dtype']:>6} "
              f"{r['nbytes'] / 1e6:>10.1f} {r['peak_kb'] / 1e3:>12.1f}")
    floor = rows["floor: read the files"]["peak_kb"]
    dense = rows["dense int32, max_len 4e6"]["peak_kb"] - floor
    for variant in ["ragged int16", "ragged int16, padded to the longest"]:
        above = rows[variant]["peak_kb"] - floor
        print(f"peak RSS above the floor: {variant} {above / 1e3:.1f} MB against dense "
              f"{dense / 1e3:.1f} MB ({dense / max(above, 1):.1f}x less)")


if __name__ == "__main__":
    main()
