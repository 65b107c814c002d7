"""rustfx_core.FeatureCache from Python (no TensorFlow): extract through the
cache equals rustfx_core.extract bit for bit on every registry example,
first epoch and cached; another spec or content misses; a damaged entry is
never served; two writer processes lose nothing; a writer killed with
SIGKILL leaves exact features; the cap evicts; the stat key trusts the
metadata. The Rust crate's own tests (crates/rustfx-cache) test each of
these against the core directly."""

import glob
import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import same_rows

import rustfx_core
from rustfx_core import FeatureCache, FeatureSpec

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PE_FILES = sorted(p for p in glob.glob(os.path.join(ROOT, "tests/golden/pe/*/*"))
                  if os.path.isfile(p))
DOCS = [b"MZ\x90\x00 hello world C:\\x http://a.b HKEY_X", b"",
        "Gr\u00f6\u00dfe caf\u00e9 x\u00b2".encode(), b"aaaa bbbb aaaa \xff\xfe w\0i\0d\0e\0"]


def example_specs():
    return [FeatureSpec(name, **params) for name, entry in rustfx_core.registry().items()
            for params in entry["examples"]]


same = same_rows


def test_extract_equals_the_core_on_every_registry_example(tmp_path):
    cache = FeatureCache(tmp_path / "cache")
    docs = DOCS + [open(p, "rb").read() for p in PE_FILES[:40]]
    for spec in example_specs():
        want = rustfx_core.extract(spec, docs)
        assert same(cache.extract(spec, docs), want), spec.to_json()
        hits = cache.stats()["hits"]
        assert same(cache.extract(spec, docs), want), spec.to_json()
        assert cache.stats()["hits"] - hits == len(docs)
        # Documents read by the core, and a mix of hits and misses.
        mixed = [docs[0], b"never seen " + spec.to_json().encode(), docs[5]]
        assert same(cache.extract(spec, rustfx_core.Documents.of(mixed)),
                    rustfx_core.extract(spec, mixed))
        # get: one document's row in extract's form.
        assert same(cache.get(spec, docs[7]), rustfx_core.extract(spec, docs[7:8]))
        assert cache.get(spec, b"nothing like it") is None


def test_files_by_content_and_by_stat(tmp_path):
    spec = FeatureSpec("ember_features")
    paths = PE_FILES[:12] + [str(tmp_path / "missing")]
    want = rustfx_core.extract(spec, rustfx_core.read_files(paths))
    for key in ("content", "stat"):
        cache = FeatureCache(tmp_path / key, key=key)
        for epoch in range(2):
            assert same(cache.extract_files(spec, paths), want), (key, epoch)
        assert cache.stats()["hits"] == 12, key
        assert cache.stats()["entries"] == 12, key


def test_another_spec_or_content_misses(tmp_path):
    cache = FeatureCache(tmp_path)
    doc = b"the same document"
    base = FeatureSpec("byte_entropy_histogram")
    cache.extract(base, [doc])
    for other in [FeatureSpec("byte_entropy_histogram", step=512),
                  FeatureSpec("byte_entropy_histogram", window=1024),
                  FeatureSpec("byte_histogram")]:
        assert cache.get(other, doc) is None
    assert cache.get(base, doc) is not None
    hits = cache.stats()["hits"]
    path = tmp_path / "doc.txt"
    spec = FeatureSpec("byte_histogram")
    for contents in [b"version one", b"version two", b"version twO"]:
        path.write_bytes(contents)
        assert same(cache.extract_files(spec, [str(path)]),
                    rustfx_core.extract(spec, [contents]))
    assert cache.stats()["hits"] == hits


