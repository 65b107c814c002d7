"""Keras layers: each equals its rustfx function (which the other tests check
against TF, scikit-learn and EMBER) eagerly, in tf.data and inside a model;
configs round-trip; bad parameters fail at construction with the op's error;
a model saves as .keras and as a SavedModel and reloads, bit for bit, in a
fresh process that imports rustfx, and fails to load in one that does not."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import rustfx
from rustfx import layers

FIXED_DOCS = [b"MZ\x90\x00 hello World hello", b"",
              "caf\u00e9 \u03a3 x".encode(),
              b"C:\\Windows\\system32 http://example.com HKEY_LOCAL_MACHINE",
              bytes(range(256)) * 9]

# (layer class, keywords) for every example of every extractor of the
# core's registry: the layer and the function take the same keywords, and a
# new extractor is covered with no edit here.
REGISTRY = rustfx.registry()
LAYER = {name: getattr(layers, "".join(w.capitalize() for w in name.split("_")))
         for name in REGISTRY}
CASES = [(LAYER[name], params) for name, entry in REGISTRY.items()
         for params in entry["examples"]]
FUNCTIONS = {cls: getattr(rustfx, name) for name, cls in LAYER.items()}
FUNCTIONS[layers.ReadFiles] = rustfx.read_files
IDS = [f"{cls.__name__}-{i}" for i, (cls, _) in enumerate(CASES)]

# Turns any output into named numpy arrays. Run here and, as source, in the
# fresh processes (which must not import this module: it imports rustfx).
FLATTEN = '''
def flatten(outputs, prefix=""):
    import numpy as np, tensorflow as tf
    if isinstance(outputs, dict):
        flat = {}
        for key in sorted(outputs):
            flat.update(flatten(outputs[key], prefix + key))
        return flat
    if isinstance(outputs, tf.RaggedTensor):
        values = outputs.flat_values.numpy()
        if values.dtype == object:
            # Strings as fixed-width bytes (no NUL in rustfx's strings), so
            # they compare by value and save without pickle.
            values = values.astype(bytes)
        return {prefix + "/values": values,
                prefix + "/row_splits": outputs.row_splits.numpy()}
    if isinstance(outputs, tf.SparseTensor):
        return {prefix + "/indices": outputs.indices.numpy(),
                prefix + "/values": outputs.values.numpy(),
                prefix + "/dense_shape": outputs.dense_shape.numpy()}
    return {prefix: np.asarray(outputs)}
'''
exec(FLATTEN)


def assert_bitwise_equal(got, want):
    got, want = flatten(got), flatten(want)
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key].dtype == want[key].dtype, key
        assert got[key].shape == want[key].shape, key
        if want[key].dtype == object:  # strings: compare the bytes objects
            assert got[key].tolist() == want[key].tolist(), key
        else:
            assert got[key].tobytes() == want[key].tobytes(), key


@pytest.fixture(scope="module")
def docs(documents, machine_files):
    files = [open(path, "rb").read(1 << 16) for path in machine_files[::6]]
    return FIXED_DOCS + documents[:120] + files


@pytest.mark.parametrize("cls, kwargs", CASES, ids=IDS)
def test_layer_equals_function_eagerly_and_in_tf_data(cls, kwargs, docs):
    layer = cls(**kwargs)
    function = FUNCTIONS[cls]
    x = tf.constant(docs)
    assert_bitwise_equal(layer(x), function(x, **kwargs))
    assert_bitwise_equal(layer(docs[:3]), function(docs[:3], **kwargs))
    # Any rank, as the functions.
    grid = tf.reshape(x[:6], [2, 3])
    assert_bitwise_equal(layer(grid), function(grid, **kwargs))

    batches = tf.data.Dataset.from_tensor_slices(x).batch(16)
    got = list(batches.map(layer))
    want = [function(batch, **kwargs) for batch in batches]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_bitwise_equal(g, w)


@pytest.mark.parametrize("cls, kwargs", CASES, ids=IDS)
def test_config_round_trip(cls, kwargs):
    layer = cls(**kwargs, name="fx")
    config = layer.get_config()
    assert json.loads(json.dumps(config)) == config
    # The config is the layer's FeatureSpec, defaults filled in.
    assert config["spec"] == rustfx.FeatureSpec(cls.extractor, **kwargs).to_dict()
    for key, value in kwargs.items():
        want = list(value) if isinstance(value, tuple) else value
        assert config["spec"]["params"][key] == want, key
    clone = cls.from_config(config)
    assert type(clone) is cls and clone.get_config() == config

    assert keras.saving.get_registered_name(cls) == f"rustfx>{cls.__name__}"
    serialized = keras.saving.serialize_keras_object(layer)
    assert serialized["registered_name"] == f"rustfx>{cls.__name__}"
    restored = keras.saving.deserialize_keras_object(
        json.loads(json.dumps(serialized)))
    assert type(restored) is cls and restored.get_config() == config
    assert_bitwise_equal(restored(FIXED_DOCS), layer(FIXED_DOCS))


def build_model():
    """Raw bytes in; every extractor, sparse and ragged outputs, and trained
    layers (Embedding, Dense) on top, as a real model would have."""
    keras.utils.set_random_seed(0)
    contents = keras.Input(shape=(), dtype="string", name="contents")
    outputs = {}
    for i, (cls, kwargs) in enumerate(CASES):
        outputs[f"{i}_{cls.__name__}"] = cls(**kwargs)(contents)
    def first(cls, output):
        i = next(i for i, (c, kwargs) in enumerate(CASES)
                 if c is cls and kwargs.get("output", "ragged") == output)
        return outputs[f"{i}_{cls.__name__}"]
    sequence, counts, sparse = (first(layers.HashedNgrams, kind)
                                for kind in ("sequence", "counts", "sparse"))
    embedded = keras.layers.Embedding(1001, 4)(sequence)
    outputs["embedded"] = keras.layers.GlobalAveragePooling1D()(embedded)
    outputs["from_sparse"] = keras.layers.Dense(3)(sparse)
    dense = keras.layers.Concatenate()(
        [counts, first(layers.ByteHistogram, "ragged"),
         first(layers.ByteEntropyHistogram, "ragged"), first(layers.StringFeatures, "ragged")])
    outputs["logits"] = keras.layers.Dense(2)(dense)
    return keras.Model(contents, outputs)


def expected_outputs(docs):
    """What each layer's function gives on `docs`."""
    want = {f"{i}_{cls.__name__}": FUNCTIONS[cls](tf.constant(docs), **kwargs)
            for i, (cls, kwargs) in enumerate(CASES)}
    return want


