"""rustfx.offload: FX split between the trainer's own pipeline and tf.data
service workers (`rustfx-worker`) in other processes. Whatever the split,
and with a worker killed mid-epoch or no worker at all, every file comes
exactly once per epoch, with the rows local FX gives (the oracle: the
FilesPipeline's own dataset, run locally)."""

import glob
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import rustfx
from rustfx import pipeline
from test_data_service import cluster  # noqa: F401  (the fixture: a dispatcher process)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PE_FILES = sorted(p for p in glob.glob(os.path.join(ROOT, "tests", "golden", "pe", "**", "*"),
                  recursive=True) if os.path.isfile(p))


def text_files(n):
    paths = sorted(p for p in glob.glob(os.path.join(sys.prefix, "lib", "python3*",
                                                     "site-packages", "numpy", "**", "*.py"),
                                        recursive=True) if os.path.getsize(p) > 0)
    return (paths * (n // max(1, len(paths)) + 1))[:n]


def ngrams(files):
    return rustfx.hashed_ngrams(files, num_buckets=1 << 20, ngram_widths=(1, 2))


def ember(files):
    return rustfx.ember_features(files)


def local_rows(pipe):
    """The oracle: each file's row from the pipeline run locally, in order."""
    rows = []
    for batch in pipe.dataset():
        rows += [r.numpy() for r in batch]
    return rows


def run_epoch(off, on_batch=None):
    """{file index: row} of one epoch; fails on a file seen twice."""
    got = {}
    for i, (rows, labels) in enumerate(off):
        for row, label in zip(rows, labels.numpy()):
            assert int(label) not in got, f"file {label} delivered twice"
            got[int(label)] = row.numpy()
        if on_batch:
            on_batch(i)
    return got


def assert_exact(got, expected):
    assert sorted(got) == list(range(len(expected))), "files missing or extra"
    for i, row in enumerate(expected):
        np.testing.assert_array_equal(got[i], row, err_msg=f"file {i}")


@pytest.fixture
def worker(cluster):
    cluster.start_worker().wait_started()
    return cluster


@pytest.mark.parametrize("remote", ["always", 0.5])
def test_split_between_local_and_a_worker_is_exact(worker, remote):
    # 0.5: the local sweep takes at most every other batch.
    pipe = pipeline.from_files(PE_FILES * 3, ember, batch_size=16)
    off = rustfx.offload(pipe, worker.address, labels=np.arange(len(pipe.paths)),
                         remote=remote)
    expected = local_rows(pipe)
    for _ in range(2):  # two epochs, each a new job
        assert_exact(run_epoch(off), expected)
        report = off.report
        assert report["finished"] and report["local"] + report["remote"] == len(expected)
        if remote == 0.5:  # the cap the user chose, 1 only for a window after a stall
            assert set(report["windows"]) <= {"0.50", "1.00"}, report
            assert "1.00" not in report["windows"] or report["stalls"], report
    # The cut ships the fewer bytes, on the first batch.
    first = pipe.paths[:16]
    file_bytes = sum(os.path.getsize(p) for p in first)
    feature_bytes = sum(row.nbytes for row in expected[:16])
    assert off.cut == ("after_fx" if feature_bytes < file_bytes else "before_fx")


def test_workers_only_pauses_the_local_sweep(worker):
    pipe = pipeline.from_files(text_files(800), ngrams, batch_size=16)
    off = rustfx.offload(pipe, worker.address, labels=np.arange(800), remote="only")
    assert_exact(run_epoch(off), local_rows(pipe))
    report = off.report
    # Local batches only before the worker's first batch (the job starting)
    # and on a stall; the worker delivered most of the epoch.
    assert report["remote"] > 400, report
    assert set(report["windows"]) <= {"0.00", "1.00"}, report  # 1.00 after a stall only
    assert "1.00" not in report["windows"] or report["stalls"] > 0, report


def test_cut_before_fx_when_features_outgrow_the_files(worker):
    pipe = pipeline.from_files(text_files(600), ngrams, batch_size=32)
    off = rustfx.offload(pipe, worker.address, labels=np.arange(600), remote="always")
    assert off.cut == "before_fx"  # int64 ids outweigh the text they came from
    assert_exact(run_epoch(off), local_rows(pipe))
    forced = rustfx.offload(pipe, worker.address, labels=np.arange(600), cut="after_fx",
                            remote="always")
    assert_exact(run_epoch(forced), local_rows(pipe))


@pytest.mark.parametrize("remote", ["always", "only"])
def test_worker_killed_mid_epoch_the_epoch_finishes_exactly(cluster, remote):
    # "only": the local sweep is paused while the worker delivers, and
    # resumes when it stops.
    server = cluster.start_worker()
    server.wait_started()
    pipe = pipeline.from_files(PE_FILES * 4, ember, batch_size=8)
    off = rustfx.offload(pipe, cluster.address, labels=np.arange(len(pipe.paths)),
                         remote=remote)
    killed = []

    def kill_once_remote_delivered(_):
        if not killed and off.report["remote"] > 0:
            server.process.send_signal(signal.SIGKILL)
            killed.append(off.report["remote"])

    start = time.monotonic()
    got = run_epoch(off, kill_once_remote_delivered)
    assert killed, f"the worker delivered nothing before the local sweep ended: {off.report}"
    assert_exact(got, local_rows(pipe))
    assert off.report["finished"] and off.report["local"] > 0
    assert remote == "always" or off.report["stalls"] > 0
    assert time.monotonic() - start < 120
    # The next epoch runs with the worker gone: locally, all of it.
    assert_exact(run_epoch(off), local_rows(pipe))
    assert off.report["remote"] == 0


def test_no_worker_runs_locally():
    pipe = pipeline.from_files(text_files(200), ngrams, batch_size=32)
    off = rustfx.offload(pipe, labels=np.arange(200))  # its own dispatcher, no worker
    assert_exact(run_epoch(off), local_rows(pipe))
    assert off.report["local"] == 200 and off.report["remote"] == 0


def test_keras_fit_and_a_custom_loop_on_the_dataset(worker):
    import keras

    pipe = pipeline.from_files(PE_FILES, ember, batch_size=16)
    labels = np.array([i % 2 for i in range(len(PE_FILES))], np.float32)
    off = rustfx.offload(pipe, worker.address, labels=labels, remote="always")
    ds = off.dataset()
    seen = 0
    assert int(ds.cardinality()) == -(-len(PE_FILES) // 16)  # fit knows each epoch's steps
    for x, y in ds:  # a custom loop
        assert x.shape[1] == rustfx.ember_features(tf.constant([b""])).shape[1]
        seen += int(tf.shape(y)[0])
    assert seen == len(PE_FILES)
    model = keras.Sequential([keras.Input((x.shape[1],)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(ds, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    assert off.report["finished"]


def simulate(rate_of_cap, windows=600):
    """The arms a governor runs over `windows` one-batch windows whose
    files/s is rate_of_cap(local cap) (None: the local sweep alone)."""
    from rustfx.offload_governor import Governor
    governor, now, runs = Governor("when_waiting", window=1, now=0.0), 0.0, []
    for _ in range(windows):
        runs.append(governor.local_cap)
        step = 1.0 / rate_of_cap(governor.local_cap)  # all of it waiting: input-bound
        now += step
        governor.batch(1, step, now)
    return runs


@pytest.mark.parametrize("best", [None, 1.0, 0.65, 0.35, 0.0])
def test_the_governor_climbs_to_the_fastest_split(best):
    # files/s peaks at the local cap `best` (None: the workers cost more than
    # they give), 10% lower per arm away from it. Most windows must run it;
    # the rest are the probes that keep measuring.
    from rustfx.offload_governor import Governor
    arms = Governor.ARMS
    runs = simulate(lambda cap: 1.0 - 0.1 * abs(arms.index(cap) - arms.index(best)))
    assert runs.count(best) > 0.8 * len(runs), {a: runs.count(a) for a in arms}


@pytest.mark.parametrize("best", [None, 1.0, 0.65, 0.0])
def test_the_governor_keeps_its_files_per_second_through_noisy_windows(best):
    # Each batch's time drawn around its arm's (lognormal, sigma 0.5: PE
    # files' sizes swing a batch's time so), the best arm 10% over its
    # neighbours: it must deliver >= 80% of the best arm's files/s (judged
    # on one window's rate, or by 2%, a governor wanders: 0.70 at cap 0).
    import random

    from rustfx.offload_governor import Governor
    arms = Governor.ARMS

    def files_per_second(rate_of_cap, seed, seconds=300):
        rng = random.Random(seed)
        governor, now, files = Governor("when_waiting", window=1, now=0.0), 0.0, 0
        while now < seconds:
            step = 1.0 / (rate_of_cap(governor.local_cap) * rng.lognormvariate(0, 0.5))
            now += step
            files += 1
            governor.batch(1, step, now)
        return files / now

    def rate(cap):
        return 10 * (1.0 - 0.1 * abs(arms.index(cap) - arms.index(best)))

    got = sum(files_per_second(rate, seed) for seed in range(6))
    ideal = sum(files_per_second(lambda cap: rate(best), seed) for seed in range(6))
    assert got >= 0.8 * ideal, got / ideal


def test_the_governor_probes_at_least_every_10_seconds_of_slow_windows():
    # Arms all alike: every probe loses and the interval doubles to 64
    # windows; at 2 s a window that was 2 minutes on one arm, right or wrong.
    from rustfx.offload_governor import Governor
    governor, now, probes, last = Governor("when_waiting", window=1, now=0.0), 0.0, [], None
    for _ in range(400):
        now += 2.0
        governor.batch(1, 2.0, now)
        if governor.probe_from is not None and last is None:
            probes.append(now)
        last = governor.probe_from
    gaps = [b - a for a, b in zip(probes, probes[1:])]
    assert len(probes) > 50 and max(gaps) <= Governor.PROBE_MOST_SECONDS + 2 * 2.0, gaps


def test_the_governor_leaves_an_epochs_ramp_out():
    # An epoch's first windows, before the workers' first batch, run at the
    # local sweep's rate whatever the arm (its cap waits for no worker yet):
    # on a workers' arm they are not its rate, and a probe there won on them.
    from rustfx.offload_governor import Governor

    def governor_on_a_probe():
        governor, now = Governor("when_waiting", window=1, now=0.0), 0.0
        while governor.probe_from is None:
            now += 0.3
            governor.batch(10, 0.3, now)
        return governor, now

    governor, now = governor_on_a_probe()
    arm, origin, rate = governor.arm, governor.probe_from, governor.rates[governor.arm]
    for _ in range(20):  # ramp windows at 3x: nothing recorded, the probe goes on
        now += 0.3
        governor.batch(30, 0.3, now, ramp=True)
    assert (governor.arm, governor.probe_from, governor.rates[arm]) == (arm, origin, rate)
    for windows in range(1, 10):  # the same windows as the arm's own: the probe ends
        now += 0.3
        governor.batch(30, 0.3, now)
        if (governor.arm, governor.probe_from) != (arm, origin):
            break
    assert windows <= 4 and governor.rates[arm] == pytest.approx(100), governor.rates


@pytest.mark.parametrize("batches_per_epoch", [3, 12])
def test_the_governor_leaves_the_local_sweep_in_epochs_shorter_than_a_probe(batches_per_epoch):
    # Epochs of a few windows (1-3 s: a few hundred PE files), the workers'
    # arms at 2x the local sweep but for each epoch's first batch (their
    # job starting: a ramp). Each epoch's end had sent a probe back to the
    # local sweep and counted the next down from the start: 67% and 99% of
    # the batches local, a run at half the files/s it could have.
    from rustfx.offload_governor import Governor
    governor, now, runs = Governor("when_waiting", window=1, now=0.0), 0.0, []
    for _ in range(60):
        governor.new_epoch(now)
        for batch in range(batches_per_epoch):
            cap, ramp = governor.local_cap, batch == 0
            runs.append(cap)
            step = 32 / (300.0 if cap is None or ramp else 600.0)
            now += step
            governor.batch(32, step, now, ramp=ramp and cap is not None)
    assert runs.count(None) < 0.25 * len(runs), {a: runs.count(a) for a in Governor.ARMS}


@pytest.mark.parametrize("weighed", [True, False])
def test_the_governor_weighs_files_by_their_bytes(weighed):
    # Every capped arm alike (the local sweep alone at half their rate),
    # each batch's time its files' bytes plus FILE_BYTES each, the files
    # 100 kB to 3 MB (PE's). Weighed, probes never win: the governor stays
    # on cap 1 but for them. By files alone, the sizes that fell in a
    # probe's windows win it: the arm wanders (the test failing so).
    import random

    from rustfx.offload_governor import FILE_BYTES, Governor, work
    rng, now, runs = random.Random(0), 0.0, []
    governor = Governor("when_waiting", window=4, now=0.0)
    rate = (FILE_BYTES + (1 << 20)) * 100  # a second: 100 files of 1 MB
    for _ in range(4000):
        sizes = [int(rng.lognormvariate(13, 1.0)) % (3 << 20) + (100 << 10) for _ in range(8)]
        step = work(sizes) / (rate / 2 if governor.local_cap is None else rate)
        now += step
        runs.append(governor.local_cap)
        governor.batch(len(sizes), step, now, work=work(sizes) if weighed else None)
    on_cap_1 = runs.count(1.0) / len(runs)
    assert (on_cap_1 > 0.85) if weighed else (on_cap_1 < 0.5), on_cap_1


def test_offload_weighs_each_file_by_its_size_stated_once(tmp_path):
    # The Offload's measure for the governor: each file's size, stat'ed
    # when first delivered (later changes unseen), at most max_bytes; one
    # that cannot be stat'ed weighs as empty.
    from rustfx.offload_governor import work
    sizes = [0, 10, 3 << 20, 5000]
    paths = []
    for i, size in enumerate(sizes):
        paths.append(str(tmp_path / f"f{i}"))
        with open(paths[-1], "wb") as f:
            f.write(b"x" * size)
    paths.append(str(tmp_path / "missing"))
    off = rustfx.offload(pipeline.from_files(paths, ngrams, batch_size=2, max_bytes=1 << 20),
                         cut="after_fx")
    everything = np.arange(len(paths))
    assert off._work(everything) == work([0, 10, 1 << 20, 5000, 0])
    os.truncate(paths[2], 0)
    assert off._work(np.array([2, 3])) == work([1 << 20, 5000])
    assert work([10, 5000], 0) == work([0, 0])  # max_bytes=0 reads nothing


def test_the_governor_stays_local_unless_the_workers_pay_5_percent():
    from rustfx.offload_governor import Governor
    runs = simulate(lambda cap: 1.0 if cap is None else 1.03)
    assert runs.count(None) > 0.8 * len(runs), {a: runs.count(a) for a in Governor.ARMS}
    idle = Governor("when_waiting", window=1, now=0.0)
    idle.batch(1, 0.0, 1.0)
    assert idle.local_cap is None  # the trainer did not wait: no workers
    idle.batch(1, 0.04, 2.0)  # waited 4% of the window: not a stall, still none
    assert idle.local_cap is None


def test_the_governor_resumes_the_local_sweep_when_the_workers_stall_or_end():
    from rustfx.offload_governor import Governor
    governor = Governor("only", window=4, now=0.0)
    assert governor.local_cap == 0.0  # the local sweep paused
    governor.stalled(1.0)
    assert governor.local_cap == 1.0  # both sides as they come
    governor.gone(2.0)
    assert governor.local_cap is None
    for t in range(3, 40):  # the workers' job is over: local for good
        governor.batch(1, 1.0, float(t))
        assert governor.local_cap is None


def test_bad_arguments_say_what_is_allowed():
    pipe = pipeline.from_files(PE_FILES[:2], ember)
    with pytest.raises(ValueError, match="cut must be one of"):
        rustfx.offload(pipe, "localhost:1", cut="middle")
    for bad in ("sometimes", 1.5, -0.1, True):
        with pytest.raises(ValueError, match="remote must be one of .* or a local cap from 0 to 1"):
            rustfx.offload(pipe, "localhost:1", remote=bad)
    with pytest.raises(ValueError, match="labels has 1 rows for 2 files"):
        rustfx.offload(pipe, "localhost:1", labels=[0])
    with pytest.raises(TypeError, match="FilesPipeline"):
        rustfx.offload(tf.data.Dataset.range(3), "localhost:1")


def test_rustfx_worker_command_is_the_service_worker(tmp_path):
    # The console script's function, run as the installed script would.
    out = subprocess.run([sys.executable, "-c", "import sys; from rustfx.service import "
                          "worker_main; sys.exit(worker_main())", "--help"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "--dispatcher" in out.stdout, out.stderr
