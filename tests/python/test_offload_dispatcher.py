"""rustfx.offload through a dispatcher restart (docs/safety.md, "Faults"):
the dispatcher killed with SIGKILL mid-epoch and started again at its
address from its journal (`--work-dir`, fault-tolerant mode), as a
supervisor would. The epoch still has every file exactly once, with the
rows of local FX (the oracle: the pipeline run locally), and the next
epoch uses the workers again."""

import signal
import socket

import numpy as np

import rustfx
from rustfx import pipeline
from test_data_service import Server
from test_offload import PE_FILES, assert_exact, ember, local_rows, run_epoch


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_dispatcher_restarted_from_its_work_dir_mid_epoch(tmp_path):
    port, journal = _free_port(), tmp_path / "journal"
    address = f"127.0.0.1:{port}"

    def dispatcher(n):
        server = Server(["dispatcher", "--port", str(port), "--work-dir", str(journal)],
                        tmp_path / f"dispatcher-{n}.log")
        server.wait_started()
        return server

    servers = [dispatcher(0)]
    try:
        worker = Server(["worker", "--dispatcher", address, "--port", "0",
                         "--worker-address", "127.0.0.1:%port%"], tmp_path / "worker.log")
        servers.append(worker)
        worker.wait_started()
        pipe = pipeline.from_files(PE_FILES * 4, ember, batch_size=8)
        off = rustfx.offload(pipe, address, labels=np.arange(len(pipe.paths)),
                             remote="always")
        restarted = []

        def restart_once_remote_delivered(_):
            if not restarted and off.report["remote"] > 0:
                servers[0].process.send_signal(signal.SIGKILL)
                servers[0].kill()
                servers.append(dispatcher(1))
                restarted.append(off.report["remote"])

        expected = local_rows(pipe)
        assert_exact(run_epoch(off, restart_once_remote_delivered), expected)
        assert restarted, f"the workers delivered nothing before the epoch ended: {off.report}"
        assert off.report["finished"]
        # The next epoch, on the restarted dispatcher: exact, and the worker
        # (which reconnects to the same address) delivers again.
        assert_exact(run_epoch(off), expected)
        assert off.report["finished"] and off.report["remote"] > 0, off.report
    finally:
        for server in servers:
            server.kill()
