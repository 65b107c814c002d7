"""A path is bytes: a file whose name is not UTF-8 (b"bad\\xffname", as in
malware corpora) goes through every entry point that takes paths and comes
back with exactly its name, escaped where it is printed (\\\\ \\t \\n \\r
\\xHH, which codecs.escape_decode reads back). rustfx-predict and
rustfx-sensor are checked in test_predict.py and test_sensor.py, with their
models; here: rustfx-features (rows and --explain), the ops (read_files,
rustfx.files), rustfx_core, explain_model and its reports, and the Ray
corpus job (Parquet and TFRecord shards, resume)."""

import codecs
import os
import subprocess

import numpy as np
import pytest
import tensorflow as tf

import rustfx
import rustfx_core

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUST_CLI = os.path.join(ROOT, "target", "release", "rustfx-features")
NAME = b"bad\xffname"
CONTENTS = b"MZ\x90\x00 hello, world: the quick brown fox\n" * 8


@pytest.fixture
def bad(tmp_path):
    """(the path's bytes, the str Python gives it) of a file named NAME."""
    path = os.path.join(os.fsencode(tmp_path), NAME)
    with open(path, "wb") as f:
        f.write(CONTENTS)
    return path, os.fsdecode(path)


def unescape(field):
    """The bytes a printed (escaped) field stands for."""
    return codecs.escape_decode(field)[0]


def histogram():
    return rustfx.byte_histogram([CONTENTS]).numpy()[0]


# ---- rustfx-features ----------------------------------------------------------------

def test_rustfx_features_reads_and_prints_the_exact_name(bad):
    path, _ = bad
    run = subprocess.run([RUST_CLI, "byte_histogram", path, path], capture_output=True)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 2
    for line in lines:
        field, values = line.split(b"\t")
        assert b"bad\\xffname" in field and unescape(field) == path
        got = np.array([float(v) for v in values.split()], np.float32)
        assert got.tobytes() == histogram().tobytes()


def test_rustfx_features_explain_prints_the_exact_name(bad):
    path, _ = bad
    run = subprocess.run([RUST_CLI, "--explain", "byte_histogram", path], capture_output=True)
    assert run.returncode == 0, run.stderr
    header, *rows = run.stdout.splitlines()
    assert header.split(b"\t")[0] == b"path" and rows
    assert {unescape(row.split(b"\t")[0]) for row in rows} == {path}


def test_rustfx_features_names_an_unreadable_file_escaped(tmp_path):
    missing = os.path.join(os.fsencode(tmp_path), NAME)
    run = subprocess.run([RUST_CLI, "byte_histogram", missing], capture_output=True)
    assert run.returncode == 1
    assert b"bad\\xffname" in run.stderr and b"1 of 1 files failed" in run.stderr


def test_rustfx_features_spec_file_named_not_utf8(bad, tmp_path):
    path, _ = bad
    spec = os.path.join(os.fsencode(tmp_path), b"spec\xfe.json")
    with open(spec, "w") as f:
        f.write('{"extractor": "byte_histogram"}')
    run = subprocess.run([RUST_CLI, "--spec", spec, path], capture_output=True)
    assert run.returncode == 0, run.stderr
    assert unescape(run.stdout.split(b"\t")[0]) == path


# ---- the ops --------------------------------------------------------------------------

def test_read_files_and_files_take_the_name_as_str_or_bytes(bad):
    path, text = bad
    for given in (path, text, [text], np.array([text]), tf.constant([path])):
        contents = np.asarray(rustfx.read_files(given).numpy(), object)
        assert contents.reshape(-1).tolist() == [CONTENTS], given
        row = rustfx.byte_histogram(rustfx.files(given)).numpy().reshape(-1, 256)[0]
        assert row.tobytes() == histogram().tobytes(), given


def test_read_files_names_a_missing_file_by_its_bytes(tmp_path):
    missing = os.fsdecode(os.path.join(os.fsencode(tmp_path), NAME))
    _, status = rustfx.read_files([missing], on_error="empty", with_status=True)
    assert status.codes.numpy().tolist() == [5]
    assert b"bad\\xffname" in status.messages.numpy()[0]


def test_read_files_layer_takes_the_name(bad):
    path, text = bad
    assert rustfx.layers.ReadFiles()([text]).numpy().tolist() == [CONTENTS]


# ---- rustfx_core -----------------------------------------------------------------------

def test_rustfx_core_reads_the_name_as_str_or_bytes(bad):
    path, text = bad
    documents = rustfx_core.read_files([path, text])
    assert documents.codes.tolist() == [0, 0]
    sizes, digests = documents.digest()
    assert sizes.tolist() == [len(CONTENTS)] * 2 and digests[0] == digests[1]


