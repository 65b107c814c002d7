"""FeatureSpec across hosts: the core's rules in Python, the op, the CLI,
`.keras` files and SavedModels; defaults that cannot drift; output versions
refused everywhere."""

import inspect
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import keras
import numpy as np
import pytest
import tensorflow as tf

import rustfx
from rustfx._common import ops

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
RUST_CLI = os.path.join(ROOT, "target", "release", "rustfx-features")
REGISTRY = rustfx.registry()
EXAMPLES = [(name, i, params) for name, entry in REGISTRY.items()
            for i, params in enumerate(entry["examples"])]
EXAMPLE_IDS = [f"{name}-{i}" for name, i, _ in EXAMPLES]
DOCS = [b"", b"MZ\x90\x00 hello world C:\\x http://a.b HKEY_X wide w\0i\0d\0e\0",
        open(sys.executable, "rb").read()[:200_000],
        "Größe café x² ﬁ".encode() * 30]


def test_the_registry_lists_every_public_extractor():
    assert set(REGISTRY) >= {"hashed_ngrams", "byte_histogram", "byte_sequence",
                             "ember_features", "printable_strings"}
    for name in REGISTRY:
        assert callable(getattr(rustfx, name)), name
        assert name in rustfx.__all__, name


@pytest.mark.parametrize("name,i,params", EXAMPLES, ids=EXAMPLE_IDS)
def test_spec_round_trips_and_extract_is_the_function(name, i, params):
    spec = rustfx.FeatureSpec(name, **params)
    assert rustfx.FeatureSpec.from_json(spec.to_json()) == spec
    assert rustfx.FeatureSpec.from_json(spec.to_dict()).to_json() == spec.to_json()
    d = spec.to_dict()
    assert d["extractor"] == name
    assert d["output_version"] == REGISTRY[name]["output_version"]
    assert set(d["params"]) == {p["name"] for p in REGISTRY[name]["params"]}
    by_spec = rustfx.extract(spec, tf.constant(DOCS))
    by_json = rustfx.extract(spec.to_json(), tf.constant(DOCS))
    by_function = getattr(rustfx, name)(tf.constant(DOCS), **params)
    for a, b in ((by_spec, by_function), (by_json, by_function)):
        assert type(a) is type(b)
        a, b = (tf.sparse.to_dense(x) if isinstance(x, tf.SparseTensor) else x for x in (a, b))
        a, b = (x.to_list() if isinstance(x, tf.RaggedTensor) else x.numpy().tolist()
                for x in (a, b))
        assert json.dumps(a, default=repr) == json.dumps(b, default=repr)
    out = spec.output
    assert out["kind"] in ("dense", "ragged", "sparse")
    if out["kind"] != "ragged":
        assert by_spec.shape[-1] == out["shape"][0]


def test_bad_specs_fail_with_the_core_message():
    cases = [
        (dict(extractor="byte_histogram", params=dict(windw=3)),
         "byte_histogram has no parameter 'windw'; its parameters are empty"),
        (dict(extractor="byte_histogram", version=1), 'no key "version"'),
        (dict(extractor="bytes_histogram"), "unknown extractor 'bytes_histogram'"),
        (dict(extractor="byte_entropy_histogram", params=dict(window=0)), "window"),
        (dict(extractor="byte_entropy_histogram", params=dict(window="2048")),
         'window must be an int, got "2048"'),
    ]
    for spec, message in cases:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            rustfx.FeatureSpec.from_json(spec)
    with pytest.raises(tf.errors.InvalidArgumentError, match="no parameter 'foo'"):
        rustfx.FeatureSpec("string_features", foo=1)


def test_spec_queries_run_no_op_and_work_while_tracing():
    """Specs are checked through the core's C ABI, not an op: the same
    answers and refusals in a tf.function being traced and in a tf.Graph,
    and nothing is added to the graph."""
    from rustfx_core import _abi
    want = rustfx.FeatureSpec("byte_entropy_histogram", window=512)
    names = rustfx.FeatureSpec("general_file_info").feature_names()
    seen = []

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def traced(x):
        seen.append(rustfx.FeatureSpec.from_json(want.to_json()))
        seen.append(rustfx.FeatureSpec("general_file_info").feature_names())
        with pytest.raises(tf.errors.InvalidArgumentError, match="no parameter 'windw'"):
            rustfx.FeatureSpec.from_json({"extractor": "byte_histogram",
                                          "params": {"windw": 3}})
        return x
    graph = traced.get_concrete_function().graph
    assert seen == [want, names]
    assert not [op for op in graph.get_operations() if op.type.startswith("Rustfx")]

    with tf.Graph().as_default() as graph:
        assert rustfx.FeatureSpec.from_json(want.to_json()) == want
        assert rustfx.FeatureSpec("general_file_info").feature_names() == names
        with pytest.raises(tf.errors.InvalidArgumentError, match="does not name its values"):
            want.feature_names()
        assert graph.get_operations() == []

    # The core's own answers and refusals, as its C ABI binding gives them.
    assert _abi.spec_query("feature_names", rustfx.FeatureSpec("general_file_info").to_json()) \
        == names
    assert [e["name"] for e in json.loads(_abi.spec_query("registry")[0])] == list(REGISTRY)
    with pytest.raises(ValueError, match="query must be one of"):
        _abi.spec_query("nonsense")
    with pytest.raises(ValueError, match="must be UTF-8"):
        _abi.spec_query("spec", "\ud800")


