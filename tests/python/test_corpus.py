"""Corpus extraction on Ray (rustfx.corpus, python -m rustfx.corpus).

Parity of the Parquet and TFRecord rows with the ops, keyed by path; hostile
inputs as error rows; a driver killed mid-job and rerun (exactly once,
committed shards untouched); a real two-node Ray cluster on this machine
losing its second node mid-job; an s3:// output on a local S3 server (moto;
those tests are skipped without it). Kept small (a few hundred files): the
whole file runs in a few minutes on 2 cores. Skipped if Ray is not installed
(`pip install "rustfx[ray]"`, or `make setup`, which installs it).
"""

import glob
import hashlib
import importlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
from conftest import same_rows

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray[data]==2.60.*')")
pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed")

import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402
import rustfx_core  # noqa: E402
from rustfx import corpus  # noqa: E402

from hostile_files import make_hostile_paths  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = sys.executable

# One column of each output kind and dtype: dense float32 (ember2018's byte
# groups), dense int64 (general_file_info), ragged int64, sparse, ragged strings.
FEATURES = {"features": {
    "byte_histogram": {"extractor": "byte_histogram"},
    "byte_entropy_histogram": {"extractor": "byte_entropy_histogram"},
    "string_features": {"extractor": "string_features"},
    "file_info": {"extractor": "general_file_info"},
    "ngram_ids": {"extractor": "hashed_ngrams",
                  "params": {"num_buckets": 4096, "output": "ragged", "tokenizer": "word"}},
    "ngram_counts": {"extractor": "hashed_ngrams",
                     "params": {"num_buckets": 4096, "output": "sparse"}},
    "strings": {"extractor": "printable_strings"},
}}


# Files of the parity test: 300 in `make test`; the few thousand
# with RUSTFX_CORPUS_PARITY_FILES=3000 (docs/corpus.md).
PARITY_FILES = int(os.environ.get("RUSTFX_CORPUS_PARITY_FILES", "300"))


