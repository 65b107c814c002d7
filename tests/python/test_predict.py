"""rustfx-predict: a SavedModel with rustfx FX served from Rust, no Python.

`make predict` builds target/release/rustfx-predict (cargo feature
`predict`: bindgen declarations of TensorFlow's C API from the pip wheel's
headers). It loads the op library (TF_LoadLibrary) and the SavedModel
(TF_LoadSessionFromSavedModel), reads the files like read_files and feeds
them as one tf.string batch. Its outputs must equal those of the same
SavedModel loaded in Python, bit for bit; every bad input must give a clear
error, never a crash or a hang.
"""

import codecs
import json
import os
import re
import subprocess

import numpy as np
import pytest
import tensorflow as tf

import rustfx
from rustfx import _loader
from rustfx._loader import ops
from hostile_files import assert_each_reported, unreadable_files
from make_lock import run_make

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREDICT = os.path.join(ROOT, "target", "release", "rustfx-predict")
OPS = _loader.library_path()
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
ENV.pop("RUSTFX_LIBRARY", None)


class Scorer(tf.Module):
    """FX by rustfx, a small dense layer, and outputs of every printed dtype."""

    def __init__(self):
        super().__init__()
        self.kernel = tf.Variable(tf.random.stateless_normal([256 + 104, 4], seed=[7, 1]))
        self.bias = tf.Variable(tf.linspace(-1.0, 1.0, 4))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(self, contents):
        histogram = rustfx.byte_histogram(contents)
        strings = rustfx.string_features(contents)
        logits = tf.matmul(tf.concat([histogram, strings], axis=1), self.kernel) + self.bias
        return {
            "histogram": histogram,
            "strings": strings,
            "ids": rustfx.hashed_ngrams(contents, num_buckets=1 << 20, ngram_widths=(1, 2),
                                        tokenizer="word", output="sequence", max_tokens=16),
            "probabilities": tf.nn.softmax(logits),
            "label": tf.argmax(logits, axis=1, output_type=tf.int32),
            "mean": tf.reduce_mean(tf.cast(histogram, tf.float64), axis=1),
            "empty": tf.equal(tf.strings.length(contents), 0),
            "head": tf.strings.substr(contents, 0, 6),
        }

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def numbers(self, x):
        return {"y": x * 2.0}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string),
                                  tf.TensorSpec([None], tf.string)])
    def pairs(self, a, b):
        return {"y": rustfx.byte_histogram(a) + rustfx.byte_histogram(b)}

    @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
    def one(self, x):
        return {"y": rustfx.byte_histogram(x)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def total(self, x):
        return {"y": tf.reduce_sum(rustfx.byte_histogram(x))}


@pytest.fixture(scope="module")
def predict():
    out = run_make("predict", env=ENV)
    assert out.returncode == 0, out.stderr[-4000:]
    return PREDICT


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("predict") / "model")
    module = Scorer()
    tf.saved_model.save(module, path, signatures={
        "serving_default": module.serve, "numbers": module.numbers,
        "pairs": module.pairs, "one": module.one, "total": module.total})
    return path


@pytest.fixture(scope="module")
def loaded(model):
    return tf.saved_model.load(model).signatures["serving_default"]


