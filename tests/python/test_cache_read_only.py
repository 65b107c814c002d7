"""A feature cache on a read-only file system serves (docs/feature_cache.md,
"Read-only caches"): through the core's C ABI (rustfx_core.FeatureCache)
and through the TF ops (rustfx.files(cache=)), every stored file is a hit,
the rows equal uncached extraction, nothing is written (the files' names,
sizes and times unchanged) and it is said once. And a cache damaged under a
live handle never makes rustfx.FeatureCache(...) raise.

The read-only file system is a bind mount remounted read-only (root
ignores chmod); the tests skip where mounting is not permitted."""

import contextlib
import glob
import os
import shutil
import subprocess
import sys

import pytest
import tensorflow as tf
from conftest import same_rows

import rustfx
import rustfx_core

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PE_FILES = sorted(p for p in glob.glob(os.path.join(ROOT, "tests/golden/pe/*/*"))
                  if os.path.isfile(p))[:16]
STORED, NEW = PE_FILES[:12], PE_FILES[12:]
DB_FILE = "features.sqlite3"
SAID = "cannot be written"


@contextlib.contextmanager
def read_only_view(source, tmp_path):
    """`source` seen through a read-only bind mount."""
    view = tmp_path / "read-only-view"
    view.mkdir()
    if subprocess.run(["mount", "--bind", str(source), str(view)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot bind-mount here (needs root)")
    try:
        remount = subprocess.run(["mount", "-o", "remount,bind,ro", str(view)],
                                 capture_output=True)
        if remount.returncode != 0:
            pytest.skip(f"cannot remount read-only: {remount.stderr!r}")
        yield view
    finally:
        subprocess.run(["umount", "-l", str(view)], capture_output=True)


def snapshot(directory):
    """Every file of `directory`: name, size, modification time."""
    return sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns)
                  for e in os.scandir(directory))


def filled(directory):
    """A cache of STORED's EMBER2024 vectors, its handle closed (so its
    WAL is checkpointed into the database, as a finished fill leaves it)."""
    cache = rustfx_core.FeatureCache(directory)
    cache.extract_files(rustfx_core.FeatureSpec("ember_features"), STORED)
    cache.close()
    return directory


def test_the_core_serves_a_read_only_cache_and_writes_nothing(tmp_path, capfd):
    spec = rustfx_core.FeatureSpec("ember_features")
    want = rustfx_core.extract(spec, rustfx_core.read_files(PE_FILES))
    source = filled(tmp_path / "cache")
    before = snapshot(source)
    capfd.readouterr()
    with read_only_view(source, tmp_path) as view:
        cache = rustfx_core.FeatureCache(view)
        for _ in range(2):
            assert same_rows(cache.extract_files(spec, PE_FILES), want)
        cache.flush()
        stats = cache.stats()
        assert stats["read_only"] is True
        assert (stats["hits"], stats["misses"]) == (2 * len(STORED), 2 * len(NEW)), stats
        assert (stats["entries"], stats["errors"]) == (len(STORED), 0), stats
        with pytest.raises(RuntimeError, match="read-only"):
            cache.put(spec, [b"a document"])
        cache.close()
        # Asked for: the same, and nothing to say.
        asked = rustfx_core.FeatureCache(view, read_only=True)
        assert same_rows(asked.extract_files(spec, PE_FILES), want)
        asked.close()
    err = capfd.readouterr().err
    assert err.count(SAID) == 1, err
    assert snapshot(source) == before