def test_rustfx_core_corpus_rows_keep_the_name(bad):
    from rustfx_core import corpus
    path, text = bad
    table = corpus.extract_table([text, path], "ember2018-bytes")
    assert table.column("path").to_pylist() == [path, path]
    assert table.column("status").to_pylist() == [0, 0]


# ---- explain ---------------------------------------------------------------------------

def test_explain_model_reads_the_file_itself_by_its_name(bad, tmp_path):
    import keras
    from rustfx_core import report
    path, text = bad
    contents = keras.Input((), dtype="string")
    layer = rustfx.layers.ByteHistogram(files={})
    model = keras.Model(contents, keras.layers.Dense(1)(layer(contents)))
    result = rustfx.explain_model(model, text)
    assert os.fsencode(result.path) == path and result.size == len(CONTENTS)
    shown = report.text_report(result)
    assert "bad\\xffname" in shown
    shown.encode("utf-8")  # printable and writable as UTF-8
    html = report.write_html(result, str(tmp_path / "report.html"), CONTENTS)
    with open(html, encoding="utf-8") as f:
        assert "bad\\xffname" in f.read()


# ---- the Ray corpus job ----------------------------------------------------------------

@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray[data]')")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    if started:
        ray.shutdown()


@pytest.mark.parametrize("fmt", ["parquet", "tfrecord"])
def test_corpus_job_keeps_the_name_and_one_odd_name_stops_nothing(fmt, local_ray, tmp_path):
    from rustfx import corpus
    src = tmp_path / "src"
    src.mkdir()
    names = [NAME, b"good", "caf\u00e9".encode(), b"tab\there", b"back\\slash"]
    for name in names:
        with open(os.path.join(os.fsencode(src), name), "wb") as f:
            f.write(CONTENTS)
    want = sorted(os.path.join(os.fsencode(src), n) for n in names)
    out = str(tmp_path / "out")
    summary = corpus.run("ember2018-bytes", str(src), out, fmt=fmt, shard_size=2)
    assert summary["files"] == len(names) and summary["errors"] == 0
    if fmt == "parquet":
        rows = corpus.read_parquet(out).to_pylist()
        paths = [r["path"] for r in rows]
    else:
        rows = [{k: v.numpy() for k, v in row.items()} for row in corpus.read_tfrecord(out)]
        paths = [r["path"] for r in rows]
    assert sorted(paths) == want  # the exact bytes, each once
    assert all(isinstance(p, bytes) for p in paths)
    for row in rows:
        got = np.asarray(row["byte_histogram"], np.float32)
        assert got.tobytes() == histogram().tobytes(), row["path"]
    # Resume: the same job finds every shard committed.
    again = corpus.run("ember2018-bytes", str(src), out, fmt=fmt, shard_size=2)
    assert again["shards_done"] == 0 and again["shards_skipped"] == summary["shards_done"]


def test_corpus_list_file_with_a_name_that_is_not_utf8(bad, local_ray, tmp_path):
    from rustfx import corpus
    path, _ = bad
    listing = tmp_path / "list"
    listing.write_bytes(path + b"\n")
    out = str(tmp_path / "out")
    summary = corpus.run("ember2018-bytes", str(listing), out, shard_size=4)
    assert summary["files"] == 1 and summary["errors"] == 0
    assert corpus.read_parquet(out).column("path").to_pylist() == [path]


def test_a_format_1_output_is_not_resumed(bad, local_ray, tmp_path):
    """Shards of format 1 had a string path column: a rerun is refused
    rather than mixing them with binary ones."""
    import json
    from rustfx import corpus
    path, _ = bad
    src = os.path.dirname(path)
    out = tmp_path / "out"
    corpus.run("ember2018-bytes", os.fsdecode(src), str(out), shard_size=4)
    meta = json.loads((out / corpus.SPEC_FILE).read_text())
    meta["format_version"] = 1
    (out / corpus.SPEC_FILE).write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="format_version differs"):
        corpus.run("ember2018-bytes", os.fsdecode(src), str(out), shard_size=4)


# ---- the input pipeline: from_files, profile's stages, offload ------------------------

def test_from_files_and_offload_keep_the_name(bad):
    path, name = bad
    pipe = rustfx.pipeline.from_files([path, name], rustfx.byte_histogram, batch_size=2)
    assert pipe.paths == [path, path]
    rows = np.concatenate([b.numpy() for b in pipe.dataset()])
    assert rows.tobytes() == np.stack([histogram(), histogram()]).tobytes()
    stages, _, contents = rustfx.pipeline.time_stages(pipe, 2)
    assert list(contents) == [CONTENTS, CONTENTS] and {s.name for s in stages} >= {"read"}
    off = rustfx.offload(pipe, None, labels=np.arange(2))
    got = [(r.numpy(), int(label)) for rows, labels in off for r, label in zip(rows, labels)]
    assert sorted(label for _, label in got) == [0, 1]
    assert all(r.tobytes() == histogram().tobytes() for r, _ in got)
