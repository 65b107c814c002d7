"""rustfx.offload's own workers, on this machine (rustfx.workers.Local):
an epoch through them has every file exactly once with local FX's rows
(the oracle: the FilesPipeline run locally); close() stops them; a worker
killed mid-epoch is replaced; a trainer killed with -9 leaves none behind
(their watchdog). The Ray launcher: test_offload_workers_ray.py; the
autoscaler's rules: test_offload_autoscaler.py."""

import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import rustfx
from rustfx import pipeline
from test_offload import PE_FILES, assert_exact, ember, local_rows, run_epoch

HERE = os.path.dirname(os.path.abspath(__file__))


def alive(pid):
    """Running (a zombie, reaped by nobody yet, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(condition, seconds, poll=0.1):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(poll)
    return condition()


def serving(off, count, seconds=60):
    return wait_until(lambda: off._pool.ready >= count, seconds)


def mark_setup(directory):
    """A worker's `setup`: leaves its pid in `directory`."""
    open(os.path.join(directory, str(os.getpid())), "w").close()


def test_arguments_are_checked():
    pipe = pipeline.from_files(PE_FILES, ember, batch_size=8)
    with pytest.raises(ValueError, match="not both"):
        rustfx.offload(pipe, "localhost:1", workers=rustfx.workers.Local(1))
    with pytest.raises(TypeError, match="rustfx.workers.Local"):
        rustfx.offload(pipe, workers=4)
    for bad in (dict(max_workers=0), dict(max_workers=2, min_workers=3),
                dict(min_workers=-1), dict(setup="not callable")):
        with pytest.raises(ValueError):
            rustfx.workers.Local(**bad)
    with pytest.raises(ValueError, match="cpus_per_worker"):
        rustfx.workers.Ray(2, cpus_per_worker=0)


def test_local_workers_epochs_exact_one_replaced_all_stopped_at_close(tmp_path):
    pipe = pipeline.from_files(PE_FILES * 4, ember, batch_size=8)
    expected = local_rows(pipe)
    setup = functools.partial(mark_setup, str(tmp_path))
    with rustfx.offload(pipe, workers=rustfx.workers.Local(1, min_workers=1, setup=setup),
                        labels=np.arange(len(pipe.paths)), remote="always") as off:
        assert serving(off, 1), off._pool.summary(0)
        first = off._pool.handles[0].pid
        assert os.listdir(tmp_path) == [str(first)]  # setup ran in the worker
        for _ in range(4):  # under load, a short epoch can end before its job reaches them
            assert_exact(run_epoch(off), expected)
            if off.report["remote"] > 0:
                break
        report = off.report
        assert report["remote"] > 0 and report["workers"] == [(0.0, 1)], report
        assert report["workers_max"] == 1 and report["workers_started"] == 1
        # Killed mid-epoch: the epoch is exact, and the worker replaced.
        killed = []

        def kill_once_remote_delivered(_):
            if not killed and off.report["remote"] > 0:
                os.kill(first, signal.SIGKILL)
                killed.append(time.monotonic())

        for _ in range(4):
            assert_exact(run_epoch(off, kill_once_remote_delivered), expected)
            if killed:
                break
        assert killed, off.report
        assert wait_until(lambda: off._pool.replaced == 1 and off._pool.ready == 1, 30)
        pids = [h.pid for h in off._pool.handles]
        assert first not in pids
        assert sorted(os.listdir(tmp_path)) == sorted(map(str, [first, *pids]))
        # Later epochs: the replacement delivers.
        for _ in range(4):
            assert_exact(run_epoch(off), expected)
            if off.report["remote"] > 0:
                break
        assert off.report["remote"] > 0 and off.report["workers_replaced"] == 1, off.report
        counts = [c for _, c in off.workers_over_time]  # the kill, over the whole run
        assert counts[0] == 0 and counts[-1] == 1 and 0 in counts[1:], off.workers_over_time
        times = [t for t, _ in off.workers_over_time]
        assert times == sorted(times) and times[0] == 0.0
    assert wait_until(lambda: not any(alive(p) for p in pids), 10), "a worker outlived close()"