def test_model_equals_functions_and_does_not_jit(docs):
    model = build_model()
    model.compile()
    assert not model.jit_compile  # "auto" sees supports_jit = False
    got = model.predict(tf.constant(docs), batch_size=len(docs), verbose=0)
    want = expected_outputs(docs)
    assert_bitwise_equal({k: got[k] for k in want}, want)
    # The graph (predict) and eager calls of the whole model agree too.
    assert_bitwise_equal(got, model(tf.constant(docs)))


def test_read_files_layer(machine_files, tmp_path):
    paths = machine_files[:5] + [str(tmp_path / "missing")]
    layer = layers.ReadFiles(max_bytes=1000, on_error="empty")
    want = rustfx.read_files(paths, max_bytes=1000, on_error="empty")
    assert_bitwise_equal(layer(paths), want)
    assert layer(paths).numpy()[-1] == b""
    got = list(tf.data.Dataset.from_tensor_slices(paths).batch(4).map(layer))
    assert_bitwise_equal(tf.concat(got, 0), want)

    path_input = keras.Input(shape=(), dtype="string")
    contents = layers.ReadFiles(max_bytes=1000, on_error="empty")(path_input)
    model = keras.Model(path_input, {
        "contents": contents, "histogram": layers.ByteHistogram()(contents)})
    got = model.predict(tf.constant(paths), verbose=0)
    assert list(got["contents"]) == list(want.numpy())
    assert_bitwise_equal(got["histogram"], rustfx.byte_histogram(want))
    config = layer.get_config()
    assert (config["max_bytes"], config["on_error"]) == (1000, "empty")
    with pytest.raises(tf.errors.NotFoundError, match="missing"):
        layers.ReadFiles()(paths)


BAD_PARAMETERS = [
    (layers.HashedNgrams, dict(num_buckets=0)),
    (layers.HashedNgrams, dict(num_buckets=10, ngram_widths=(0,))),
    (layers.HashedNgrams, dict(num_buckets=10, tokenizer="words")),
    (layers.HashedNgrams, dict(num_buckets=10, output="dense")),
    (layers.HashedNgrams, dict(num_buckets=10, output="sequence")),
    (layers.HashedNgrams, dict(num_buckets=10, output="sequence",
                               max_tokens=4, pad_value=3)),
    (layers.HashedNgrams, dict(num_buckets=10, output="counts", norm="l3")),
    (layers.HashedNgrams, dict(num_buckets=1 << 21, output="counts")),
    (layers.ByteHistogram, dict(empty="none")),
    (layers.ByteEntropyHistogram, dict(window=0)),
    (layers.ByteSequence, dict(max_len=0)),
    (layers.ByteSequence, dict(preset="malconv3")),
    (layers.ByteSequence, dict(max_len=8, pad_value=7)),
    (layers.ReadFiles, dict(max_bytes=-1)),
    (layers.ReadFiles, dict(on_error="ignore")),
]


