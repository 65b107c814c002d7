"""One offload epoch served by an aarch64 `rustfx-worker` to an x86-64 trainer.

`make test-aarch64` (tests/aarch64/tf_cell.py) runs it with the x86-64
venv: a dispatcher process (`python -m rustfx.service dispatcher`, this
venv's), the aarch64 worker (`python -m rustfx.service worker`, what the
`rustfx-worker` script runs, in --worker-python: the aarch64 Python under
qemu-user), then one `rustfx.offload` epoch of EMBER features over
tests/golden/pe with remote="only" (the trainer's own sweep paused while
the worker delivers) and cut="after_fx" (the worker reads the files and
runs the FX; "before_fx", which offload measures for these small files,
would leave it only the reading). Every file must come exactly once, with
the rows local FX gives here (the FilesPipeline's own dataset, run on
x86-64), and the worker must have delivered files. The helpers are the
offload and data-service tests' (tests/python/test_offload.py,
test_data_service.py): the same cluster, epoch and exactness checks.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

import rustfx  # noqa: E402
import test_data_service  # noqa: E402
from rustfx import pipeline  # noqa: E402
from test_offload import PE_FILES, assert_exact, ember, local_rows, run_epoch  # noqa: E402

# TF's start under qemu-user takes minutes, not the seconds the tests allow.
STARTUP_TIMEOUT = 1200


class CommandServer(test_data_service.Server):
    """A server process started by an arbitrary command (the aarch64
    rustfx-worker), with the tests' start, stop and log handling."""

    def __init__(self, command, log_path):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT,
                                        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker-python", required=True,
                        help="the aarch64 Python (tests/aarch64/arm_python.sh)")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--out", required=True, help="the epoch's report (JSON)")
    args = parser.parse_args()
    test_data_service.STARTUP_TIMEOUT = STARTUP_TIMEOUT

    with tempfile.TemporaryDirectory(prefix="rustfx-aarch64-offload-") as tmp:
        cluster = test_data_service.Cluster(pathlib.Path(tmp))
        try:
            start = time.monotonic()
            worker = CommandServer(
                [args.worker_python, "-m", "rustfx.service", "worker", "--dispatcher",
                 cluster.address, "--port", "0", "--worker-address", "127.0.0.1:%port%"],
                pathlib.Path(tmp) / "aarch64-worker.log")
            cluster.servers.append(worker)
            worker.wait_started()
            started_s = time.monotonic() - start

            pipe = pipeline.from_files(PE_FILES, ember, batch_size=args.batch_size)
            off = rustfx.offload(pipe, cluster.address, labels=np.arange(len(pipe.paths)),
                                 remote="only", cut="after_fx")
            start = time.monotonic()
            got = run_epoch(off)
            epoch_s = time.monotonic() - start
            assert_exact(got, local_rows(pipe))
            report = off.report
            assert report["finished"] and report["remote"] > 0, report
            worker.terminate()
        finally:
            cluster.kill_all()
    result = {"files": len(PE_FILES), "worker_start_s": round(started_s, 1),
              "epoch_s": round(epoch_s, 1),
              "report": {k: report[k] for k in ("files", "local", "remote",
                                                "dropped_duplicates", "stalls", "cut",
                                                "remote_finished")}}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"tf_offload: {json.dumps(result)}", file=sys.stderr)


if __name__ == "__main__":
    main()