@pytest.fixture(scope="module")
def files(machine_files, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("files")
    empty = tmp / "empty"
    empty.write_bytes(b"")
    odd = tmp / "tab\there and space.txt"
    odd.write_bytes(b"int main(void) { return 0; }\n")
    return machine_files[:14] + [str(empty), str(odd)]


def run(predict, *args, env=ENV):
    return subprocess.run([predict, *args], capture_output=True, timeout=120, env=env)


def parse_value(text, dtype):
    if dtype == np.float32 or dtype == np.float64:
        return dtype(text)
    if dtype == np.bool_:
        return {"true": True, "false": False}[text]
    return int(text)


def parse(stdout, dtypes):
    """{path: {key: np.array}} from rustfx-predict's lines; a path as the
    str Python gives its name (os.fsdecode of the bytes it escapes)."""
    rows = {}
    for line in stdout.decode().splitlines():
        path, *fields = line.split("\t")
        path = os.fsdecode(codecs.escape_decode(path)[0])
        row = {}
        for field in fields:
            key, text = field.split("=", 1)
            if dtypes[key] == object:
                row[key] = np.array([codecs.escape_decode(s)[0] for s in
                                     re.findall(r'"((?:[^"\\]|\\.)*)"', text)], dtype=object)
            else:
                row[key] = np.array([parse_value(v, dtypes[key]) for v in text.split(" ")],
                                    dtype=dtypes[key])
        rows[path] = row
    return rows


def python_outputs(loaded, contents):
    return {k: v.numpy() for k, v in loaded(contents=tf.constant(contents)).items()}


def assert_bit_equal(got, want, context):
    """Exact equality: floats compared by their bits."""
    assert got.dtype == want.dtype, context
    if want.dtype.kind == "f":
        got, want = got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}")
    np.testing.assert_array_equal(got, want.reshape(got.shape), err_msg=context)


def check_against_python(stdout, loaded, paths, contents):
    want = python_outputs(loaded, contents)
    dtypes = {key: (object if v.dtype == object else v.dtype.type) for key, v in want.items()}
    got = parse(stdout, dtypes)
    assert list(got) == paths
    for i, path in enumerate(paths):
        assert sorted(got[path]) == sorted(want)
        for key, values in want.items():
            assert_bit_equal(got[path][key], np.asarray(values[i], dtype=values.dtype).reshape(-1),
                             f"{path} {key}")


def test_outputs_equal_python_bit_for_bit(predict, model, loaded, files):
    out = run(predict, "--ops", OPS, "--model", model, *files)
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    contents = [open(f, "rb").read() for f in files]
    check_against_python(out.stdout, loaded, files, contents)
    # The path with a tab stays on its line, escaped.
    assert b"tab\\there and space.txt\t" in out.stdout


def test_a_file_name_that_is_not_utf8_comes_back_exactly(predict, model, loaded, tmp_path):
    """A path is bytes: read by them, printed escaped (\\xHH), read back
    exactly; a missing one is named on stderr the same way."""
    bad = os.path.join(os.fsencode(tmp_path), b"bad\xffname")
    contents = b"int main(void) { return 0; }\n"
    with open(bad, "wb") as f:
        f.write(contents)
    missing = os.path.join(os.fsencode(tmp_path), b"gone\xfe")
    out = run(predict, "--ops", OPS, "--model", model, bad, missing)
    assert out.returncode == 1, out.stderr.decode()[-3000:]
    assert b"gone\\xfe" in out.stderr and b"1 of 2 files failed" in out.stderr
    assert b"bad\\xffname\t" in out.stdout
    check_against_python(out.stdout, loaded, [os.fsdecode(bad)], [contents])


def split_model_rounding(stdout):
    """Each line's fields but `probabilities`, and the probabilities: TF's
    softmax and matmul are not bit for bit the same from one batch size to
    another (Eigen vectorizes by the batch's length; on a CPU with AVX2
    and no AVX-512, 0.99999994 in a batch of 16 is 1 in a batch of 3)."""
    fields, probabilities = [], []
    for line in stdout.decode().splitlines():
        row = line.split("\t")
        fields.append([f for f in row if not f.startswith("probabilities=")])
        probabilities.append([float(v) for f in row if f.startswith("probabilities=")
                              for v in f.split("=", 1)[1].split()])
    return fields, np.array(probabilities)