# ---- Defaults: Python signatures, Keras layers and the core agree ----------

def default_drift(name):
    """How the Python function `rustfx.<name>` differs from the core's
    declaration of `name`: its keyword parameters (beyond contents and name)
    and their defaults. Required parameters have no default."""
    signature = inspect.signature(getattr(rustfx, name))
    python = {p.name: p.default for p in signature.parameters.values()
              if p.name not in ("contents", "name")}
    problems = []
    declared = REGISTRY[name]["params"]
    if list(python) != [p["name"] for p in declared]:
        problems.append(f"{name}: parameters {list(python)} != core's "
                        f"{[p['name'] for p in declared]}")
    for p in declared:
        if p["name"] not in python:
            continue
        default = python[p["name"]]
        if p["required"]:
            if default is not inspect.Parameter.empty:
                problems.append(f"{name}.{p['name']}: required in the core, "
                                f"defaults to {default!r} in Python")
            continue
        plain = list(default) if isinstance(default, tuple) else default
        if plain != p["default"]:
            problems.append(f"{name}.{p['name']}: Python default {default!r}, "
                            f"core default {p['default']!r}")
    return problems


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_python_defaults_are_the_core_defaults(name):
    assert default_drift(name) == []
    # The layer (made from the registry) builds the default spec, which the
    # core completes: the same spec as the function's defaults.
    required = {p["name"]: ex for p in REGISTRY[name]["params"] if p["required"]
                for ex in [REGISTRY[name]["examples"][0][p["name"]]]}
    layer = getattr(rustfx.layers, "".join(w.capitalize() for w in name.split("_")))
    assert layer(**required).spec == rustfx.FeatureSpec(name, **required)


def test_extractor_ops_declare_no_parameter_defaults():
    """The ops take a whole spec as one attr, with no default: no extractor
    parameter has a default in C++ that could drift from the core's, and a
    graph always states every value (the spec is complete)."""
    from tensorflow.python.framework import op_def_registry
    for op in ("Rustfx>DenseRows", "Rustfx>Ragged", "Rustfx>RaggedIds", "Rustfx>SparseRows",
               "Rustfx>RaggedStrings"):
        op_def = op_def_registry.get(op)
        attrs = {a.name: a for a in op_def.attr}
        assert set(attrs) - {"Tout"} == {"spec", "read_files", "read_max_bytes",
                                         "read_on_error", "cache_dir", "cache_key",
                                         "cache_max_bytes", "cache_read_only"}, op
        assert not attrs["spec"].HasField("default_value"), op
        # No cache by default, and its cap is the core's (-1), not a copy.
        assert attrs["cache_dir"].default_value.s == b"", op
        assert attrs["cache_max_bytes"].default_value.i == -1, op
        assert attrs["cache_read_only"].default_value.b is False, op


def test_a_drifted_default_is_caught(monkeypatch):
    fn = inspect.unwrap(rustfx.byte_entropy_histogram)
    monkeypatch.setitem(fn.__kwdefaults__, "window", 4096)
    assert default_drift("byte_entropy_histogram") == [
        "byte_entropy_histogram.window: Python default 4096, core default 2048"]
    monkeypatch.setitem(fn.__kwdefaults__, "window", 2048)
    monkeypatch.setitem(inspect.unwrap(rustfx.hashed_ngrams).__kwdefaults__,
                        "ngram_widths", (1, 2))
    assert default_drift("hashed_ngrams") == [
        "hashed_ngrams.ngram_widths: Python default (1, 2), core default [1]"]


# ---- Output versions: refused by the op, the CLI, .keras and SavedModel ----

def other_version(spec_json, version=999):
    spec = json.loads(spec_json)
    spec["output_version"] = version
    return json.dumps(spec)


def assert_refused(message, version=999, extractor="byte_histogram"):
    assert f"made for output version {version} of {extractor}" in message, message
    assert "computes output version 1" in message, message
    assert "Re-extract" in message, message