def test_a_damaged_entry_is_recomputed_never_served(tmp_path):
    spec = FeatureSpec("byte_histogram")
    doc = bytes(range(256)) * 10
    cache = FeatureCache(tmp_path)
    cache.extract(spec, [doc])
    cache.flush()  # committed, so the edit below reaches it
    with sqlite3.connect(tmp_path / "features.sqlite3") as db:
        db.execute("UPDATE row_data SET row_values = "
                   "substr(row_values, 1, 99) || x'7f' || substr(row_values, 101)")
    assert cache.get(spec, doc) is None
    assert cache.stats()["corrupt"] == 1
    assert same(cache.extract(spec, [doc]), rustfx_core.extract(spec, [doc]))
    assert cache.get(spec, doc) is not None


def test_bad_options_and_files_are_refused(tmp_path):
    with pytest.raises(ValueError, match="content, stat"):
        FeatureCache(tmp_path / "a", key="mtime")
    with pytest.raises(ValueError, match="max_bytes must be from 65536"):
        FeatureCache(tmp_path / "b", max_bytes=0)
    # A database of another program: refused, left as it is. (Garbage,
    # a damaged cache, is set aside: test_cache_faults.py.)
    (tmp_path / "c").mkdir()
    other = sqlite3.connect(tmp_path / "c" / "features.sqlite3")
    other.executescript("CREATE TABLE meta (name, value); "
                        "INSERT INTO meta VALUES ('format', 99);")
    other.close()
    with pytest.raises(ValueError, match="its format is 99"):
        FeatureCache(tmp_path / "c")


def test_the_cap_evicts_the_least_recently_used(tmp_path):
    spec = FeatureSpec("byte_histogram")
    cache = FeatureCache(tmp_path, max_bytes=65536)
    docs = [f"doc {i}".encode() for i in range(60)]
    cache.extract(spec, docs[:40])
    cache.extract(spec, docs[:5])       # used again
    cache.extract(spec, docs[40:])      # passes the cap: 11 of docs 5-15 go
    stats = cache.stats()
    assert (stats["evicted"], stats["entries"]) == (11, 49)
    assert stats["bytes"] <= 65536 * 0.9
    kept = [cache.get(spec, d) is not None for d in docs]
    assert kept == [not 5 <= i <= 15 for i in range(60)]


WRITER = """
import sys, rustfx_core
directory, start, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cache = rustfx_core.FeatureCache(directory)
spec = rustfx_core.FeatureSpec("hashed_ngrams", num_buckets=4096, ngram_widths=[1, 2])
i = start
while stop == 0 or i < stop:
    if stop == 0 and i >= start + 2000:
        i = start
    cache.extract(spec, [f"doc {j} " .encode() * (j % 50 + 1) for j in range(i, i + 8)])
    i += 8
"""


def _writer(directory, start, stop):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.Popen([sys.executable, "-c", WRITER, str(directory), str(start),
                             str(stop)], env=env)


def _check(directory, docs):
    """Every stored row of `docs` equals the core's; how many were stored."""
    spec = FeatureSpec("hashed_ngrams", num_buckets=4096, ngram_widths=[1, 2])
    cache = FeatureCache(directory)
    found = 0
    for d in docs:
        row = cache.get(spec, d)
        if row is not None:
            assert same(row, rustfx_core.extract(spec, [d]))
            found += 1
    assert cache.stats()["corrupt"] == 0
    with sqlite3.connect(os.path.join(directory, "features.sqlite3")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    return found, cache.stats()["entries"]


def test_two_writer_processes_lose_nothing(tmp_path):
    a, b = _writer(tmp_path, 0, 400), _writer(tmp_path, 200, 600)
    assert a.wait(timeout=300) == 0 and b.wait(timeout=300) == 0
    docs = [f"doc {j} ".encode() * (j % 50 + 1) for j in range(600)]
    assert _check(tmp_path, docs) == (600, 600)


def test_kill_9_during_writes_leaves_exact_features(tmp_path):
    writer = _writer(tmp_path, 0, 0)
    db = tmp_path / "features.sqlite3"
    deadline = time.time() + 60
    while not db.exists() and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(1.5)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    docs = [f"doc {j} ".encode() * (j % 50 + 1) for j in range(2008)]
    found, entries = _check(tmp_path, docs)
    assert found > 0 and found == entries