def test_batches_and_max_bytes(predict, model, loaded, files):
    """Smaller batches give the same lines (the features bit for bit, the
    model's probabilities to TF's rounding); --max-bytes truncates like
    read_files(max_bytes=...)."""
    whole = run(predict, "--ops", OPS, "--model", model, *files)
    batched = run(predict, "--ops", OPS, "--model", model, "--batch-size", "3", *files)
    assert batched.returncode == 0, batched.stderr.decode()[-3000:]
    whole_fields, whole_probabilities = split_model_rounding(whole.stdout)
    batched_fields, batched_probabilities = split_model_rounding(batched.stdout)
    assert batched_fields == whole_fields
    assert whole_probabilities.shape == (len(files), 4)
    np.testing.assert_allclose(batched_probabilities, whole_probabilities, rtol=0, atol=1e-6)
    out = run(predict, "--ops", OPS, "--model", model, "--max-bytes=1000", *files)
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    truncated = rustfx.read_files(tf.constant(files), max_bytes=1000).numpy().tolist()
    check_against_python(out.stdout, loaded, files, truncated)


def test_library_from_environment(predict, model, files):
    env = {**ENV, "RUSTFX_LIBRARY": OPS}
    out = run(predict, "--model", model, files[0], env=env)
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    assert out.stdout.startswith(files[0].encode() + b"\t")


def test_default_op_library_is_the_one_beside_the_program(predict, model, loaded, files):
    """As a new user runs it, with no --ops and no $RUSTFX_LIBRARY: `make
    build` leaves the op library beside rustfx-predict, and it is that one
    (not the core's C ABI, which once overwrote it) that loads."""
    beside = os.path.join(os.path.dirname(predict), "librustfx_ops.so")
    assert os.path.exists(beside), beside
    out = run(predict, "--model", model, *files[:3])
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    contents = [open(f, "rb").read() for f in files[:3]]
    check_against_python(out.stdout, loaded, files[:3], contents)


def test_without_the_op_library_the_error_says_what_to_do(predict, model, files):
    out = run(predict, "--no-ops", "--model", model, files[0])
    stderr = out.stderr.decode()
    assert out.returncode == 2, stderr[-3000:]
    assert "Op type not registered 'Rustfx>" in stderr, stderr[-3000:]
    assert "load the rustfx op library before the model (drop --no-ops" in stderr
    assert out.stdout == b""


def test_bad_files_are_reported_and_the_rest_go_through(predict, model, loaded, files,
                                                        tmp_path):
    good = [files[0], files[1]]
    bad = unreadable_files(tmp_path)
    order = [good[0], *bad, good[1]]
    out = run(predict, "--ops", OPS, "--model", model, *order)
    stderr = out.stderr.decode()
    assert out.returncode == 1, stderr[-3000:]
    assert_each_reported(stderr, bad, len(order))
    check_against_python(out.stdout, loaded, good, [open(f, "rb").read() for f in good])


@pytest.mark.parametrize("args,message", [
    (["--model", "/nonexistent/model"],
     "cannot load the SavedModel in '/nonexistent/model' (tag serve): NOT_FOUND"),
    (["--model", "MODEL", "--signature", "nope"],
     "has no signature 'nope'; it has: numbers, one, pairs, serving_default, total"),
    (["--model", "MODEL", "--signature", "numbers"],
     "signature 'numbers' input 'x' is float32, not string"),
    (["--model", "MODEL", "--signature", "pairs"], "signature 'pairs' takes 2 inputs (a, b)"),
    (["--model", "MODEL", "--signature", "one"], "signature 'one' input 'x' has shape []"),
    (["--model", "MODEL", "--ops", "/etc/hostname"], "is not a rustfx op library"),
    (["--model", "MODEL", "--ops", "/nonexistent/ops.so"],
     "cannot read the op library '/nonexistent/ops.so'"),
    (["--model", "MODEL", "--batch-size", "0"], "--batch-size must be in [1, 65536], got 0"),
    (["--signature", "x"], "--model DIR is required"),
])
def test_bad_model_and_arguments_are_clear_errors(predict, model, files, args, message):
    args = [model if a == "MODEL" else a for a in args]
    if "--ops" not in args:
        args = ["--ops", OPS, *args]
    out = run(predict, *args, files[0])
    stderr = out.stderr.decode()
    assert out.returncode == 2 and message in stderr, stderr[-3000:]
    assert out.stdout == b""


