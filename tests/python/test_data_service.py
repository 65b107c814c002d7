"""FX on tf.data service workers in other processes (`python -m
rustfx.service`), in "distributed_epoch" mode, and what TF guarantees there.

TF 2.21's guarantees for processing_mode="distributed_epoch"
(ShardingPolicy.DYNAMIC: the dispatcher hands each element of the source
to one worker, on demand), read in data_service_ops.py and TF's client and
dispatcher sources:
  - without failures, every element exactly once (in no fixed order);
  - when a worker dies, at most once: no element is repeated, and the
    elements it held (being processed or buffered) are lost;
  - the epoch only ends once the dead worker comes back at the same address
    (same host and --port), as a supervisor would restart it: the
    dispatcher does not take a dead worker's task away (its missing-worker
    timeout only serves snapshots), so with the worker gone for good the
    client reads everything the others produce and then waits forever.
("parallel_epochs" / ShardingPolicy.OFF instead has every worker produce
the whole dataset: each element once per worker, and a restarted worker
starts over from the beginning.)

Each element carries its index, so the tests check those rules exactly,
and the pid of the worker that produced it (read from /proc/self/stat with
rustfx.read_files, in the worker), so they know which worker did what.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

import rustfx

# Generous, for a loaded machine: seconds for a server process to say it
# started, and for a job to finish.
STARTUP_TIMEOUT = 120
JOB_TIMEOUT = 120
ELEMENTS = 400


class Server:
    """One `python -m rustfx.service ...` process, its output in a file."""

    def __init__(self, args, log_path):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rustfx.service", *args],
            stdout=self.log, stderr=subprocess.STDOUT,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})

    def output(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_started(self):
        """The port it listens on, once it says it started."""
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            found = re.search(r"started on port (\d+)", self.output())
            if found:
                return int(found.group(1))
            assert self.process.poll() is None, self.output()[-3000:]
            time.sleep(0.1)
        raise AssertionError(f"no start within {STARTUP_TIMEOUT} s:\n"
                             + self.output()[-3000:])

    def terminate(self):
        """SIGTERM: the server must stop cleanly, exit 0, no traceback."""
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=60) == 0, self.output()[-3000:]
        assert "Traceback" not in self.output(), self.output()[-3000:]
        assert "stopped" in self.output()

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.log.close()


class Cluster:
    """A dispatcher and workers on 127.0.0.1, each in its own process, all
    killed when the test ends whatever happens."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.servers = []
        self.dispatcher = self._start(["dispatcher", "--port", "0"],
                                      "dispatcher")
        self.port = self.dispatcher.wait_started()
        self.address = f"127.0.0.1:{self.port}"

    def _start(self, args, name):
        log_path = self.tmp_path / f"{name}-{len(self.servers)}.log"
        server = Server(args, log_path)
        self.servers.append(server)
        return server

    def start_worker(self, port=0, old_form=False):
        role = [] if old_form else ["worker"]  # `--dispatcher` alone: a worker
        return self._start(
            [*role, "--dispatcher", self.address, "--port", str(port),
             "--worker-address", "127.0.0.1:%port%"], "worker")

    def kill_all(self):
        for server in self.servers:
            server.kill()


@pytest.fixture
def cluster(tmp_path):
    cluster = Cluster(tmp_path)
    yield cluster
    cluster.kill_all()


def features(index, path):
    contents = rustfx.read_files(path, max_bytes=1 << 16)
    return {"index": index,
            "histogram": rustfx.byte_histogram(contents),
            "counts": rustfx.hashed_ngrams(contents, num_buckets=1 << 12,
                                           tokenizer="word", output="counts")}


def remote_features(index, path):
    element = features(index, path)
    # The pid of the process running this map: the worker's.
    element["worker"] = tf.strings.split(
        rustfx.read_files("/proc/self/stat"))[0]
    return element


def source(machine_files):
    paths = [machine_files[i % len(machine_files)] for i in range(ELEMENTS)]
    return tf.data.Dataset.from_tensor_slices(
        (tf.range(ELEMENTS, dtype=tf.int64), paths))


def local_results(machine_files):
    return {int(e["index"]): e for e in
            source(machine_files).map(features).as_numpy_iterator()}


