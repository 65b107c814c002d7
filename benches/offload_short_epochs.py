"""Short epochs through rustfx.offload (docs/stalls.md, "Offloading"):
epochs of 1-3 s (a few hundred PE files at the trainer's full speed,
step 0), one Local worker serving from the start, on a CPU of its own
(CPU 1, as a worker on another node; the trainer on CPU 0). Each epoch's
files/s and the windows each governor arm ran: the worker's arms should carry
the run. The governor had sent each probe back at an epoch's end and
counted the next down from the start again, so with epochs of fewer
windows than that it sat on the local sweep alone for epochs at a time.
Compare commits by putting one's python/ first on PYTHONPATH:

    .venv/bin/python benches/offload_short_epochs.py --pe-dir /work/pe-corpus
"""

import argparse
import functools
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import rustfx  # noqa: E402
from rustfx import pipeline  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stall import ember, pe_files, pin_threads  # noqa: E402

os.sched_setaffinity(0, range(os.cpu_count()))  # stall pins to CPU 0: undone


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pe-dir", help="PE files (default tests/golden/pe)")
    parser.add_argument("--pe-min-kb", type=int, default=100)
    parser.add_argument("--files", type=int, default=856, help="an epoch's files")
    parser.add_argument("--epochs", type=int, default=8)
    args = parser.parse_args()
    paths = [p for p in pe_files(args.pe_dir) if os.path.getsize(p) >= args.pe_min_kb << 10]
    paths = (paths * (args.files // max(1, len(paths)) + 1))[:args.files]
    pipe = pipeline.from_files(paths, ember, batch_size=32)
    own_cpu = os.cpu_count() > 1
    setup = functools.partial(os.sched_setaffinity, 0, {1}) if own_cpu else None
    launcher = rustfx.workers.Local(max_workers=1, min_workers=1, setup=setup)
    rates, local_windows, windows = [], 0, 0
    with rustfx.offload(pipe, workers=launcher) as off:
        if own_cpu:
            pin_threads(0)  # the trainer, once the worker is started off CPU 0
        while not off.workers_over_time[-1][1]:
            time.sleep(0.1)  # the worker serves
        for number in range(args.epochs):
            start, files = time.perf_counter(), 0
            for rows in off:
                files += pipeline.element_rows(rows)
            rate = files / (time.perf_counter() - start)
            report = off.report
            print(f"epoch {number}: {rate:.0f} files/s in {report['seconds']:.1f} s, "
                  f"{report['remote']} of {report['files']} from the worker, windows "
                  f"{report['windows']}", flush=True)
            if number:  # the first: the worker's arms untried
                rates.append(rate)
                windows += sum(report["windows"].values())
                local_windows += report["windows"].get("local", 0)
    print(f"epochs 1-{args.epochs - 1}: median {statistics.median(rates):.0f} files/s, "
          f"{local_windows} of {windows} windows on the local sweep alone")


if __name__ == "__main__":
    main()