CHECKPOINT = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[0] == 0
"""


def test_a_wal_left_by_a_live_writer_is_read_or_said(tmp_path, capfd):
    """A copy of a cache taken while its writer ran, half of its rows
    checkpointed into the database and half only in the WAL: with the
    WAL's index (-shm) every row is read; without it, on read-only storage,
    the rows only in the WAL are not (said), and every row is exact."""
    spec = rustfx_core.FeatureSpec("ember_features")
    want = rustfx_core.extract(spec, rustfx_core.read_files(PE_FILES))
    live = rustfx_core.FeatureCache(tmp_path / "live")
    half = len(STORED) // 2
    live.extract_files(spec, STORED[:half])
    live.flush()
    # Checkpointed by another process (one in this process would share
    # the handle's POSIX locks, and delete the WAL under it at close).
    subprocess.run([sys.executable, "-c", CHECKPOINT, str(tmp_path / "live" / DB_FILE)],
                   check=True)
    live.extract_files(spec, STORED[half:])
    live.flush()  # committed, in the WAL only
    for name, with_index in (("copy", True), ("copy-without-index", False)):
        copy = tmp_path / name
        copy.mkdir()
        for suffix in ("", "-wal") + (("-shm",) if with_index else ()):
            shutil.copy2(tmp_path / "live" / (DB_FILE + suffix), copy)
        before = snapshot(copy)
        capfd.readouterr()
        with read_only_view(copy, _fresh(tmp_path, name)) as view:
            cache = rustfx_core.FeatureCache(view)
            assert same_rows(cache.extract_files(spec, PE_FILES), want)
            stats = cache.stats()
            cache.close()
        err = capfd.readouterr().err
        assert err.count(SAID) == 1, err
        if with_index:
            assert stats["hits"] == len(STORED), stats
            assert "write-ahead log" not in err, err
        else:
            assert stats["hits"] == half, stats
            assert "write-ahead log" in err and "-wal" in err, err
        assert snapshot(copy) == before
    live.close()


def _fresh(tmp_path, name):
    place = tmp_path / f"{name}-mount"
    place.mkdir()
    return place


def _epoch(files, cache):
    """One epoch of EMBER2024 vectors in a parallel tf.data map, as bytes."""
    ds = tf.data.Dataset.from_tensor_slices(tf.constant(files)).batch(4).map(
        lambda p: rustfx.ember_features(rustfx.files(p, cache=cache)),
        num_parallel_calls=tf.data.AUTOTUNE)
    return b"".join(batch.numpy().tobytes() for batch in ds)


def test_the_ops_serve_a_read_only_cache_and_write_nothing(tmp_path, capfd):
    want = _epoch(PE_FILES, None)
    source = filled(tmp_path / "cache")
    before = snapshot(source)
    capfd.readouterr()
    with read_only_view(source, tmp_path) as view:
        cache = rustfx.FeatureCache(view)  # no error: read-only is detected
        for _ in range(2):
            assert _epoch(PE_FILES, cache) == want
        stats = cache.stats()
        assert stats["read_only"] is True
        assert (stats["hits"], stats["misses"]) == (2 * len(STORED), 2 * len(NEW)), stats
        assert (stats["entries"], stats["errors"]) == (len(STORED), 0), stats
    err = capfd.readouterr().err
    assert err.count(SAID) == 1, err
    assert snapshot(source) == before
    # Asked for, on storage that can be written: the same, silently.
    cache = rustfx.FeatureCache(source, read_only=True)
    assert _epoch(PE_FILES, cache) == want
    assert cache.stats()["hits"] == len(STORED)
    assert SAID not in capfd.readouterr().err
    assert snapshot(source) == before


def test_no_cache_on_read_only_storage_extracts_uncached_and_says_so(tmp_path, capfd):
    empty = tmp_path / "empty"
    empty.mkdir()
    want = _epoch(PE_FILES[:4], None)
    with read_only_view(empty, tmp_path) as view:
        for directory in (view, view / "missing"):
            cache = rustfx.FeatureCache(directory)  # never raises
            assert _epoch(PE_FILES[:4], cache) == want
            assert cache.stats()["errors"] == 1
    err = capfd.readouterr().err
    assert err.count("extracting without the feature cache") == 2, err
    assert os.listdir(empty) == []


def _flip(path, at, count):
    data = bytearray(path.read_bytes())
    at = min(at, len(data) - 1)
    for i in range(at, min(at + count, len(data))):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


# The database's header (magic, page size, counts), its first pages, its
# middle, its end; the WAL's header and frames.
PLACES = [("", 0, 16), ("", 16, 84), ("", 4096, 4096), ("", "middle", 4096), ("", "end", 1),
          ("-wal", 0, 32), ("-wal", 156, 8192)]


@pytest.mark.parametrize("suffix, at, count", PLACES)
def test_a_cache_damaged_under_a_live_handle_never_stops_construction(tmp_path, suffix, at,
                                                                       count):
    files = PE_FILES[:8]
    want = _epoch(files, None)
    directory = tmp_path / "cache"
    cache = rustfx.FeatureCache(directory)
    assert _epoch(files, cache) == want
    cache.stats()  # committed: in the WAL
    path = directory / (DB_FILE + suffix)
    size = path.stat().st_size
    _flip(path, {"middle": size // 2, "end": size - 1}.get(at, at), count)
    # The same options (the live handle), and others (a new open of the
    # damaged file): never an error, and the rows stay exact.
    for options in ({}, {"max_bytes": 1 << 30}, {"key": "stat"}):
        again = rustfx.FeatureCache(directory, **options)
        assert _epoch(files, again) == want
        assert isinstance(again.stats()["errors"], int)


@pytest.mark.parametrize("options, allowed", [
    (dict(key="mtime"), "content, stat"),
    (dict(max_bytes=1), "max_bytes must be from 65536"),
])
def test_only_bad_options_stop_construction_with_the_cores_message(tmp_path, options,
                                                                   allowed):
    with pytest.raises(tf.errors.InvalidArgumentError) as refused:
        rustfx.FeatureCache(tmp_path / "cache", **options)
    message = refused.value.message
    assert message.startswith("a feature cache's") and allowed in message, message
    assert "Rustfx>" not in message and "Op:" not in message, message