@pytest.mark.parametrize("cls, kwargs", BAD_PARAMETERS,
                         ids=[f"{c.__name__}-{i}" for i, (c, _)
                              in enumerate(BAD_PARAMETERS)])
def test_bad_parameters_fail_at_construction_with_the_ops_error(cls, kwargs):
    with pytest.raises(tf.errors.InvalidArgumentError) as from_function:
        FUNCTIONS[cls](tf.constant([], tf.string), **kwargs)
    with pytest.raises(tf.errors.InvalidArgumentError) as from_layer:
        cls(**kwargs)
    assert from_layer.value.message == from_function.value.message
    # Also when the layer is created while a graph is being traced.
    @tf.function
    def create_while_tracing():
        cls(**kwargs)
        return tf.constant(0)

    with pytest.raises(tf.errors.InvalidArgumentError):
        create_while_tracing()


LOAD = '''
import sys, numpy as np, tensorflow as tf, keras
{imports}
keras_file, export_dir, out = sys.argv[1:]
docs = tf.constant({docs!r})
outputs = {{}}
for tag, load, call in [
        ("keras", keras.saving.load_model, lambda m: m(docs)),
        ("savedmodel", tf.saved_model.load, lambda m: m.serve(docs))]:
    try:
        loaded = load(keras_file if tag == "keras" else export_dir)
        outputs.update(flatten(call(loaded), tag + ":"))
    except Exception as error:
        print(f"{{tag}} failed: {{type(error).__name__}}: {{error}}")
print("rustfx imported:", "rustfx" in sys.modules)
np.savez(out, **outputs)
'''


def run_loader(tmp_path, imports):
    code = FLATTEN + LOAD.format(imports=imports, docs=FIXED_DOCS)
    out = str(tmp_path / f"out{len(imports)}.npz")
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "model.keras"),
         str(tmp_path / "export"), out],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, dict(np.load(out))


# model.save converts TF variables with np.array(), which numpy 2 warns
# about inside Keras/TF (not rustfx).
@pytest.mark.filterwarnings(
    "ignore:__array__ implementation:DeprecationWarning")
def test_model_saves_and_loads_in_fresh_process(tmp_path):
    model = build_model()
    want = flatten(model(tf.constant(FIXED_DOCS)))
    model.save(str(tmp_path / "model.keras"))
    model.export(str(tmp_path / "export"), verbose=False)

    stdout, got = run_loader(tmp_path, "import rustfx")
    assert "failed" not in stdout, stdout
    for tag in ("keras", "savedmodel"):
        # Keras exports a dict of outputs with the model's keys.
        part = {key[len(tag) + 1:]: value for key, value in got.items()
                if key.startswith(tag + ":")}
        assert sorted(part) == sorted(want), tag
        for key, value in want.items():
            assert part[key].dtype == value.dtype, (tag, key)
            assert part[key].tobytes() == value.tobytes(), (tag, key)

    # Without `import rustfx` neither loads: the documented contract.
    stdout, got = run_loader(tmp_path, "")
    assert not got
    assert "rustfx imported: False" in stdout
    assert ("savedmodel failed: " in stdout
            and "Op type not registered 'Rustfx>" in stdout), stdout
    assert "keras failed: TypeError: " in stdout, stdout
    assert "Could not locate class '" in stdout and "rustfx>" in stdout, stdout


@pytest.mark.parametrize("cls, kwargs", CASES, ids=IDS)
def test_layer_reading_files_equals_it_on_read_files(cls, kwargs, machine_files, tmp_path):
    """files=: the layer takes paths and its op reads them, as the layer on
    read_files' contents; the option round-trips through the config."""
    read = dict(max_bytes=5000, on_error="empty")
    paths = machine_files[::5] + [str(tmp_path / "missing")]
    layer = cls(**kwargs, files=read)
    want = cls(**kwargs)(rustfx.read_files(paths, **read))
    assert_bitwise_equal(layer(tf.constant(paths)), want)
    got = list(tf.data.Dataset.from_tensor_slices(paths).batch(len(paths)).map(layer))
    assert_bitwise_equal(got[0], want)
    config = layer.get_config()
    assert config["files"] == read
    assert json.loads(json.dumps(config)) == config
    assert cls.from_config(config).get_config() == config


def test_files_option_is_checked():
    with pytest.raises(TypeError, match="files must be None or a dict"):
        layers.ByteHistogram(files=1 << 20)
    with pytest.raises(TypeError, match="ReadFiles reads its input's files already"):
        layers.ReadFiles(files={})
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match="max_bytes must be in"):
        layers.ByteHistogram(files=dict(max_bytes=-1))
