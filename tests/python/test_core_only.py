"""rustfx_core without TensorFlow: specs, extraction into numpy, feature
names, explanations and the corpus worker's rows, in a process that never
imports TensorFlow, Keras or Ray; and its numpy equal to the ops' output,
bit for bit, for every example of the registry.

The subprocess is the check that matters: `import rustfx_core` (and
rustfx_core.corpus) must not import TensorFlow, even indirectly.
"""

import glob
import hashlib
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import rustfx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PE = sorted(glob.glob(os.path.join(ROOT, "tests/golden/pe/launchers/*.exe")))[0]
DOCS = [b"", b"MZ\x90\x00 hello world C:\\x http://a.b HKEY_X wide w\0i\0d\0e\0",
        open(PE, "rb").read(), "Größe café x² ﬁ hello hello".encode() * 30,
        bytes(range(256)) * 7]

# What runs without TensorFlow. It writes what it computed (pickled) to
# argv[1], and the modules it imported to stdout.
CORE_ONLY = """
import importlib.util, json, pickle, sys
import rustfx_core
from rustfx_core import corpus

docs, files, out = pickle.loads(sys.stdin.buffer.read()), sys.argv[2:], {}
# Explanations need pandas; without it, none (the test that reads them skips).
explained = {} if importlib.util.find_spec("pandas") else None
for name, entry in rustfx_core.registry().items():
    for i, params in enumerate(entry["examples"]):
        spec = rustfx_core.FeatureSpec(name, **params)
        assert rustfx_core.FeatureSpec.from_json(spec.to_json()) == spec
        assert spec.to_dict()["output_version"] == entry["output_version"]
        assert set(spec.params) == {p["name"] for p in entry["params"]}
        try:
            names = spec.feature_names()
        except ValueError as e:
            assert "does not name its values" in str(e), e
            names = None
        out[f"{name}-{i}"] = (spec.to_json(), names, rustfx_core.extract(spec, docs))
        try:
            if explained is not None:
                explained[f"{name}-{i}"] = rustfx_core.explain(spec, docs, max_contributions=500)
        except ValueError as e:
            assert "does not explain" in str(e), e
documents = rustfx_core.read_files(files, max_bytes=1 << 20)
digests = rustfx_core.sha256(documents)
table = corpus.extract_table(files, "ember2018-bytes")
with open(sys.argv[1], "wb") as f:
    pickle.dump({"examples": out, "explained": explained, "codes": documents.codes.tolist(),
                 "sha256": digests, "table": table.to_pylist()}, f)
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


@pytest.fixture(scope="module")
def core_only(tmp_path_factory):
    """Runs CORE_ONLY on DOCS and a few files (one missing); returns the
    modules it imported and what it computed."""
    pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    files = [PE, os.path.join(ROOT, "README.md"), sys.executable,
             str(tmp_path_factory.mktemp("gone") / "missing")]
    result_path = tmp_path_factory.mktemp("core_only") / "result.pickle"
    proc = subprocess.run([sys.executable, "-c", CORE_ONLY, str(result_path), *files],
                          input=pickle.dumps(DOCS), capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    modules = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    with open(result_path, "rb") as f:
        return modules, files, pickle.load(f)


def test_rustfx_core_imports_no_tensorflow_keras_or_ray(core_only):
    modules, _, _ = core_only
    assert "rustfx_core" in modules
    for heavy in ("tensorflow", "keras", "ray", "rustfx"):
        assert heavy not in modules, heavy


EXAMPLES = [(name, i, params) for name, entry in rustfx.registry().items()
            for i, params in enumerate(entry["examples"])]


@pytest.mark.parametrize("name,i,params", EXAMPLES,
                         ids=[f"{name}-{i}" for name, i, _ in EXAMPLES])
def test_numpy_is_the_ops_output_bit_for_bit(core_only, name, i, params):
    """rustfx_core.extract's rows of each kind (see its doc), pickled by
    the process that made them, hold the op's values in their numpy views:
    a dense array, ragged values and row splits, sparse CSR, lists of
    bytes."""
    spec_json, names, got = core_only[2]["examples"][f"{name}-{i}"]
    spec = rustfx.FeatureSpec(name, **params)
    assert spec_json == spec.to_json()
    if names is not None:
        assert names == spec.feature_names()
    want = rustfx.extract(spec, tf.constant(DOCS))
    if isinstance(want, tf.SparseTensor):
        indices = want.indices.numpy()
        assert got.dense_shape == tuple(want.dense_shape.numpy())
        np.testing.assert_array_equal(got.indices, indices[:, 1])
        np.testing.assert_array_equal(
            got.row_splits, np.searchsorted(indices[:, 0], np.arange(len(DOCS) + 1)))
        assert got.values.tobytes() == want.values.numpy().tobytes()
    elif isinstance(want, tf.RaggedTensor) and want.dtype == tf.string:
        assert got == want.to_list()
    elif isinstance(want, tf.RaggedTensor):
        np.testing.assert_array_equal(got.row_splits, want.row_splits.numpy())
        assert got.values.dtype == want.values.dtype.as_numpy_dtype
        assert got.values.tobytes() == want.values.numpy().tobytes()
    else:
        assert got.dtype == want.dtype.as_numpy_dtype and got.shape == tuple(want.shape)
        assert np.asarray(got).tobytes() == want.numpy().tobytes()  # bit for bit, NaN included


def test_reading_hashing_and_corpus_rows(core_only):
    _, files, result = core_only
    assert result["codes"] == [0, 0, 0, 5]  # the last one is missing: NOT_FOUND
    for path, digest in zip(files[:3], result["sha256"]):
        with open(path, "rb") as f:
            assert digest == hashlib.sha256(f.read(1 << 20)).hexdigest()
    rows = {os.fsdecode(row["path"]): row for row in result["table"]}  # path: bytes
    assert sorted(rows) == sorted(files)
    assert rows[files[3]]["status"] == 5 and rows[files[3]]["byte_histogram"] is None
    contents = rustfx.read_files(tf.constant(files[:3]))
    want = rustfx.byte_histogram(contents).numpy()
    for path, row in zip(files[:3], want):
        assert rows[path]["sha256"] == hashlib.sha256(open(path, "rb").read()).hexdigest()
        assert np.asarray(rows[path]["byte_histogram"], np.float32).tobytes() == row.tobytes()


def test_rustfx_feature_spec_is_rustfx_cores_with_tf_errors():
    """rustfx.FeatureSpec is rustfx_core's, refusing with TF's error type;
    either is accepted where a spec is, and they compare equal."""
    import rustfx_core
    core = rustfx_core.FeatureSpec("byte_histogram")
    assert isinstance(rustfx.FeatureSpec("byte_histogram"), rustfx_core.FeatureSpec)
    assert rustfx.FeatureSpec.from_json(core) == core
    assert type(rustfx.FeatureSpec.from_json(core)) is rustfx.FeatureSpec
    with pytest.raises(ValueError, match="unknown extractor"):
        rustfx_core.FeatureSpec("no_such_extractor")
    with pytest.raises(tf.errors.InvalidArgumentError, match="unknown extractor"):
        rustfx.FeatureSpec("no_such_extractor")
    np.testing.assert_array_equal(rustfx.extract(core, tf.constant(DOCS)).numpy(),
                                  rustfx_core.extract(core, DOCS))
    assert rustfx.DEFAULT_MAX_BYTES == rustfx_core.DEFAULT_MAX_BYTES == 64 << 20


def test_explanations_without_tensorflow_are_rustfx_explains(core_only):
    """rustfx_core.explain in the process without TensorFlow gives the
    tables rustfx.explain gives here (the same core, the same ABI)."""
    explained = core_only[2]["explained"]
    if explained is None:
        pytest.skip("pandas is not installed")
    import pandas
    assert "byte_histogram-0" in explained
    for key, tables in explained.items():
        name, i = key.rsplit("-", 1)
        params = rustfx.registry()[name]["examples"][int(i)]
        want = rustfx.explain(rustfx.FeatureSpec(name, **params), DOCS, max_contributions=500)
        assert len(tables) == len(want) == len(DOCS)
        for got, expected in zip(tables, want):
            pandas.testing.assert_frame_equal(got, expected)
            assert got.attrs == expected.attrs
