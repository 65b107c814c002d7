"""What each cell of the tested matrix (tests/matrix/run_matrix.py) runs:
the rustfx importable here, in this cell's TensorFlow and Python, against
the committed golden vectors, bit for bit.

The golden vectors are tests/golden/legacy (made by make_legacy_models.py):
docs.txt, the documents (a Python literal); saved_model_outputs.npz, per
registry example f"{extractor}_{i}" its output, dense as one array, ragged
as ".values" and ".row_splits", sparse as ".indices", ".values" and
".dense_shape"; and "read_files.contents", "read_files.status",
"files.byte_histogram" (of files/a.txt and files/missing) and "sha256".
Their directory: $RUSTFX_GOLDEN_DIR, else ../golden/legacy beside this file.

Self-contained (numpy, tensorflow, keras, pytest, rustfx): the runner copies
this file alone to a temporary directory and runs it there, so nothing of
the checkout is importable. By hand, from a directory outside the checkout:

    cd /tmp && PYTHONPATH=$CHECKOUT/python $CHECKOUT/.venv/bin/python -m pytest -q \
        $CHECKOUT/tests/matrix/test_matrix_suite.py

$RUSTFX_MATRIX_RUSTFX_FROM (a directory rustfx must be imported from) and
$RUSTFX_MATRIX_NOT_FROM (one it must not) are the runner's: they check
that a cell tests the wheel, not the checkout.
"""

import ast
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

import rustfx

GOLDEN_DIR = os.environ.get("RUSTFX_GOLDEN_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "golden", "legacy")
# Entries of the golden file that are not registry examples.
IO_KEYS = ("read_files.contents", "read_files.status", "files.byte_histogram", "sha256")

# tf.errors codes (absl::StatusCode) that read_files gives.
OK, INVALID_ARGUMENT, NOT_FOUND = 0, 3, 5


def load_docs():
    with open(os.path.join(GOLDEN_DIR, "docs.txt")) as f:
        return ast.literal_eval(f.read())


def load_golden():
    # Object arrays (strings) need pickle: a file of ours, not untrusted input.
    with np.load(os.path.join(GOLDEN_DIR, "saved_model_outputs.npz"), allow_pickle=True) as z:
        return {k: z[k] for k in z.files}


DOCS = load_docs()
GOLDEN = load_golden()


def registry_specs():
    """{key: spec} for every registry example, keyed as the golden file is."""
    return {f"{name}_{i}": rustfx.FeatureSpec(name, **params)
            for name, entry in sorted(rustfx.registry().items())
            for i, params in enumerate(entry["examples"])}


SPECS = registry_specs()


def parts(x):
    """Any rustfx output as the golden file's parts: {"": dense},
    {"values", "row_splits"} or {"indices", "values", "dense_shape"}."""
    if isinstance(x, tf.RaggedTensor):
        return {"values": x.flat_values, "row_splits": x.row_splits}
    if isinstance(x, tf.SparseTensor):
        return {"indices": x.indices, "values": x.values, "dense_shape": x.dense_shape}
    return {"": x}


def golden_parts(key):
    """The golden file's parts of one example, or None if it has none."""
    found = {k[len(key) + 1:]: v for k, v in GOLDEN.items() if k.startswith(key + ".")}
    return {"": GOLDEN[key]} if key in GOLDEN else found or None


def assert_bitwise(got, want, what):
    """Same dtype, shape and bits; floats by bit pattern, so NaN == NaN and
    0.0 != -0.0."""
    got = np.asarray(got.numpy() if hasattr(got, "numpy") else got)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, golden {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, golden {want.shape}"
    if want.dtype.kind == "f":
        bits = np.dtype(f"u{want.itemsize}")
        got, want = got.view(bits), want.view(bits)
    bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1)) if want.size else []
    assert len(bad) == 0, (f"{what}: {len(bad)} of {want.size} values differ, first at flat "
                           f"index {bad[0]}: {got.reshape(-1)[bad[0]]!r} != "
                           f"{want.reshape(-1)[bad[0]]!r}")


def assert_parts(got, key):
    want = golden_parts(key)
    assert sorted(got) == sorted(want), f"{key}: parts {sorted(got)}, golden {sorted(want)}"
    for part, value in got.items():
        assert_bitwise(value, want[part], key + ("." + part if part else ""))


# ---- 1. every registry example: eagerly, in tf.function, in tf.data ------------


def test_every_golden_example_is_still_in_the_registry():
    examples = {k.split(".")[0] for k in GOLDEN if k not in IO_KEYS}
    assert examples <= set(SPECS), sorted(examples - set(SPECS))


def eager(spec):
    return rustfx.extract(spec, tf.constant(DOCS))


