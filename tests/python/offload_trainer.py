"""A trainer for the kill -9 tests of tests/python/test_offload_workers*.py
(not a test itself): it makes an Offload with its own workers
(`python offload_trainer.py local|ray OUT [RAY_ADDRESS]`; ray without an
address: rustfx calls ray.init("local"), a Ray of its own), waits until
they serve, writes the pids of its workers and of all its descendants to
OUT (JSON), then blocks until killed."""

import json
import os
import sys
import time

import rustfx
from rustfx import pipeline


def descendants(pid):
    kids = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(k) for k in f.read().split()]
        except OSError:
            pass
    return [d for k in kids for d in (k, *descendants(k))]


def name(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""


def main(kind, out, address=None):
    pipe = pipeline.from_files([os.path.abspath(__file__)] * 4, rustfx.byte_histogram,
                               batch_size=2)
    if kind == "ray":
        launcher = rustfx.workers.Ray(max_workers=1, min_workers=1, address=address or "local")
    else:
        launcher = rustfx.workers.Local(max_workers=1, min_workers=1)
    off = rustfx.offload(pipe, workers=launcher)
    pool = off._pool
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (
            pool.ready >= 1 and all(h.placed() and h.pid for h in pool.handles)):
        time.sleep(0.1)
    with open(out + ".tmp", "w") as f:
        kids = descendants(os.getpid())
        json.dump({"workers": [h.pid for h in pool.handles], "descendants": kids,
                   "names": {str(k): name(k) for k in kids}}, f)
    os.rename(out + ".tmp", out)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main(*sys.argv[1:])
