"""The feature cache under faults, where users run it: rustfx.files(cache=)
in a tf.data map (docs/safety.md, "Faults"). A cache is an accelerator: a
directory deleted mid-epoch, a database damaged under a running epoch or
between runs, a write lock held by another process, each gives the rows of
uncached extraction (the oracle: the same op without a cache), training
goes on, and the failure is counted or printed. A read-only directory
with no cache in it never stops the FeatureCache being made: the ops
extract uncached, saying why once (a read-only cache that holds entries
serves them: test_cache_read_only.py). The full disk is
test_cached_extraction.py's; kill -9 and two writers, test_feature_cache.py's;
the corpus shards, test_corpus_trust.py's."""

import glob
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
import tensorflow as tf

import rustfx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PE_FILES = sorted(p for p in glob.glob(os.path.join(ROOT, "tests/golden/pe/*/*"))
                  if os.path.isfile(p))[:24]
DB_FILE = "features.sqlite3"


def _epoch(files, cache, between=None):
    """One epoch of EMBER2024 vectors in a parallel tf.data map, batches of
    4, as bytes; `between(i)` runs after batch i."""
    ds = tf.data.Dataset.from_tensor_slices(tf.constant(files)).batch(4).map(
        lambda p: rustfx.ember_features(rustfx.files(p, cache=cache)),
        num_parallel_calls=tf.data.AUTOTUNE)
    rows = []
    for i, batch in enumerate(ds):
        rows.append(batch.numpy().tobytes())
        if between:
            between(i)
    return b"".join(rows)


@pytest.fixture(scope="module")
def expected():
    return _epoch(PE_FILES, None)


def test_the_directory_deleted_mid_epoch(tmp_path, expected):
    directory = tmp_path / "cache"
    cache = rustfx.FeatureCache(directory)
    assert _epoch(PE_FILES, cache) == expected

    def delete(i):
        if i == 1:
            shutil.rmtree(directory)

    assert _epoch(PE_FILES, cache, delete) == expected
    assert _epoch(PE_FILES, cache) == expected  # and the epochs after
    assert not directory.exists()  # nothing made it again behind the user's back


def _run(code, *args):
    """`code` in a new Python process (a new run of training): its stdout
    and stderr."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, done.stderr


EPOCH_IN_A_NEW_PROCESS = """
    import sys
    import tensorflow as tf
    import rustfx
    cache = rustfx.FeatureCache(sys.argv[1])
    files = sys.argv[2:]
    for _ in range(2):
        rows = rustfx.ember_features(rustfx.files(tf.constant(files), cache=cache))
        sys.stdout.write(rows.numpy().tobytes().hex() + "\\n")
    print(cache.stats())
"""


def test_a_database_damaged_under_running_epochs(tmp_path, expected):
    directory = tmp_path / "cache"
    cache = rustfx.FeatureCache(directory)
    assert _epoch(PE_FILES, cache) == expected
    cache.stats()  # committed
    # The rows are the extraction's (SQLite may go on serving the pages it
    # holds in memory or in its WAL, each row checked by its checksum; what
    # it reads from the damaged file fails, a miss).
    with open(directory / DB_FILE, "r+b") as f:
        f.write(b"\x5a" * 4096)
    for _ in range(2):
        assert _epoch(PE_FILES, cache) == expected


def test_a_database_replaced_by_garbage_between_runs_is_set_aside(tmp_path, expected):
    directory = tmp_path / "cache"
    out, _ = _run(EPOCH_IN_A_NEW_PROCESS, str(directory), *PE_FILES)
    assert "'entries': 24" in out.splitlines()[-1]
    # Replaced by garbage (with its WAL and index gone, as a restore from
    # a bad copy leaves it).
    for name in (DB_FILE + "-wal", DB_FILE + "-shm", DB_FILE):
        os.remove(directory / name)
    (directory / DB_FILE).write_bytes(b"\x5a" * 65536)
    # The next run: the damaged file is moved aside, a new cache started,
    # said once and counted; its second epoch reads what the first stored.
    out, err = _run(EPOCH_IN_A_NEW_PROCESS, str(directory), *PE_FILES)
    first, second, stats = out.splitlines()
    assert bytes.fromhex(first) == bytes.fromhex(second) == expected
    assert "the database was damaged" in err and "started a new cache" in err, err
    assert "'hits': 24" in stats and "'errors': 1" in stats, stats
    assert (directory / (DB_FILE + ".damaged")).read_bytes()[:4096] == b"\x5a" * 4096
    # And the run after it: all hits, nothing to say.
    out, err = _run(EPOCH_IN_A_NEW_PROCESS, str(directory), *PE_FILES)
    assert "'hits': 48" in out.splitlines()[-1] and "damaged" not in err


HOLD_THE_WRITE_LOCK = """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
    conn.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    sys.stdin.readline()  # held until the test says
    conn.execute("ROLLBACK")
"""


def test_a_write_lock_held_by_another_process_never_stops_an_epoch(tmp_path, expected):
    directory = tmp_path / "cache"
    cache = rustfx.FeatureCache(directory)
    half = len(PE_FILES) // 2
    assert _epoch(PE_FILES[:half], cache) == expected[:len(expected) // 2]
    cache.stats()  # committed
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOLD_THE_WRITE_LOCK),
                               str(directory / DB_FILE)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        # Hits and misses while another process holds the write lock: the
        # epochs end (the lock still held), exact.
        for _ in range(2):
            assert _epoch(PE_FILES, cache) == expected
        assert holder.poll() is None
    finally:
        holder.communicate("go\n", timeout=60)
    # The lock released within the busy timeout: the misses are stored.
    stats = cache.stats()
    assert stats["entries"] == len(PE_FILES) and stats["errors"] == 0, stats


def test_a_read_only_directory_without_a_cache_extracts_uncached(tmp_path, capfd, expected):
    # Needs root to mount (skipped otherwise); root ignores chmod.
    mount = tmp_path / "ro"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        cache = rustfx.FeatureCache(mount / "cache")  # no error: training goes on
        assert _epoch(PE_FILES, cache) == expected
        assert cache.stats()["errors"] == 1
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)
    err = capfd.readouterr().err
    assert err.count("extracting without the feature cache") == 1, err
    assert "Read-only file system" in err and "Rustfx>" not in err, err