# The lambdas below skip AutoGraph (rustfx's functions do already): there
# is no Python control flow to convert, and under Python 3.13 its converter
# (gast) warns a hundred times.
no_autograph = tf.autograph.experimental.do_not_convert


def in_tf_function(spec):
    f = tf.function(no_autograph(lambda x: rustfx.extract(spec, x)),
                    input_signature=[tf.TensorSpec([None], tf.string)])
    return f(tf.constant(DOCS))


def in_tf_data(spec):
    """Batches of 2 (the last one short) mapped 4 at a time, then put back
    together in order."""
    ds = (tf.data.Dataset.from_tensor_slices(DOCS).batch(2)
          .map(no_autograph(lambda x: rustfx.extract(spec, x)), num_parallel_calls=4))
    batches = list(ds)
    if isinstance(batches[0], tf.SparseTensor):
        return tf.sparse.reorder(tf.sparse.concat(0, batches))
    return tf.concat(batches, axis=0)


@pytest.mark.parametrize("mode", [eager, in_tf_function, in_tf_data],
                         ids=["eager", "tf.function", "tf.data"])
@pytest.mark.parametrize("key", sorted(SPECS))
def test_registry_example_matches_golden(key, mode):
    if golden_parts(key) is None:
        pytest.skip(f"{key} ({SPECS[key]!r}) has no golden vector: an example added "
                    "after the golden file was made")
    assert_parts(parts(mode(SPECS[key])), key)


def test_read_files_files_and_sha256_match_golden():
    files = os.path.join(GOLDEN_DIR, "files")
    paths = tf.constant([os.path.join(files, "a.txt"), os.path.join(files, "missing")])
    contents, status = rustfx.read_files(paths, max_bytes=64, on_error="empty",
                                         with_status=True)
    assert_bitwise(contents, GOLDEN["read_files.contents"], "read_files.contents")
    assert_bitwise(status.codes, GOLDEN["read_files.status"], "read_files.status")
    assert_bitwise(rustfx.byte_histogram(rustfx.files(paths, max_bytes=64, on_error="empty")),
                   GOLDEN["files.byte_histogram"], "files.byte_histogram")
    assert_bitwise(rustfx.sha256(tf.constant(DOCS)), GOLDEN["sha256"], "sha256")


# ---- 2. a SavedModel saved here, loaded in a new process -------------------------


def saved_model_keys():
    """Every example with a golden vector (tracing them all is cheap),
    checked to cover every output kind."""
    keys = [k for k in sorted(SPECS) if golden_parts(k) is not None]
    kinds = {SPECS[k].output["kind"] for k in keys}
    assert kinds == {"dense", "ragged", "sparse"}, kinds
    return keys


class Features(tf.Module):
    def __init__(self, keys):
        super().__init__()
        self.keys = keys

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def __call__(self, contents):
        out = {}
        for key in self.keys:
            for part, t in parts(rustfx.extract(SPECS[key], contents)).items():
                out[key + ("." + part if part else "")] = t
        out["sha256"] = rustfx.sha256(contents)
        return out


# Run by a new process of this interpreter, with TF's logging on: rustfx first
# (it registers the ops), then the SavedModel, whose outputs it writes to an
# .npz. Between the markers, all it prints is what `import rustfx` printed
# (TF's own start-up messages come before); the report says what it loaded.
FRESH_PROCESS = textwrap.dedent("""
    import ast, json, sys, warnings
    import numpy as np
    import tensorflow as tf

    def mark(text):
        sys.stdout.flush(); sys.stderr.flush()
        print(text, flush=True); print(text, file=sys.stderr, flush=True)

    saved, docs, out, report = sys.argv[1:]
    mark("@@importing-rustfx@@")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import rustfx
    mark("@@imported-rustfx@@")
    with open(report, "w") as f:
        json.dump({"file": rustfx.__file__, "version": getattr(rustfx, "__version__", None),
                   "tf": tf.__version__,
                   "warnings": [f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}"
                                for w in caught]}, f)

    with open(docs) as f:
        docs = ast.literal_eval(f.read())
    loaded = tf.saved_model.load(saved)
    np.savez(out, **{k: v.numpy() for k, v in loaded(tf.constant(docs)).items()})
""")


