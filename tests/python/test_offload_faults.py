"""rustfx.offload's remote thread and its one-epoch-at-a-time guard.

An epoch's remote thread reads the workers' tf.data service job. When the
epoch ends (all its files delivered, an exception, or the generator closed
or dropped), the thread must end and be joined, even when the job can no
longer deliver (a worker killed mid-epoch, or no worker at all: TF's client
then waits forever), so nothing piles up epoch after epoch; a read that
outlives its cancel stops no later epoch's job. And an Offload
iterated twice at once refuses the second iteration."""

import gc
import importlib
import os
import threading
import time

import numpy as np
import pytest

import rustfx
from rustfx import pipeline
from test_data_service import cluster  # noqa: F401  (the fixture: a dispatcher process)
from test_offload import PE_FILES, assert_exact, ember, local_rows, ngrams, run_epoch, text_files


def remote_threads():
    return [t for t in threading.enumerate() if t.name == "rustfx-offload-remote"]


def tasks():
    """This process's threads, Python's and TF's."""
    return len(os.listdir("/proc/self/task"))


def tasks_down_to(bound, timeout=15.0):
    """This process's threads once they are down to `bound`, or at `timeout`.

    TF's threads of an ended job exit asynchronously, within about a second
    (measured: 17 at the epoch's end, 11 a second later), so a count taken
    at once is noise; a leak stays above the bound however long we wait."""
    deadline = time.monotonic() + timeout
    while tasks() > bound and time.monotonic() < deadline:
        time.sleep(0.25)
    return tasks()


def tasks_after_epoch(after):
    """The thread count to append to `after` (earlier epochs' counts): the
    first epoch's once TF's threads had 2 s to exit, each later one's once
    down to the first's (see tasks_down_to)."""
    return tasks_down_to(after[0]) if after else tasks_down_to(0, timeout=2)


def started_since(before):
    """Python threads started since `before` (a set of threads) and alive,
    once an epoch's retiring thread (which drops its local iterator while
    the next epoch runs, rustfx.offload._retire) had 15 s to end."""
    for thread in threading.enumerate():
        if thread.name == "rustfx-offload-retire":
            thread.join(15.0)
    return [t for t in threading.enumerate() if t not in before]


def test_a_worker_killed_mid_epoch_its_thread_is_joined(cluster):  # noqa: F811
    pipe = pipeline.from_files(PE_FILES * 4, ember, batch_size=8)
    off = rustfx.offload(pipe, cluster.address, labels=np.arange(len(pipe.paths)),
                         remote="always")
    expected = local_rows(pipe)
    after = []
    for _ in range(2):  # each epoch, a new worker killed once it delivered
        server = cluster.start_worker()
        server.wait_started()
        killed, before = [], set(threading.enumerate())

        def kill_once_remote_delivered(_, server=server, killed=killed):
            if not killed and off.report["remote"] > 0:
                server.kill()
                killed.append(off.report["remote"])

        got = run_epoch(off, kill_once_remote_delivered)
        assert killed, f"the worker delivered nothing before the epoch ended: {off.report}"
        assert_exact(got, expected)  # every file exactly once, local FX's rows
        assert off.report["remote_joined"], off.report
        assert not remote_threads() and not started_since(before)
        after.append(tasks_after_epoch(after))
    # TF's threads of the abandoned job (its client's) went with it: the
    # second epoch left no more than the first (each left ~9 before).
    assert after[1] <= after[0], after


def test_a_read_that_outlives_its_cancel_stops_no_later_job(cluster, monkeypatch):  # noqa: F811
    """An epoch's read that does not end when cancelled (as TF's client
    can, waiting on a worker killed mid-task under load) is left behind,
    and the next epochs make their jobs beside it, up to LINGERING_MOST;
    past that, an epoch runs locally and says why; once they end, the
    workers serve again. Every epoch exact."""
    offload_module = importlib.import_module("rustfx.offload")  # rustfx.offload: the function

    release, made = threading.Event(), []

    class Deaf(offload_module.CancellableIterator):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

        def next(self):  # deaf to its cancel until released
            release.wait()
            return super().next()

    pipe = pipeline.from_files(PE_FILES * 4, ember, batch_size=8)
    off = rustfx.offload(pipe, cluster.address, labels=np.arange(len(pipe.paths)),
                         remote="always")
    expected = local_rows(pipe)
    cluster.start_worker().wait_started()
    monkeypatch.setattr(offload_module, "JOIN_SECONDS", 0.5)
    monkeypatch.setattr(offload_module, "CancellableIterator", Deaf)
    try:
        for lingering in range(offload_module.LINGERING_MOST):
            with pytest.warns(RuntimeWarning, match="did not end within"):
                assert_exact(run_epoch(off), expected)
            assert len(made) == lingering + 1 and not off.report["remote_joined"], off.report
        assert_exact(run_epoch(off), expected)  # no job: local, and why
        assert len(made) == offload_module.LINGERING_MOST, off.report
        assert off.report["local"] == len(expected), off.report
        assert "cancelled reads of 2 past epochs' jobs" in off.report["remote_error"], off.report
    finally:
        release.set()
    for thread in remote_threads():
        thread.join(15.0)
    assert not remote_threads()
    monkeypatch.setattr(offload_module, "CancellableIterator", Deaf.__base__)
    for _ in range(6):  # a new job reaches the worker within a few epochs
        assert_exact(run_epoch(off), expected)
        if off.report["remote"]:
            break
    assert off.report["remote"] > 0 and off.report["remote_joined"], off.report