def test_the_op_refuses_another_output_version():
    spec = other_version(rustfx.FeatureSpec("byte_histogram").to_json())
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        ops.Rustfx_DenseRows(input=[b"a"], spec=spec, Tout=tf.float32)
    assert_refused(e.value.message)

    # In a graph the kernel's constructor refuses it when the graph first
    # runs, before any output (a C API shape function cannot read the spec).
    @tf.function
    def graph(x):
        return ops.Rustfx_DenseRows(input=x, spec=spec, Tout=tf.float32)
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError)) as e:
        graph(tf.constant([b"a"]))
    assert_refused(str(e.value))
    # An op given a spec of another output kind says which call picks it.
    with pytest.raises(tf.errors.InvalidArgumentError, match="use rustfx.extract"):
        ops.Rustfx_RaggedIds(input=[b"a"], spec=rustfx.FeatureSpec("byte_histogram").to_json())
    # ... and an op whose output type is not the spec's dtype says which it is.
    ngrams = rustfx.FeatureSpec("hashed_ngrams", num_buckets=8).to_json()
    with pytest.raises(tf.errors.InvalidArgumentError, match="not the spec's dtype int64"):
        ops.Rustfx_Ragged(input=[b"a"], spec=ngrams, Tout=tf.int16)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not the spec's dtype int64"):
        ops.Rustfx_RaggedStrings(input=[b"a"], spec=ngrams)


def test_the_cli_takes_a_spec_file_and_refuses_another_version(tmp_path):
    spec = rustfx.FeatureSpec("byte_entropy_histogram", window=256, step=64)
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(spec.to_json())
    bad.write_text(other_version(spec.to_json(), 2))
    out = subprocess.run([RUST_CLI, "--spec", good, sys.executable], check=True,
                         capture_output=True, text=True).stdout
    path, values = out.rstrip("\n").split("\t")  # rustfx-features: path<TAB>values
    assert path == sys.executable
    cli = np.array(values.split(), np.float32)
    op = rustfx.extract(spec, rustfx.read_files([sys.executable])).numpy()[0]
    np.testing.assert_array_equal(cli.view(np.uint32), op.view(np.uint32))
    run = subprocess.run([RUST_CLI, "--spec", bad, sys.executable], capture_output=True, text=True)
    assert run.returncode == 2 and run.stdout == ""  # 2: nothing could run
    assert_refused(run.stderr, version=2, extractor="byte_entropy_histogram")
    assert str(bad) in run.stderr


def small_model():
    inputs = keras.Input(shape=(), dtype="string")
    x = rustfx.layers.ByteHistogram()(inputs)
    outputs = keras.layers.Dense(2, kernel_initializer="ones")(x)
    model = keras.Model(inputs, outputs)
    model(tf.constant([b"ab"]))
    return model


# model.save converts TF variables with np.array(), which numpy 2 warns
# about inside Keras/TF (not rustfx).
@pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")
def test_keras_config_is_the_spec_and_another_version_is_refused(tmp_path):
    model = small_model()
    layer = model.layers[1]
    assert layer.get_config()["spec"] == rustfx.FeatureSpec("byte_histogram").to_dict()
    path = tmp_path / "m.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(loaded(tf.constant([b"xyz"])), model(tf.constant([b"xyz"])))
    # The same file with the layer's spec at another output version.
    patched = tmp_path / "old.keras"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(patched, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "config.json":
                data = data.replace(b'"output_version": 1', b'"output_version": 999')
                assert b'"output_version": 999' in data
            dst.writestr(item, data)
    with pytest.raises(Exception) as e:
        keras.models.load_model(patched)
    assert_refused(str(e.value))


def test_a_saved_model_of_another_version_is_refused(tmp_path):
    from tensorflow.core.protobuf import saved_model_pb2
    model = small_model()
    path = str(tmp_path / "sm")
    model.export(path, verbose=False)
    proto = saved_model_pb2.SavedModel()
    pb = os.path.join(path, "saved_model.pb")
    with open(pb, "rb") as f:
        proto.ParseFromString(f.read())
    patched = 0
    for meta in proto.meta_graphs:
        nodes = list(meta.graph_def.node)
        for fn in meta.graph_def.library.function:
            nodes.extend(fn.node_def)
        for node in nodes:
            if "spec" in node.attr and node.op.startswith("Rustfx>"):
                node.attr["spec"].s = other_version(node.attr["spec"].s.decode()).encode()
                patched += 1
    assert patched >= 1
    with open(pb, "wb") as f:
        f.write(proto.SerializeToString())
    # A fresh process, as a server would load it.
    script = textwrap.dedent(f"""
        import rustfx, tensorflow as tf
        try:
            m = tf.saved_model.load({path!r})
            m.serve(tf.constant([b"ab"]))
        except Exception as e:
            print("REFUSED", e)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300).stdout
    assert "REFUSED" in out, out[-2000:]
    assert_refused(out)