@pytest.fixture(scope="module")
def fresh_process(tmp_path_factory):
    """Saves Features(...) here, then runs FRESH_PROCESS on it. Returns
    (saved keys, completed process, its report, its outputs)."""
    tmp = tmp_path_factory.mktemp("fresh")
    keys = saved_model_keys()
    tf.saved_model.save(Features(keys), str(tmp / "saved"))
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    proc = subprocess.run([sys.executable, "-c", FRESH_PROCESS, str(tmp / "saved"),
                           os.path.join(GOLDEN_DIR, "docs.txt"), str(tmp / "out.npz"),
                           str(tmp / "report.json")],
                          capture_output=True, text=True, timeout=300, cwd=tmp, env=env)
    report = got = None
    if (tmp / "report.json").exists():
        report = json.loads((tmp / "report.json").read_text())
    if (tmp / "out.npz").exists():
        with np.load(tmp / "out.npz", allow_pickle=True) as z:  # our own file
            got = {k: z[k] for k in z.files}
    return keys, proc, report, got


def test_saved_model_reloads_in_a_new_process(fresh_process):
    keys, proc, _, got = fresh_process
    assert proc.returncode == 0 and got is not None, proc.stderr[-3000:]
    want = {k for k in GOLDEN if k.split(".")[0] in keys} | {"sha256"}
    assert set(got) == want, sorted(set(got) ^ want)
    for k, v in got.items():
        assert_bitwise(v, GOLDEN[k], "SavedModel " + k)


# ---- 3. a .keras round trip ------------------------------------------------------


def test_keras_file_round_trip(tmp_path):
    keras.utils.set_random_seed(0)
    ngram_params = dict(num_buckets=1000, ngram_widths=(1, 2), output="sequence",
                        max_tokens=32, pad_value=1000)
    inputs = keras.Input(shape=(), dtype="string")
    ids = rustfx.layers.HashedNgrams(**ngram_params, name="ngrams")(inputs)
    x = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(1001, 4)(ids))
    x = keras.layers.Concatenate()([x, rustfx.layers.ByteHistogram(name="bytes")(inputs)])
    model = keras.Model(inputs, keras.layers.Dense(3)(x))
    docs = tf.constant(DOCS)
    before = model(docs).numpy()

    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    assert np.array_equal(loaded(docs).numpy(), before)
    # The layers came back with their specs: the functions' outputs, bit for bit.
    assert_bitwise(loaded.get_layer("ngrams")(docs),
                   rustfx.hashed_ngrams(docs, **ngram_params).numpy(), "HashedNgrams")
    assert_bitwise(loaded.get_layer("bytes")(docs), GOLDEN["byte_histogram_0"], "ByteHistogram")


# ---- 4. hostile paths -------------------------------------------------------------