def trainer_killed(kind, tmp_path, address=None, lingering=()):
    """Runs tests/python/offload_trainer.py, kills it with -9 once its
    workers serve; returns (what it wrote, the pids still running 20 s
    later, or as soon as none is but those named with a prefix in
    `lingering`)."""
    out = str(tmp_path / f"pids-{kind}.json")
    log = open(tmp_path / "trainer.log", "w")
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "offload_trainer.py"), kind, out,
                             *([address] if address else [])], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 150
        while not os.path.exists(out):
            assert proc.poll() is None and time.monotonic() < deadline, \
                (tmp_path / "trainer.log").read_text()[-3000:]
            time.sleep(0.2)
    finally:
        proc.kill()
        proc.wait()
    with open(out) as f:
        pids = json.load(f)
    names = pids.get("names", {})
    watched = {p for p in set(pids["workers"]) | set(pids["descendants"])
               if not lingering or not names.get(str(p), "").startswith(lingering)}
    wait_until(lambda: not any(alive(p) for p in watched), 20, poll=0.25)
    watched = set(pids["workers"]) | set(pids["descendants"])
    return pids, {p for p in watched if alive(p)}


def test_trainer_killed_leaves_no_local_worker(tmp_path):
    pids, left = trainer_killed("local", tmp_path)
    assert pids["workers"] and set(pids["workers"]) <= set(pids["descendants"])
    assert not left, f"left running after the trainer's kill -9: {left}"


def test_a_pipelines_cache_is_opened_by_its_workers(tmp_path):
    """The cache's options are attrs of the ops in the graph the workers
    run: a Local worker fills the same directory."""
    import hashlib

    cache = rustfx.FeatureCache(str(tmp_path / "cache"))
    pipe = pipeline.from_files(PE_FILES * 3, ember, batch_size=8, cache=cache)
    distinct = len({hashlib.sha256(open(p, "rb").read()).digest() for p in PE_FILES})
    with rustfx.offload(pipe, workers=rustfx.workers.Local(max_workers=1, min_workers=1),
                        labels=np.arange(len(pipe.paths)), remote="only") as off:
        assert off.cut == "after_fx"  # with a cache the workers extract
        assert serving(off, 1), off._pool.summary(0)
        got = run_epoch(off)
        assert off.report["remote"] > 0, off.report
        # Every distinct file stored once, by whichever side extracted it;
        # this process extracted fewer than all (the worker stored the rest).
        assert wait_until(lambda: cache.stats()["entries"] == distinct, 20), cache.stats()
        assert cache.stats()["misses"] < distinct, cache.stats()
    assert_exact(got, local_rows(pipeline.from_files(PE_FILES * 3, ember, batch_size=8)))


def test_the_stall_picture_draws_the_worker_count_over_time():
    import re

    from rustfx import stall_picture

    report = {"workers": [(0.0, 0), (1.0, 2), (3.0, 1)], "seconds": 4.0, "workers_mean": 1.25}
    svg = stall_picture._svg_workers(report, width=960, height=160)
    points = re.search(r'class="workers" points="([^"]+)"', svg).group(1).split()
    # Back from pixels (60 px left, 860 wide; 10 px top, 110 high; 2 at the top).
    drawn = [(round((float(x) - 60) / 860 * 4, 6), round((120 - float(y)) / 110 * 2, 6))
             for x, y in (p.split(",") for p in points)]
    assert drawn == [(0, 0), (1, 0), (1, 2), (3, 2), (3, 1), (4, 1)]
    assert "mean 1.25 workers" in svg


def test_the_reports_worker_mean_is_time_weighted_and_never_negative():
    # The pool's thread can record a change after summary() read the clock:
    # it is after the epoch, and had made the mean -0.00 (bench-scale).
    from rustfx.workers import _Pool

    pool = object.__new__(_Pool)  # its figures only: no launcher, no thread
    pool.lock, pool.started, pool.replaced, pool.error = threading.Lock(), 1, 0, None
    since = time.perf_counter() - 4.0
    pool.timeline = [(since - 1.0, 0), (since + 1.0, 2), (since + 3.0, 1),
                     (time.perf_counter() + 5.0, 3)]
    summary = pool.summary(since)
    # 0 for 1 s, 2 for 2 s, 1 for the last 1 s or so: (4 + 1) / 4
    assert summary["workers_mean"] == pytest.approx(5 / 4, rel=0.02)
    assert summary["workers_max"] == 2
    assert [c for _, c in summary["workers"]] == [0, 2, 1]
    pool.timeline = [(since - 1.0, 0), (time.perf_counter() + 0.0004, 1)]
    assert pool.summary(since)["workers_mean"] >= 0.0
