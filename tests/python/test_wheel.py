"""The one wheel (`make wheel`), installed like any package: tagged
py3-none-manylinux2014, its libraries fit that tag (glibc 2.17, no libstdc++,
no libpython), it requires no TensorFlow distribution, so installing it into
a venv that has `tensorflow` (not -cpu) keeps that TF, and from outside the
checkout it gives exactly the development build's features: every extractor
eagerly and in tf.data, the core library without TF, a SavedModel saved by
the development build, and the CLIs that need no TF.

The same wheel on TF 2.16-2.21 x CPython 3.10-3.13, and into a venv with
tensorflow-cpu==2.18 (kept): tests/matrix (make test-matrix; `make test`
runs three of its cells).
"""

import glob
import importlib.metadata
import re
import json
import os
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
    import rustfx_core
    from rustfx_core import _abi
    core_dir = os.path.dirname(os.path.abspath(rustfx_core.__file__))
    assert core_dir.startswith(sys.prefix), (core_dir, sys.prefix)
    assert _abi.library_path().startswith(core_dir), _abi.library_path()
    name, params = specs["byte_histogram"]
    rows = rustfx_core.extract(rustfx_core.FeatureSpec(name, **params), docs)
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
def built_wheel():
    """The wheel `make wheel` put in dist/ (`make test` builds it first);
    not the aarch64 one `make wheel-aarch64` may have put beside it."""
    wheels = glob.glob(os.path.join(ROOT, "dist", "rustfx-*_x86_64.whl"))
    assert len(wheels) == 1, f"run `make wheel` first (dist/ holds {wheels})"
    return wheels[0]


def _contents(wheel):
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        metadata = whl.read(next(n for n in names if n.endswith("METADATA"))).decode()
    return names, metadata


def test_one_wheel_for_every_python_and_tensorflow(built_wheel):
    name = os.path.basename(built_wheel)
    assert re.fullmatch(r"rustfx-[0-9.]+-py3-none-manylinux2014_x86_64"
                        r"(\.manylinux_2_17_x86_64)?\.whl", name), name
    names, metadata = _contents(built_wheel)
    for member in ["rustfx/_rustfx_ops.so", "rustfx_core/_rustfx_core.so"]:
        assert member in names, names
    assert any(n.endswith(".data/scripts/rustfx-features") for n in names), names
    assert not any("tensorflow" in n for n in names), names
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    # TensorFlow only as an extra: a requirement would replace the user's.
    for line in requires:
        if "tensorflow" in line:
            assert "extra ==" in line, line
    assert any(line.startswith("Requires-Dist: numpy") for line in requires), requires


ALLOWED_NEEDED = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2",
                  "ld-linux-x86-64.so.2", "librt.so.1"}


def test_its_libraries_fit_manylinux2014(built_wheel, tmp_path):
    with zipfile.ZipFile(built_wheel) as whl:
        whl.extractall(tmp_path)
    for member in glob.glob(str(tmp_path / "rustfx" / "*.so")) + glob.glob(
            str(tmp_path / "*.data" / "scripts" / "*")):
        dynamic = run(["readelf", "-dW", member])
        needed = set(re.findall(r"\(NEEDED\).*\[(.+)\]", dynamic))
        allowed = ALLOWED_NEEDED | ({"libtensorflow_framework.so.2"}
                                    if member.endswith("_rustfx_ops.so") else set())
        assert needed <= allowed, (member, needed - allowed)
        versions = set(re.findall(r"\b(GLIBC|GLIBCXX|CXXABI|GCC)_([0-9.]+)\b",
                                  run(["objdump", "-T", member])))
        assert {v for v in versions if v[0] != "GLIBC"} == set(), (member, versions)
        newest = max(tuple(int(x) for x in v.split(".")) for _, v in versions)
        assert newest <= (2, 17), (member, newest)


def test_wheel_keeps_the_users_tensorflow_and_matches_the_dev_build(built_wheel, tmp_path):
    # Expected results from the development build.
    expected = {name: dense(getattr(rustfx, fn)(tf.constant(DOCS), **kwargs))
                for name, (fn, kwargs) in SPECS.items()}
    saved = tmp_path / "fx_model"
    tf.saved_model.save(FX(), str(saved))
    expected["saved_model"] = FX().serve(tf.constant(DOCS)).numpy()
    np.savez(tmp_path / "expected.npz", **expected)

    # A fresh venv with `tensorflow` (the GPU-capable distribution, not
    # tensorflow-cpu), then the wheel with its dependencies.
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    python = str(venv / "bin" / "python")
    # --no-compile: no .pyc for every module of TF and its dependencies up
    # front (TF's own 1,800 took 4 s of CPU); the import compiles what it uses.
    run([python, "-m", "pip", "install", "-q", "--no-compile", f"tensorflow=={tf.__version__}"],
        timeout=1200)
    run([python, "-m", "pip", "install", "-q", "--no-compile", str(built_wheel)], timeout=900)
    dists = run([python, "-m", "pip", "list", "--format=freeze"]).lower().splitlines()
    assert f"tensorflow=={tf.__version__}" in dists, dists
    assert not any(d.startswith(("tensorflow-cpu==", "tf-nightly")) for d in dists), dists

    user_dir = tmp_path / "elsewhere"
    user_dir.mkdir()
    out = run([python, "-c", USER_SCRIPT, json.dumps(SPECS),
               json.dumps([d.hex() for d in DOCS]), str(tmp_path / "expected.npz"),
               str(saved)], cwd=user_dir, timeout=600)
    assert out.startswith("ok " + str(venv)), out
    # The CLIs that need no TF, from the venv's scripts.
    listing = run([str(venv / "bin" / "rustfx-features"), "--list"], cwd=user_dir)
    assert "byte_histogram" in listing and "hashed_ngrams" in listing, listing
    histogram = run([str(venv / "bin" / "rustfx-features"), "byte_histogram", sys.executable],
                    cwd=user_dir)
    want = rustfx.byte_histogram(rustfx.read_files([sys.executable])).numpy()[0]
    assert np.array_equal(np.array(histogram.split("\t")[-1].split(), np.float32).view(np.uint32),
                          want.view(np.uint32))
    # rustfx-extract is the extra rustfx[ray]'s: without it, it says so.
    extract = subprocess.run([str(venv / "bin" / "rustfx-extract"), "--help"], cwd=user_dir,
                             capture_output=True, text=True)
    assert extract.returncode != 0 and "pip install 'rustfx[ray]'" in extract.stderr, extract
    # rustfx-worker, the tf.data service worker rustfx.offload uses.
    worker = run([str(venv / "bin" / "rustfx-worker"), "--help"], cwd=user_dir)
    assert "--dispatcher" in worker, worker