def call_with_deadline(fn, fifo, seconds=30):
    """fn() in a thread; if it is still running after `seconds`, the FIFO is
    opened for writing and closed (which ends a read blocked on it, or an
    open(2) waiting for a writer) and the test fails: a hang is a failure,
    not a stuck matrix."""
    result = {}

    def target():
        try:
            result["value"] = fn()
        except BaseException as e:  # noqa: B036 (re-raised in the test's thread)
            result["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        while thread.is_alive() and time.monotonic() < start + seconds + 30:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
            thread.join(0.1)
        pytest.fail(f"hung: still running after {seconds} s on hostile paths "
                    f"({'released' if not thread.is_alive() else 'not released'} by opening "
                    "the FIFO for writing)")
    if "error" in result:
        raise result["error"]
    return result["value"]


@pytest.fixture
def hostile(tmp_path):
    """[(name, path bytes, expected code)]: one regular file, then the bad ones."""
    root = os.fsencode(tmp_path)
    regular = os.path.join(root, b"regular")
    with open(regular, "wb") as f:
        f.write(bytes(range(256)) + b"more than max_bytes")
    fifo = os.path.join(root, b"fifo")
    os.mkfifo(fifo)
    os.mkdir(os.path.join(root, b"dir"))
    return [
        ("regular", regular, OK),
        ("fifo", fifo, INVALID_ARGUMENT),
        ("directory", os.path.join(root, b"dir"), INVALID_ARGUMENT),
        ("missing", os.path.join(root, b"missing"), NOT_FOUND),
        ("dev_zero", b"/dev/zero", INVALID_ARGUMENT),
        ("empty_path", b"", INVALID_ARGUMENT),
        ("nul_byte", regular + b"\0/etc/passwd", INVALID_ARGUMENT),
        ("invalid_utf8", os.path.join(root, b"missing-\xff\xfe-\xc3"), NOT_FOUND),
    ]


def test_hostile_paths_do_not_hang_and_get_error_codes(hostile):
    names = [name for name, _, _ in hostile]
    paths = tf.constant([path for _, path, _ in hostile])
    fifo = hostile[1][1]
    max_bytes = 64

    contents, status = call_with_deadline(lambda: rustfx.read_files(
        paths, max_bytes=max_bytes, on_error="empty", with_status=True), fifo)
    codes = dict(zip(names, status.codes.numpy().tolist()))
    assert codes == {name: code for name, _, code in hostile}, codes
    messages = dict(zip(names, status.messages.numpy().tolist()))
    assert all(messages[n] for n in names if n != "regular"), messages
    with open(hostile[0][1], "rb") as f:
        regular = f.read(max_bytes)
    assert contents.numpy().tolist() == [regular] + [b""] * (len(names) - 1)

    # files(): each op reads them itself, by the same rules.
    from_files = call_with_deadline(lambda: rustfx.byte_histogram(
        rustfx.files(paths, max_bytes=max_bytes, on_error="empty")), fifo)
    assert_bitwise(from_files, rustfx.byte_histogram(contents).numpy(), "files() vs read_files")
    in_tf_data = call_with_deadline(lambda: tf.concat(list(
        tf.data.Dataset.from_tensor_slices(paths).batch(3).map(
            no_autograph(lambda p: rustfx.byte_histogram(
                rustfx.files(p, max_bytes=max_bytes, on_error="empty"))),
            num_parallel_calls=4)), axis=0), fifo)
    assert_bitwise(in_tf_data, rustfx.byte_histogram(contents).numpy(), "files() in tf.data")

    # on_error="raise": the FIFO is an error, not a wait for a writer.
    with pytest.raises(tf.errors.InvalidArgumentError, match="FIFO"):
        call_with_deadline(lambda: rustfx.read_files(tf.constant([fifo])), fifo)


# ---- 5. import rustfx: quiet, and from where the runner says -----------------------

ALARMING = ("error", "warning", "traceback", "exception", "undefined symbol", "not found",
            "failed", "deprecat", "abort", "fatal", "segmentation", "mismatch")


def between_marks(text):
    return text.split("@@importing-rustfx@@\n", 1)[-1].split("@@imported-rustfx@@", 1)[0]


def test_import_is_quiet_and_from_the_expected_place(fresh_process):
    _, proc, report, _ = fresh_process
    assert report is not None, proc.stderr[-3000:]
    print(f"rustfx {report['version'] or '(no __version__)'} from {report['file']}, "
          f"TF {report['tf']}")
    said = between_marks(proc.stdout) + between_marks(proc.stderr)
    assert not any(word in said.lower() for word in ALARMING), said
    # TF's log lines at WARNING and above (W0000, E0000, F0000 ...).
    assert not any(line[:1] in "WEF" and line[1:5].isdigit() for line in said.splitlines()), said
    here = os.path.dirname(os.path.realpath(report["file"]))
    ours = [w for w in report["warnings"] if here in w or "rustfx" in w]
    assert not ours, ours

    expected_from = os.environ.get("RUSTFX_MATRIX_RUSTFX_FROM")
    if expected_from:
        assert here.startswith(os.path.realpath(expected_from) + os.sep), (here, expected_from)
    not_from = os.environ.get("RUSTFX_MATRIX_NOT_FROM")
    if not_from:
        assert not here.startswith(os.path.realpath(not_from) + os.sep), (here, not_from)
    # And this process's rustfx is the same one.
    assert os.path.realpath(rustfx.__file__) == os.path.realpath(report["file"])


# ---- 6. rustfx.offload on this TensorFlow's tf.data service ---------------------


@pytest.mark.parametrize("remote", ["always", "only"])
def test_offload_to_an_in_process_worker_is_exact(tmp_path, remote):
    # Files written here (the checkout is not importable); the oracle is the
    # same pipeline run locally. "only": the worker's batches are all but
    # the first few (the local sweep paused once its job delivered).
    docs = [d if isinstance(d, bytes) else d.encode() for d in load_docs()] * 8
    paths = []
    for i, doc in enumerate(docs):
        path = tmp_path / f"doc{i}"
        path.write_bytes(doc)
        paths.append(str(path))

    def fx(files):
        return rustfx.hashed_ngrams(files, num_buckets=1 << 16, ngram_widths=(1, 2))

    pipe = rustfx.pipeline.from_files(paths, fx, batch_size=4)
    expected = [row.numpy() for batch in pipe.dataset() for row in batch]
    off = rustfx.offload(pipe, labels=np.arange(len(paths)), remote=remote)
    worker = tf.data.experimental.service.WorkerServer(
        tf.data.experimental.service.WorkerConfig(dispatcher_address=off.dispatcher_address))
    try:
        got = {}
        for rows, labels in off:
            for row, label in zip(rows, labels.numpy()):
                assert int(label) not in got
                got[int(label)] = row.numpy()
        assert sorted(got) == list(range(len(paths)))
        for i, row in enumerate(expected):
            np.testing.assert_array_equal(got[i], row)
        assert off.report["finished"]
        assert remote == "always" or off.report["remote"] > 0, off.report
    finally:
        worker.stop()