def test_the_epochs_end_does_not_wait_for_the_jobs_delete(cluster, monkeypatch):  # noqa: F811
    """Deleting the job's iterator waits for TF's client threads (a retry
    of a lost worker sleeps up to 10 s): it runs on a thread of its own,
    so the epoch's remote thread is joined at once, and the delete ends
    later, off the trainer's path."""
    offload_module = importlib.import_module("rustfx.offload")
    deleted = threading.Event()

    class SlowDelete(offload_module.CancellableIterator):
        def __del__(self):
            time.sleep(5.0)
            deleted.set()

    pipe = pipeline.from_files(text_files(96), ngrams, batch_size=16)
    off = rustfx.offload(pipe, cluster.address, labels=np.arange(96), remote="always")
    cluster.start_worker().wait_started()
    monkeypatch.setattr(offload_module, "JOIN_SECONDS", 1.0)
    monkeypatch.setattr(offload_module, "CancellableIterator", SlowDelete)
    assert_exact(run_epoch(off), local_rows(pipe))
    assert off.report["remote_joined"] and not remote_threads(), off.report
    assert not deleted.is_set()  # the delete still under way, on its own thread
    assert deleted.wait(15.0)


def test_with_no_worker_each_epochs_thread_is_joined():
    # No worker: the job never delivers, and its thread waits in TF's
    # client; the epoch (local) ends it.
    pipe = pipeline.from_files(text_files(96), ngrams, batch_size=16)
    off = rustfx.offload(pipe, labels=np.arange(96), remote="always")
    expected, after = local_rows(pipe), []
    for _ in range(3):
        before = set(threading.enumerate())
        assert_exact(run_epoch(off), expected)
        assert off.report["remote_joined"] and not remote_threads(), off.report
        assert not started_since(before)
        after.append(tasks_after_epoch(after))
    assert after[2] <= after[0], after


def test_an_offload_iterated_twice_at_once_refuses_the_second():
    pipe = pipeline.from_files(text_files(64), ngrams, batch_size=16)
    off = rustfx.offload(pipe, labels=np.arange(64))
    first = iter(off)
    next(first)
    second = iter(off)
    with pytest.raises(RuntimeError, match="already being iterated"):
        next(second)
    with pytest.raises(RuntimeError, match="already being iterated"):
        next(iter(off))  # the refused one did not free the first's guard
    assert sum(len(labels) for _, labels in first) == 64 - 16  # the first goes on
    # Sequential epochs: fine, exact.
    assert_exact(run_epoch(off), local_rows(pipe))
    assert_exact(run_epoch(off), local_rows(pipe))


@pytest.mark.parametrize("how", ["close", "garbage"])
def test_an_abandoned_epoch_frees_the_guard_and_its_thread(how):
    pipe = pipeline.from_files(text_files(64), ngrams, batch_size=16)
    off = rustfx.offload(pipe, labels=np.arange(64), remote="always")
    epoch = iter(off)
    next(epoch)
    if how == "close":
        epoch.close()
    else:
        del epoch
        gc.collect()
    assert not remote_threads() and off.report["remote_joined"]
    assert not off.report["finished"]
    assert_exact(run_epoch(off), local_rows(pipe))


def test_the_guard_is_free_once_the_last_batch_is_out():
    # A consumer that stops at the epoch's size (Keras fit on dataset())
    # never asks past the last batch: the next epoch must start anyway.
    pipe = pipeline.from_files(text_files(64), ngrams, batch_size=16)
    off = rustfx.offload(pipe, labels=np.arange(64))
    epoch, seen = iter(off), 0
    while seen < 64:
        seen += len(next(epoch)[1])
    assert off.report["finished"] and not remote_threads()
    assert_exact(run_epoch(off), local_rows(pipe))
    assert list(epoch) == []  # the first then ends with nothing more
