"""How long an offload epoch's end makes the trainer wait, with a worker
killed mid-epoch each epoch (docs/scale.md, "At scale"): the seconds from
the trainer's last next() of an epoch (it ends the epoch, its remote
thread cancelled and joined: rustfx.offload's end(), before the last
batch is yielded) against its other next() calls, and whether the thread
was joined.

A dispatcher started by hand (`python -m rustfx.service dispatcher`,
offload's `dispatcher=`: TF's worker timeout, so the job's client keeps
retrying a dead worker, its backoff growing to 10 s between tries), and
each epoch a new `python -m rustfx.service worker`, SIGKILLed once it
delivered; `--busy N` runs N busy loops beside. (rustfx's own launchers
run a dispatcher with a 3 s worker timeout: the same retries follow a
worker stopped less than 3 s before an epoch's job is made.)
Compare commits by running it at each, alternated:

    .venv/bin/python benches/offload_epoch_end.py --epochs 6 --busy 2
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

import rustfx  # noqa: E402
from rustfx import pipeline  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stall import ember, pe_files  # noqa: E402

os.sched_setaffinity(0, range(os.cpu_count()))  # stall pins to CPU 0: undone


def server(*args):
    """A `python -m rustfx.service` process and its port, once it serves."""
    process = subprocess.Popen([sys.executable, "-m", "rustfx.service", *args],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in process.stdout:
        found = re.search(r"started on port (\d+)", line)
        if found:
            return process, int(found.group(1))
    raise RuntimeError(f"rustfx.service {args[0]} did not start")


def epoch(off, kill):
    """Seconds the trainer's last next() of the epoch took (the epoch ends,
    end() joining its remote thread, before its last batch is yielded),
    and the median of the others."""
    seconds, batches = [], iter(off)
    while True:
        asked = time.perf_counter()
        try:
            next(batches)
        except StopIteration:
            break
        seconds.append(time.perf_counter() - asked)
        kill()
    return seconds[-1], statistics.median(seconds[:-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--busy", type=int, default=0, help="busy loops beside")
    parser.add_argument("--copies", type=int, default=96, help="the PE files repeated")
    args = parser.parse_args()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.busy)]
    dispatcher, port = server("dispatcher", "--port", "0")
    try:
        address = f"127.0.0.1:{port}"
        pipe = pipeline.from_files(pe_files(None) * args.copies, ember, batch_size=8)
        off = rustfx.offload(pipe, address, labels=np.arange(len(pipe.paths)), remote="always")
        waits = []
        for number in range(args.epochs):
            process, _ = server("worker", "--dispatcher", address, "--port", "0",
                                "--worker-address", "127.0.0.1:%port%")

            def kill(process=process):
                if process.poll() is None and off.report["remote"] > 0:
                    process.kill()
                    process.wait()

            last, others = epoch(off, kill)
            waits.append(last)
            kill()
            process.kill()
            process.wait()
            report = off.report
            print(f"epoch {number}: last next() {last:.2f} s (the others' median "
                  f"{others * 1000:.1f} ms), remote_joined "
                  f"{report['remote_joined']}, local {report['local']}, remote "
                  f"{report['remote']}, {report['seconds']:.1f} s", flush=True)
        print(f"the last next(): median {statistics.median(waits):.2f} s, most "
              f"{max(waits):.2f} s over {len(waits)} epochs ({args.busy} busy loops)")
    finally:
        for process in busy + [dispatcher]:
            process.kill()


if __name__ == "__main__":
    main()