def distributed(machine_files, cluster):
    return source(machine_files).map(remote_features).apply(
        tf.data.experimental.service.distribute(
            processing_mode="distributed_epoch",
            service=f"grpc://{cluster.address}", job_name="rustfx-test"))


def consume(dataset, on_element=lambda element, seen: None):
    """Reads the whole job in a thread, so a job that never ends fails the
    test after JOB_TIMEOUT instead of hanging it."""
    seen, errors = [], []

    def run():
        try:
            for element in dataset.as_numpy_iterator():
                seen.append(element)
                on_element(element, seen)
        except Exception as error:  # reported in the test's thread
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(JOB_TIMEOUT)
    assert not thread.is_alive(), (
        f"job not finished after {JOB_TIMEOUT} s ({len(seen)} elements)")
    assert not errors, errors
    return seen


def assert_equal_to_local(seen, local):
    for element in seen:
        want = local[int(element["index"])]
        np.testing.assert_array_equal(element["histogram"], want["histogram"])
        np.testing.assert_array_equal(element["counts"], want["counts"])


def test_two_workers_give_local_features_exactly_once(cluster, machine_files):
    workers = [cluster.start_worker(), cluster.start_worker(old_form=True)]
    for worker in workers:
        worker.wait_started()

    seen = consume(distributed(machine_files, cluster))

    indices = sorted(int(element["index"]) for element in seen)
    assert indices == list(range(ELEMENTS))  # exactly once, no failures
    assert_equal_to_local(seen, local_results(machine_files))
    pids = {int(element["worker"]) for element in seen}
    assert pids == {worker.process.pid for worker in workers}

    for server in [*workers, cluster.dispatcher]:
        server.terminate()


def test_killed_worker_loses_elements_but_repeats_none(cluster, machine_files):
    workers = [cluster.start_worker(), cluster.start_worker()]
    ports = [worker.wait_started() for worker in workers]
    victim, killed_at = workers[0], []

    def kill_mid_epoch(element, seen):
        if killed_at:
            return
        per_worker = [sum(int(e["worker"]) == w.process.pid for e in seen)
                      for w in workers]
        if min(per_worker) >= 5:  # both are serving the job
            os.kill(victim.process.pid, signal.SIGKILL)
            victim.process.wait()
            killed_at.append(len(seen))
            # What a supervisor does: the same worker again, same address.
            workers.append(cluster.start_worker(port=ports[0]))

    seen = consume(distributed(machine_files, cluster), kill_mid_epoch)

    assert killed_at and killed_at[0] < ELEMENTS, "no kill mid-epoch"
    indices = [int(element["index"]) for element in seen]
    assert len(indices) == len(set(indices)), "an element was repeated"
    assert set(indices) <= set(range(ELEMENTS))
    assert_equal_to_local(seen, local_results(machine_files))
    lost = ELEMENTS - len(indices)
    print(f"killed after {killed_at[0]} elements; {lost} lost")
    assert workers[-1].wait_started() == ports[0]


def test_a_server_whose_stop_blocks_still_exits_on_sigterm(tmp_path):
    # A worker serving a job its client abandoned can block in its
    # server's stop, in TF's C++. The process must exit anyway, status 0,
    # saying so: a supervisor's SIGTERM is not left hanging.
    script = ("import sys, threading\n"
              "import rustfx.service as s\n"
              "class Stuck:\n"
              "    def stop(self):\n"
              "        threading.Event().wait()\n"
              "s.STOP_SECONDS = 1.0\n"
              "s.start_worker = lambda *args: Stuck()\n"
              "s.bound_port = lambda server: 1\n"
              "sys.exit(s.main(['worker', '--dispatcher', 'localhost:1']))\n")
    log_path = tmp_path / "stuck.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen([sys.executable, "-c", script], stdout=log,
                                   stderr=subprocess.STDOUT,
                                   env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT
            while "started on port" not in log_path.read_text():
                assert process.poll() is None and time.monotonic() < deadline, \
                    log_path.read_text()[-3000:]
                time.sleep(0.1)
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0, log_path.read_text()[-3000:]
        finally:
            if process.poll() is None:
                process.kill()
    assert "did not stop within 1 s" in log_path.read_text()