def test_output_without_a_row_per_file_fails_the_batch(predict, model, files):
    out = run(predict, "--ops", OPS, "--model", model, "--signature", "total", *files[:2])
    stderr = out.stderr.decode()
    assert out.returncode == 1, stderr[-3000:]
    assert "output 'y' has shape []" in stderr and f"'{files[0]}'" in stderr
    assert out.stdout == b""


def test_model_without_signatures(predict, tmp_path, files):
    path = str(tmp_path / "bare")
    tf.saved_model.save(tf.Module(), path)
    out = run(predict, "--ops", OPS, "--model", path, files[0])
    stderr = out.stderr.decode()
    assert out.returncode == 2 and "has no signatures" in stderr, stderr[-3000:]


def keras_classifier():
    keras = tf.keras
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((256 + 104,)), keras.layers.Dense(5),
                              keras.layers.Dense(3, activation="softmax")])

    def serve(contents):
        x = tf.concat([rustfx.byte_histogram(contents), rustfx.string_features(contents)], 1)
        return {"probabilities": model(x)}
    return model, serve


def test_keras_model_exported_with_export_archive(predict, tmp_path, files):
    """What Keras 3 users should ship: ExportArchive (or model.export)."""
    model, serve = keras_classifier()
    archive = tf.keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serving_default", serve,
                         input_signature=[tf.TensorSpec([None], tf.string)])
    path = str(tmp_path / "keras")
    archive.write_out(path, verbose=False)
    out = run(predict, "--ops", OPS, "--model", path, *files[:4])
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    loaded = tf.saved_model.load(path).signatures["serving_default"]
    check_against_python(out.stdout, loaded, files[:4],
                         [open(f, "rb").read() for f in files[:4]])


def test_keras_model_inside_tf_module_gets_a_hint(predict, tmp_path, files):
    """tf.saved_model.save of a tf.Module holding a Keras 3 model: TF's C++
    loader (TF Serving's too) does not restore its variables
    (keras-team/keras#20095); rustfx-predict says what to do instead."""
    model, serve = keras_classifier()

    class Wrapper(tf.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def __call__(self, contents):
            return serve(contents)
    path = str(tmp_path / "wrapped")
    tf.saved_model.save(Wrapper(), path)
    out = run(predict, "--ops", OPS, "--model", path, files[0])
    if out.returncode != 0:  # until Keras or TF fixes it
        stderr = out.stderr.decode()
        assert out.returncode == 1 and "Could not find variable" in stderr, stderr[-3000:]
        assert "export it with model.export(dir) or keras.export.ExportArchive" in stderr


def test_rust_unit_tests(predict):
    """The C API layer (string tensors, ownership, statuses) and the
    signature reader, tested in Rust (`make test-predict`)."""
    out = run_make("test-predict", env=ENV, timeout=600)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    assert re.search(r"test result: ok\. \d+ passed; 0 failed", out.stdout), out.stdout[-2000:]


def test_a_spec_of_another_output_version_is_refused_at_load(predict, tmp_path):
    # A SavedModel whose op carries a spec this build does not compute (as
    # one made by a future rustfx would): the C API's shape functions cannot
    # read specs, so rustfx-predict reads them from the MetaGraphDef and
    # refuses before reading any file.
    spec = json.loads(rustfx.FeatureSpec("byte_histogram").to_json())
    spec["output_version"] = 999

    class Future(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def serve(self, contents):
            return {"h": ops.Rustfx_DenseRows(input=contents, spec=json.dumps(spec),
                                                     Tout=tf.float32)}

    path = str(tmp_path / "future")
    module = Future()
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    out = run(predict, "--ops", OPS, "--model", path, "/etc/hostname")
    assert out.returncode != 0 and out.stdout == b""
    message = out.stderr.decode()
    assert "Rustfx>DenseRows" in message, message
    assert "made for output version 999 of byte_histogram" in message, message
    assert "computes output version 1" in message, message