def _corpus_files(count=PARITY_FILES):
    """`count` real files: the PE test corpus, text (this repository's,
    then /usr/share/doc and /usr/include), ELF (/usr/bin, /usr/lib)."""
    def regular(paths):
        return sorted(p for p in paths if os.path.isfile(p) and not os.path.islink(p)
                      and 0 < os.path.getsize(p) < (2 << 20))
    pe = regular(glob.glob(os.path.join(ROOT, "tests/golden/pe/**/*"), recursive=True))
    text = regular(glob.glob(os.path.join(ROOT, "python/rustfx/*.py"))
                   + glob.glob(os.path.join(ROOT, "src/**/*.rs"), recursive=True)
                   + glob.glob("/usr/share/doc/*/*") + glob.glob("/usr/include/*.h"))
    elf = regular(glob.glob("/usr/bin/*") + glob.glob("/usr/lib/x86_64-linux-gnu/*.so*"))
    pe = pe[:count // 2]
    text = text[:(count - len(pe)) * 2 // 3]
    return pe + text + elf[:count - len(pe) - len(text)]


@pytest.fixture(scope="module")
def corpus_list(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "paths.txt"
    files = _corpus_files()
    path.write_text("".join(f + "\n" for f in files))
    return str(path), sorted(os.path.abspath(f) for f in files)


@pytest.fixture(scope="module")
def long_corpus_list(corpus_list, tmp_path_factory):
    """corpus_list's files, each listed 20 times (the 19 others by symlinks:
    distinct paths): a job that lasts long enough on 2 cores to be killed
    midway (the 300 files alone take a few tenths of a second of work)."""
    _, files = corpus_list
    root = tmp_path_factory.mktemp("long")
    paths = list(files)
    for k in range(1, 20):
        (root / str(k)).mkdir()
        for i, f in enumerate(files):
            link = root / str(k) / f"{i:04d}"
            link.symlink_to(f)
            paths.append(str(link))
    listing = root / "paths.txt"
    listing.write_text("".join(p + "\n" for p in paths))
    return str(listing), sorted(paths)


# The s3:// tests' credentials, which the local S3 server (moto) accepts: in
# the driver's environment (s3_server) and, through the job's runtime_env,
# in the workers' (Ray's processes keep the environment they started with).
FAKE_AWS_ENV = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": FAKE_AWS_ENV})
    yield
    ray.shutdown()


def _op_rows(paths, feature_set):
    """The reference: each feature straight from the op, by path."""
    feature_set = corpus.FeatureSet.load(feature_set)
    contents = rustfx.read_files(tf.constant(paths), on_error="raise")
    want = {"sha256": [hashlib.sha256(open(p, "rb").read()).hexdigest() for p in paths],
            "size": [os.path.getsize(p) for p in paths]}
    for column, spec in feature_set.features.items():
        out = rustfx.extract(spec, contents)
        kind = spec.output["kind"]
        if kind == "dense":
            want[column] = list(out.numpy())
        elif kind == "ragged":
            want[column] = [list(r) for r in out.to_list()]
        else:
            dense = tf.sparse.to_dense(out).numpy()
            want[column] = list(dense)
    return want


def _rows(rows):
    """Rows (a pyarrow.Table, or a list of dicts) as dicts with the path as
    the str Python gives its name: the path column holds the path's bytes."""
    rows = rows.to_pylist() if hasattr(rows, "to_pylist") else rows
    return [dict(r, path=os.fsdecode(r["path"])) for r in rows]


def _check_same(got_row, want, i, feature_set):
    assert got_row["sha256"] == want["sha256"][i]
    assert got_row["size"] == want["size"][i]
    assert got_row["status"] == 0 and got_row["message"] == ""
    for column, spec in corpus.FeatureSet.load(feature_set).features.items():
        expected = want[column][i]
        got = got_row[column]
        if spec.output["kind"] == "dense":
            got = np.asarray(got)
            assert got.dtype == expected.dtype, column
            # Bit for bit (NaN-safe): compare the bytes.
            assert got.tobytes() == expected.tobytes(), (column, got_row["path"])
        elif spec.output["kind"] == "ragged":
            assert list(got) == list(expected), (column, got_row["path"])
        else:
            assert np.asarray(got).tobytes() == expected.tobytes(), (column, got_row["path"])


def test_import_extract_module_keeps_the_function():
    """rustfx.extract is the function; the module of that name only runs
    the deprecated `python -m rustfx.extract`, and importing it fails
    rather than rebinding rustfx.extract."""
    spec = rustfx.FeatureSpec("byte_histogram")
    assert callable(rustfx.extract)
    got = rustfx.extract(spec, tf.constant([b"abc"]))
    np.testing.assert_array_equal(got.numpy(), rustfx.byte_histogram(tf.constant([b"abc"])).numpy())
    with pytest.raises(ImportError, match="is the function"):
        importlib.import_module("rustfx.extract")
    assert rustfx.extract is rustfx.spec.extract and "rustfx.extract" not in sys.modules


@pytest.mark.parametrize("module", ["rustfx.corpus", "rustfx.extract"])
def test_cli_help(module):
    result = subprocess.run([PYTHON, "-m", module, "--help"], capture_output=True, text=True,
                            timeout=120, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"usage: python -m {module} " in result.stdout
    assert "--read-batch-bytes" in result.stdout
    deprecated = "python -m rustfx.extract is deprecated: use python -m rustfx.corpus"
    assert (deprecated in result.stderr) == (module == "rustfx.extract")


def test_sha256_op_matches_hashlib():
    docs = [b"", b"abc", bytes(range(256)) * 999, os.urandom(4097)]
    for doc, got in zip(docs, rustfx.sha256(tf.constant(docs)).numpy()):
        assert got.decode() == hashlib.sha256(doc).hexdigest()
    assert rustfx.sha256(tf.constant([[b"a"], [b"b"]])).shape == (2, 1)


def test_feature_sets_by_name_file_and_spec(tmp_path):
    assert list(corpus.FeatureSet.load("ember2024").features) == ["ember_features"]
    assert corpus.FeatureSet.load("ember2024").features["ember_features"].output["shape"] == [2568]
    assert list(corpus.FeatureSet.load("ember2018-bytes").features) == [
        "byte_histogram", "byte_entropy_histogram", "string_features"]
    one = tmp_path / "one.json"
    one.write_text(rustfx.FeatureSpec("byte_histogram").to_json())
    assert list(corpus.FeatureSet.load(str(one)).features) == ["byte_histogram"]
    many = tmp_path / "many.json"
    many.write_text(json.dumps(FEATURES))
    assert list(corpus.FeatureSet.load(str(many)).features) == list(FEATURES["features"])
    with pytest.raises(ValueError, match="neither a ready-made"):
        corpus.FeatureSet.load("no-such-set")
    with pytest.raises(ValueError, match="reserved"):
        corpus.FeatureSet({"sha256": {"extractor": "byte_histogram"}})


def test_list_inputs(tmp_path):
    (tmp_path / "d" / "e").mkdir(parents=True)
    for name in ("a.txt", "d/b.bin", "d/e/c.txt"):
        (tmp_path / name).write_bytes(b"x")
    want = sorted(str(tmp_path / n) for n in ("a.txt", "d/b.bin", "d/e/c.txt"))
    assert corpus.list_inputs(str(tmp_path)) == want
    assert corpus.list_inputs(str(tmp_path / "**" / "*.txt")) == [want[0], want[2]]
    listed = tmp_path / "list"
    listed.write_text(f"{want[1]}\n\n{want[0]}\n{want[1]}\n")
    assert corpus.list_inputs(str(listed)) == [want[0], want[1]]
    assert corpus.list_inputs("file://" + str(tmp_path / "d")) == [
        "file://" + want[1], "file://" + want[2]]


@pytest.mark.parametrize("fmt", ["parquet", "tfrecord"])
def test_parity_with_the_ops(fmt, corpus_list, local_ray, tmp_path):
    listing, paths = corpus_list
    out = str(tmp_path / "out")
    summary = corpus.run(FEATURES, listing, out, fmt=fmt, shard_size=64)
    assert summary["files"] == len(paths) and summary["errors"] == 0
    want = _op_rows(paths, FEATURES)
    index = {p: i for i, p in enumerate(paths)}
    if fmt == "parquet":
        rows = _rows(corpus.read_parquet(out, FEATURES))
        for path in glob.glob(os.path.join(out, "*.parquet")):
            meta = pq.read_schema(path).metadata[corpus.METADATA_KEY]
            assert corpus.FeatureSet.load(meta.decode()) == corpus.FeatureSet.load(FEATURES)
    else:
        rows = []
        for row in corpus.read_tfrecord(out, FEATURES):
            row = {k: v for k, v in row.items()}
            plain = {"path": os.fsdecode(row["path"].numpy()), "size": int(row["size"]),
                     "sha256": row["sha256"].numpy().decode(), "status": int(row["status"]),
                     "message": row["message"].numpy().decode()}
            for column, spec in corpus.FeatureSet.load(FEATURES).features.items():
                value = row[column]
                if isinstance(value, tf.SparseTensor):
                    value = tf.sparse.to_dense(value)
                if isinstance(value, tf.RaggedTensor):
                    value = value.to_list()
                plain[column] = value.numpy() if hasattr(value, "numpy") else value
            rows.append(plain)
    assert sorted(r["path"] for r in rows) == paths  # exactly once
    for row in rows:
        i = index[row["path"]]
        if fmt == "parquet":
            row = _plain_parquet_row(row, FEATURES)
        _check_same(row, want, i, FEATURES)


def test_a_feature_cache_filled_from_the_shards_serves_training(corpus_list, local_ray,
                                                               tmp_path):
    # FEATURES plus a ragged int16 column (MalConv2's input): every layout
    # and a dtype beyond the first three.
    features = {"features": {**FEATURES["features"], "bytes16": {
        "extractor": "byte_sequence",
        "params": {"max_len": 4096, "dtype": "int16", "output": "ragged"}}}}
    listing, paths = corpus_list
    paths = paths[:120]
    with open(tmp_path / "list.txt", "w") as f:
        f.write("".join(p + "\n" for p in paths))
    out = str(tmp_path / "out")
    corpus.run(features, str(tmp_path / "list.txt"), out, fmt="parquet", shard_size=50)
    cache = rustfx_core.FeatureCache(tmp_path / "cache")
    filled = cache.fill_from_corpus(out)
    columns = corpus.FeatureSet.load(features).features
    assert filled == {"rows": len(paths) * len(columns), "skipped": 0, "shards": 3}
    # Training reads: every file of every spec a hit, the rows the core's.
    documents = rustfx_core.read_files(paths)
    for column, spec in columns.items():
        before = cache.stats()
        got = cache.extract_files(spec, paths)
        after = cache.stats()
        assert after["hits"] - before["hits"] == len(paths), column
        assert after["misses"] == before["misses"], column
        want = rustfx_core.extract(spec, documents)
        assert _same_rows(got, want), column
    # Each row's content_key is the cache's key of its bytes (the op's).
    import pyarrow as pa
    import pyarrow.parquet as pq
    shards = sorted(glob.glob(os.path.join(out, "**", "*.parquet"), recursive=True))
    table = pa.concat_tables([pq.read_table(s) for s in shards])
    keys = dict(zip(table.column("path").to_pylist(), table.column("content_key").to_pylist()))
    want = rustfx.content_key(rustfx.read_files(tf.constant(paths))).numpy()
    assert [keys[os.fsencode(p)] for p in paths] == [k.decode() for k in want]
    # A shard of a rustfx before BLAKE3 keys (no content_key) is refused.
    old = tmp_path / "old"
    shutil.copytree(out, old)
    shard = sorted(glob.glob(str(old / "**" / "*.parquet"), recursive=True))[0]
    pq.write_table(pq.read_table(shard).drop(["content_key"]), shard)
    with pytest.raises(ValueError, match="no content_key column"):
        rustfx_core.FeatureCache(tmp_path / "cache-old").fill_from_corpus(str(old))
    # Rows that do not fit their spec are refused whole, nothing stored.
    spec = columns["byte_histogram"]
    def dense(width):
        return pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(width, np.float32)), width)
    with pytest.raises(RuntimeError, match="rows of"):
        cache.put_rows(spec, b"\0" * 32, dense(255))
    with pytest.raises(ValueError, match="digests"):
        cache.put_rows(spec, b"\0" * 33, dense(256))
    with pytest.raises(TypeError, match="Arrow array"):
        cache.put_rows(spec, b"\0" * 32, np.zeros((1, 256), np.float32))


_same_rows = same_rows


def _plain_parquet_row(row, feature_set):
    """A Parquet row (to_pylist) as _check_same takes it: dense features as
    arrays of their dtype, sparse ones as dense arrays."""
    for column, spec in corpus.FeatureSet.load(feature_set).features.items():
        if spec.output["kind"] == "dense":
            row[column] = np.asarray(row[column], dtype=spec.output["dtype"])
        elif spec.output["kind"] == "sparse":
            dense = np.zeros(spec.output["shape"][0], np.float32)
            dense[row.pop(column + "_indices")] = row.pop(column + "_values")
            row[column] = dense
    return row


def test_uri_input_through_pyarrow(corpus_list, local_ray, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _, paths = corpus_list
    for i, p in enumerate(paths[:20]):
        shutil.copy(p, src / f"{i:03d}")
    out = str(tmp_path / "out")
    corpus.run("ember2018-bytes", "file://" + str(src), out, shard_size=8)
    rows = _rows(corpus.read_parquet(out))
    local = sorted(str(src / f"{i:03d}") for i in range(20))
    assert [r["path"] for r in rows] == ["file://" + p for p in local]
    want = _op_rows(local, "ember2018-bytes")
    for i, row in enumerate(rows):
        for column in ("byte_histogram", "byte_entropy_histogram", "string_features"):
            row[column] = np.asarray(row[column], np.float32)
        _check_same(row, want, i, "ember2018-bytes")


def test_extract_dataset_composes_with_ray_data(corpus_list, local_ray):
    _, paths = corpus_list
    some = paths[::20]
    ds = ray.data.from_items([{"path": p} for p in some])
    rows = _rows(corpus.extract_dataset(ds, "ember2018-bytes", concurrency=1,
                                        batch_size=8).take_all())
    assert sorted(r["path"] for r in rows) == some
    for row in rows:
        assert row["sha256"] == hashlib.sha256(open(row["path"], "rb").read()).hexdigest()
        assert np.asarray(row["byte_histogram"]).shape == (256,)


def test_a_shard_is_read_in_bounded_batches(tmp_path):
    """The structural bound: read_batches cuts a shard, in order, into
    batches whose expected bytes (min(size, max_bytes); max_bytes for what
    is not a regular file) add up to at most read_batch_bytes, or a single
    file, of at most MAX_READ_BATCH_FILES files, closing a batch only when
    the next file would not fit; iter_tables extracts one batch at a time
    and its rows are extract_table's."""
    sizes = [100, 3000, 5000, 1, 0, 8000, 2500, 2500, 9000, 10]
    paths = []
    for i, size in enumerate(sizes):
        (tmp_path / f"{i:02d}").write_bytes(b"x" * size)
        paths.append(str(tmp_path / f"{i:02d}"))
    paths += [os.devnull, str(tmp_path / "missing")]
    max_bytes, budget = 4096, 6000
    expected = dict(zip(paths, [min(n, max_bytes) for n in sizes] + [max_bytes] * 2))
    batches = list(corpus.read_batches(paths, max_bytes, budget))
    assert [p for b in batches for p in b] == paths
    for batch, following in zip(batches, batches[1:] + [None]):
        held = sum(expected[p] for p in batch)
        assert len(batch) == 1 or held <= budget, batch
        if following:
            assert held + expected[following[0]] > budget, (batch, following)
    empty = str(tmp_path / "04")
    assert [len(b) for b in corpus.read_batches([empty] * 300, max_bytes)] == [
        corpus.MAX_READ_BATCH_FILES, 300 - corpus.MAX_READ_BATCH_FILES]
    tables = list(corpus.iter_tables(paths, "ember2018-bytes", max_bytes=max_bytes,
                                     read_batch_bytes=budget))
    assert [t.num_rows for t in tables] == [len(b) for b in batches]
    whole = corpus.extract_table(paths, "ember2018-bytes", max_bytes=max_bytes,
                                 read_batch_bytes=1 << 30)
    import pyarrow as pa
    assert pa.concat_tables(tables).to_pylist() == whole.to_pylist()


def test_worker_memory_is_one_read_batch_not_a_shard(corpus_list, local_ray, tmp_path):
    """Peak RSS of the Ray actor writing one shard of six 100 MB (sparse)
    files and a few real PE files, --max-bytes 2**27 and --read-batch-bytes
    2**27 (read batches of one file): its growth past its baseline (the core
    library loaded, warmed up) stays under twice the batch bound, 256 MiB.
    One file's contents (95 MiB) are held once, as the read_files tensor
    (the hash and every extractor read it in place); the rest is the
    extractors' and Parquet's working memory (~10 MiB here). Reading the
    shard at once would hold the six files (572 MiB) and more: this bound
    fails for an O(shard) worker. Measured growth: docs/corpus.md."""
    big = tmp_path / "big"
    big.mkdir()
    for i in range(6):
        with open(big / f"sparse-{i}.bin", "wb") as f:
            f.truncate(100_000_000)
    real = [p for p in corpus_list[1] if "/golden/pe/" in p][:4]
    listing = tmp_path / "paths.txt"
    listing.write_text("".join(p + "\n" for p in sorted(real + [str(p) for p in big.iterdir()])))
    out = str(tmp_path / "out")
    batch_bound = 2**27
    summary = corpus.run("ember2024", str(listing), out, shard_size=10, workers=1,
                         max_bytes=2**27, read_batch_bytes=2**27)
    assert summary["files"] == 10 and summary["errors"] == 0
    assert summary["bytes"] >= 6 * 100_000_000
    growth = summary["worker_rss_growth"]
    print(f"worker peak RSS {summary['worker_rss'] / 2**20:.0f} MiB, "
          f"growth {growth / 2**20:.0f} MiB")
    assert 0 < growth < 2 * batch_bound, (
        f"a worker's peak RSS grew by {growth / 2**20:.0f} MiB for read batches of one "
        f"128 MiB-bounded file")
    rows = _rows(corpus.read_parquet(out))
    zeros = hashlib.sha256(b"\0" * 100_000_000).hexdigest()
    assert sum(r["sha256"] == zeros for r in rows) == 6


def test_hostile_inputs_are_error_rows(local_ray, tmp_path):
    root = tmp_path / "h"
    root.mkdir()
    hostile, sock = make_hostile_paths(str(root))
    chosen = {}
    for name, (path, code, _) in hostile.items():
        text = path.decode("utf-8", "strict") if b"\xff" not in path else None
        # What a list file can hold: UTF-8, absolute, no NUL or newline.
        if text and text.startswith("/") and "\0" not in text and "\n" not in text:
            chosen[text] = (name, code)
    sparse = root / "sparse_10g"
    with open(sparse, "wb") as f:
        f.truncate(10 << 30)  # 10 GiB of holes: read up to --max-bytes only
    listing = tmp_path / "list"
    listing.write_text("".join(p + "\n" for p in [*chosen, str(sparse)]))
    out = str(tmp_path / "out")
    start = time.monotonic()
    summary = corpus.run(FEATURES, str(listing), out, shard_size=16, max_bytes=1 << 20)
    assert time.monotonic() - start < 300  # nothing blocks (a FIFO would)
    rows = {r["path"]: r for r in _rows(corpus.read_parquet(out))}
    assert len(rows) == len(chosen) + 1
    assert summary["errors"] == len(chosen)
    # The workers read through the core's C ABI: the same statuses and
    # messages as the read_files op.
    _, status = rustfx.read_files(tf.constant(list(chosen)), max_bytes=1 << 20,
                                  on_error="empty", with_status=True)
    op_status = dict(zip(chosen, zip(status.codes.numpy(), status.messages.numpy())))
    for path, (name, code) in chosen.items():
        row = rows[path]
        assert row["status"] == code, name
        assert row["message"], name
        assert (row["status"], row["message"].encode()) == op_status[path], name
        assert row["sha256"] is None and row["byte_histogram"] is None, name
    assert rows[str(sparse)]["size"] == 1 << 20
    assert rows[str(sparse)]["sha256"] == hashlib.sha256(bytes(1 << 20)).hexdigest()
    sock.close()


# A worker as run() makes it for Parquet shards: Ray pickles the UDF class
# and its arguments (the ShardFormat too) by reference, and the worker
# unpickles them. Here in a fresh process, from the same pickle: it writes
# its shard, and neither TensorFlow nor Keras, Ray or rustfx is imported.
CORE_ONLY_WORKER = """
import json, pickle, sys
udf, args = pickle.loads(sys.stdin.buffer.read())
worker = udf(*args)
summary = worker({"shard": [0], "paths": [json.loads(sys.argv[1])]})
loaded = {top: [m for m in sys.modules if m.split(".")[0] == top]
          for top in ("tensorflow", "keras", "ray", "rustfx")}
print(json.dumps({"files": int(summary["files"][0]), **loaded}))
"""


def test_a_parquet_worker_imports_no_tensorflow(corpus_list, tmp_path):
    listing, paths = corpus_list
    paths = paths[:40] + [str(tmp_path / "missing")]
    fs_json = corpus.FeatureSet.load(FEATURES).to_json()
    out = tmp_path / "out"
    out.mkdir()
    shipped = ray.cloudpickle.dumps(corpus.job.shard_writer(
        fs_json, corpus.OutputDir(str(out)), "parquet", None, "record"))
    result = subprocess.run(
        [PYTHON, "-c", CORE_ONLY_WORKER, json.dumps(paths)], input=shipped,
        capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    report = json.loads(result.stdout.decode().strip().splitlines()[-1])
    assert report == {"files": len(paths), "tensorflow": [], "keras": [], "ray": [],
                      "rustfx": []}
    got = pq.read_table(out / corpus.shard_name(0, "parquet"))
    assert got.equals(corpus.extract_table(paths, FEATURES))
    want = _op_rows(paths[:-1], FEATURES)
    for i, row in enumerate(got.to_pylist()[:-1]):
        _check_same(_plain_parquet_row(row, FEATURES), want, i, FEATURES)
    assert got.to_pylist()[-1]["status"] == 5  # NOT_FOUND


def test_reading_with_another_output_version_fails(local_ray, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a").write_bytes(b"hello")
    out = str(tmp_path / "out")
    corpus.run("ember2018-bytes", str(src), out)
    with pytest.raises(ValueError, match="another feature set"):
        corpus.read_parquet(out, "ember2024")
    meta_path = os.path.join(out, corpus.SPEC_FILE)
    meta = json.load(open(meta_path))
    meta["feature_set"]["features"]["byte_histogram"]["output_version"] += 1
    json.dump(meta, open(meta_path, "w"))
    for read in (corpus.read_parquet, corpus.read_tfrecord):
        with pytest.raises(ValueError, match="output version|output_version"):
            read(out)
    # A rerun into it is refused too, rather than mixing versions.
    with pytest.raises(ValueError, match="output version|output_version|another job"):
        corpus.run("ember2018-bytes", str(src), out)


def _cli(args, env=None, **kw):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_DEDUP_LOGS="0", **(env or {}))
    return subprocess.Popen([PYTHON, "-m", "rustfx.corpus", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, **kw)


def _shard_state(out):
    state = {}
    for path in sorted(glob.glob(os.path.join(out, "part-*.parquet"))):
        with open(path, "rb") as f:
            state[path] = (os.stat(path).st_mtime_ns, hashlib.sha256(f.read()).hexdigest())
    return state


def _wait_for_shards(proc, out, count, timeout=240):
    deadline = time.monotonic() + timeout
    while len(glob.glob(os.path.join(out, "part-*.parquet"))) < count:
        if proc.poll() is not None:
            pytest.fail(f"job ended before {count} shards: {proc.stdout.read()}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"no {count} shards after {timeout} s")
        time.sleep(0.2)


def _settled_shard_state(out, quiet=3.0, timeout=60):
    """The committed shards once none has appeared for `quiet` seconds: a
    Ray worker of a killed driver can outlive it (it is not in the
    driver's process group) and commit the shard it holds, which is
    exactly once too, and must count as committed before the rerun."""
    state, since = _shard_state(out), time.monotonic()
    deadline = since + timeout
    while time.monotonic() - since < quiet and time.monotonic() < deadline:
        time.sleep(0.5)
        now = _shard_state(out)
        if now != state:
            state, since = now, time.monotonic()
    return state


def _check_exactly_once(out, paths):
    rows = _rows(corpus.read_parquet(out))
    assert sorted(r["path"] for r in rows) == paths
    assert not glob.glob(os.path.join(out, "*.tmp-*"))


def test_driver_killed_and_rerun_is_exactly_once(long_corpus_list, tmp_path):
    listing, paths = long_corpus_list
    out = str(tmp_path / "out")
    args = ["--spec", "ember2018-bytes", "--input", listing, "--output", out,
            "--shard-size", "10", "--workers", "1"]
    proc = _cli(args)
    _wait_for_shards(proc, out, 3)
    assert proc.poll() is None, "the job ended before it could be killed"
    # The driver and the local Ray it started (its process group): a crash.
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _settled_shard_state(out)
    assert 3 <= len(before) < -(-len(paths) // 10), "killed too late to test a resume"
    rerun = _cli(args)
    output, _ = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, output
    assert f"{len(before)} already committed" in output, output
    after = _shard_state(out)
    for path, state in before.items():
        assert after[path] == state, f"{path} was rewritten"
    _check_exactly_once(out, paths)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Ray 2.60 turns token authentication on for `ray start` when a token
# exists under ~/.ray, and then the driver must present it: this
# throwaway cluster on 127.0.0.1 runs without.
NO_AUTH = {"RAY_AUTH_MODE": "disabled"}


def _ray_node(args, temp_dir):
    """`ray start --block` in its own process group (killed as a whole)."""
    ray_bin = os.path.join(os.path.dirname(PYTHON), "ray")
    return subprocess.Popen([ray_bin, "start", "--block", "--num-cpus", "1",
                             "--disable-usage-stats", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True,
                            env=dict(os.environ, RAY_TMPDIR=temp_dir, **NO_AUTH))


@pytest.mark.ray_cluster
def test_two_node_cluster_loses_a_node(long_corpus_list, tmp_path):
    listing, paths = long_corpus_list
    port = _free_port()
    temp_dir = f"/tmp/rfx{port}"
    head = _ray_node(["--head", "--port", str(port), "--include-dashboard", "false",
                      "--temp-dir", temp_dir], temp_dir)
    nodes = [head]
    try:
        address = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:  # the head's GCS port accepts connections
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the Ray head did not start"
                time.sleep(0.5)
        second = _ray_node(["--address", address], temp_dir)
        nodes.append(second)
        out = str(tmp_path / "out")
        proc = _cli(["--spec", "ember2018-bytes", "--input", listing, "--output", out,
                     "--shard-size", "10", "--address", address, "--workers", "2"],
                    env=NO_AUTH)
        _wait_for_shards(proc, out, 2)
        assert proc.poll() is None, "the job ended before the node was lost"
        os.killpg(second.pid, signal.SIGKILL)  # its raylet and its workers
        second.wait()
        # Killed midway: shards were left to do.
        assert len(glob.glob(os.path.join(out, "part-*.parquet"))) < -(-len(paths) // 10)
        output, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, output
        _check_exactly_once(out, paths)
    finally:
        for node in nodes:
            try:
                os.killpg(node.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            node.wait()
        shutil.rmtree(temp_dir, ignore_errors=True)


def test_ember_lightgbm_example_trains_and_evaluates(tmp_path):
    """python/demo/train_ember_lightgbm.py, small: it vectorises ~60 files
    with `python -m rustfx.extract --spec ember2024` (Ray, in its own
    process), trains LightGBM from the Parquet rows and writes a model and
    its held-out metrics."""
    pytest.importorskip("lightgbm", reason="LightGBM is not installed (pip install lightgbm)")
    pytest.importorskip("sklearn", reason="scikit-learn is not installed")
    out = tmp_path / "lgbm"
    script = os.path.join(ROOT, "python", "demo", "train_ember_lightgbm.py")
    proc = subprocess.run([PYTHON, script, "--output", str(out), "--limit", "60",
                           "--workers", "2", "--rounds", "20"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "held-out ROC AUC" in proc.stdout
    metrics = json.loads((out / "metrics.json").read_text())
    assert 0.0 <= metrics["roc_auc"] <= 1.0 and 0.0 <= metrics["accuracy"] <= 1.0
    assert metrics["train"] > 0 and metrics["test"] > 0
    model = (out / "model.txt").read_text()
    assert model.startswith("tree") and "feature_names=" in model
    assert len(corpus.read_parquet(str(out / "vectors"), "ember2024")) == 60


# ---- s3:// output, on a local S3 server ---------------------------------------------

BUCKET = "rustfx-test"


@pytest.fixture(scope="module")
def s3_server():
    """A local S3 server (moto) with an empty bucket, and FAKE_AWS_ENV in
    this process's environment; yields the URI query that points pyarrow
    at it (an s3:// --output takes it as it is)."""
    moto_server = pytest.importorskip(
        "moto.server", reason="moto is not installed (pip install 'moto[server]')")
    from pyarrow import fs as pafs
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        with pytest.MonkeyPatch.context() as env:
            for name, value in FAKE_AWS_ENV.items():
                env.setenv(name, value)
            pafs.S3FileSystem(endpoint_override=f"{host}:{port}", scheme="http",
                              region="us-east-1", allow_bucket_creation=True).create_dir(BUCKET)
            yield f"endpoint_override={host}:{port}&scheme=http&region=us-east-1"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def small_corpus(corpus_list, tmp_path_factory):
    """A list file of a dozen files (PE, text, ELF) and a missing path (an
    error row); and the sorted paths."""
    paths = corpus_list[1][::len(corpus_list[1]) // 12][:12]
    paths.append(str(tmp_path_factory.mktemp("gone") / "missing"))
    listing = tmp_path_factory.mktemp("small") / "paths.txt"
    listing.write_text("".join(p + "\n" for p in paths))
    return str(listing), sorted(paths)


def _objects(uri):
    """name -> (mtime, SHA-256) of each object directly under `uri`."""
    out_dir = corpus.OutputDir(uri)
    state = {}
    for name in out_dir.names():
        with out_dir.open(name) as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        state[name] = (out_dir.filesystem.get_file_info(out_dir.path(name)).mtime, digest)
    return state


def test_s3_output_is_the_local_output(small_corpus, s3_server, local_ray, tmp_path):
    listing, paths = small_corpus
    uri = f"s3://{BUCKET}/same?{s3_server}"
    local = str(tmp_path / "out")
    for out in (uri, local):
        summary = corpus.run(FEATURES, listing, out, shard_size=4)
        assert summary["files"] == len(paths) and summary["errors"] == 1
    remote_rows = {r["path"]: r for r in _rows(corpus.read_parquet(uri, FEATURES))}
    local_rows = {r["path"]: r for r in _rows(corpus.read_parquet(local))}
    assert sorted(remote_rows) == paths
    assert remote_rows == local_rows
    assert [r["status"] for r in remote_rows.values()].count(5) == 1  # the missing path
    # The same objects as files: spec.json and the shards, nothing staged.
    assert list(_objects(uri)) == sorted(os.listdir(local))
    with open(os.path.join(local, corpus.SPEC_FILE)) as f:
        assert corpus.load_feature_set(uri)[1] == json.load(f)


def test_s3_output_resumes_rewriting_only_a_lost_shard(small_corpus, s3_server, local_ray):
    listing, paths = small_corpus
    uri = f"s3://{BUCKET}/resume?{s3_server}"
    shards = -(-len(paths) // 4)
    assert corpus.run("ember2018-bytes", listing, uri, shard_size=4)["shards_done"] == shards
    before = _objects(uri)
    lost = corpus.shard_name(1, "parquet")
    out_dir = corpus.OutputDir(uri)
    out_dir.filesystem.delete_file(out_dir.path(lost))
    time.sleep(1.1)  # S3 mtimes are whole seconds: the rewrite must show in them
    summary = corpus.run("ember2018-bytes", listing, uri, shard_size=4)
    assert (summary["shards_done"], summary["shards_skipped"]) == (1, shards - 1)
    after = _objects(uri)
    assert after.keys() == before.keys()
    for name, (mtime, digest) in before.items():
        if name == lost:  # rewritten, with the same (deterministic) contents
            assert after[name][0] > mtime and after[name][1] == digest
        else:
            assert after[name] == (mtime, digest), f"{name} was rewritten"
    assert sorted(r["path"] for r in _rows(corpus.read_parquet(uri))) == paths
    # Done: a rerun writes nothing; spec.json pins the job as in a local OUT.
    assert corpus.run("ember2018-bytes", listing, uri, shard_size=4)["shards_skipped"] == shards
    with pytest.raises(ValueError, match="another job"):
        corpus.run("ember2018-bytes", listing, uri, shard_size=5)


def _plain(row):
    """A parsed TFRecord row as Python values."""
    plain = {}
    for column, value in row.items():
        if isinstance(value, tf.SparseTensor):
            value = tf.sparse.to_dense(value)
        value = value.to_list() if isinstance(value, tf.RaggedTensor) else value.numpy()
        plain[column] = value.tolist() if isinstance(value, np.ndarray) else value
    return plain


def test_s3_tfrecord_output_reads_as_tf_reads_it_locally(small_corpus, s3_server, local_ray,
                                                         tmp_path):
    """read_tfrecord reads an s3:// OUT through pyarrow; the same objects,
    copied to a local OUT, are read by TF's TFRecordDataset: same rows."""
    from pyarrow import fs as pafs
    listing, paths = small_corpus
    uri = f"s3://{BUCKET}/tfrecord?{s3_server}"
    corpus.run(FEATURES, listing, uri, fmt="tfrecord", shard_size=4)
    out_dir = corpus.OutputDir(uri)
    local = tmp_path / "copy"
    local.mkdir()
    pafs.copy_files(out_dir.base, str(local), source_filesystem=out_dir.filesystem,
                    destination_filesystem=pafs.LocalFileSystem())
    remote_rows = [_plain(r) for r in corpus.read_tfrecord(uri, FEATURES)]
    local_rows = [_plain(r) for r in corpus.read_tfrecord(str(local), FEATURES)]
    assert sorted(os.fsdecode(r["path"]) for r in remote_rows) == paths
    assert remote_rows == local_rows
    assert [r["status"] for r in remote_rows].count(5) == 1


def test_a_failed_shard_leaves_no_object(small_corpus, s3_server, tmp_path, monkeypatch):
    """A shard that fails midway (--on-error raise, its last file missing,
    after a read batch was written) leaves no object: it was staged in a
    local file, not streamed to S3, where closing the stream would have
    completed the upload with the rows so far (apache/arrow#40502)."""
    paths = small_corpus[1]
    missing = [p for p in paths if p.endswith("/missing")]
    shard = [p for p in paths if p not in missing][:3] + missing
    uri = f"s3://{BUCKET}/failed?{s3_server}"
    corpus.OutputDir(uri).create()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the shard is staged
    writer = corpus.WriteShards(corpus.FeatureSet.load(FEATURES).to_json(), uri,
                                corpus.TFRecordShards(), 1 << 20, "raise",
                                read_batch_bytes=1)  # a file per batch
    batch = {"shard": np.array([0]), "paths": np.array([None], dtype=object)}
    batch["paths"][0] = shard
    with pytest.raises(OSError, match="missing"):
        writer(batch)
    assert corpus.OutputDir(uri).names() == []
    assert os.listdir(tmp_path) == []
