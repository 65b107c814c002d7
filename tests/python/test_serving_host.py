"""What a TF Serving build links: rustfx as a static library in a C++ host.

`make serving-host` links tests/cpp/serving_host.cc against librustfx_ops.a
(kernels + bridge + Rust core, linked whole) and TensorFlow's C++ libraries
from the pip wheel. The host loads a SavedModel that uses rustfx ops, with
no op library loaded at run time, and must give the Python results exactly.
"""

import os
import subprocess

import numpy as np
import pytest
import tensorflow as tf

import rustfx
from make_lock import run_make

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOST = os.path.join(ROOT, "target", "release", "serving_host")


class Features(tf.Module):
    """Every fixed-width extractor, as float32 (ids < 2**24 are exact)."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def features(self, x):
        ids = rustfx.hashed_ngrams(x, num_buckets=1 << 20, ngram_widths=(1, 2),
                                   output="sequence", max_tokens=64)
        counts = rustfx.hashed_ngrams(x, num_buckets=256, tokenizer="sklearn_word",
                                      hash="murmur3", output="counts",
                                      alternate_sign=True, norm="l2")
        return {"features": tf.concat([
            rustfx.byte_histogram(x), rustfx.byte_entropy_histogram(x),
            rustfx.string_features(x), rustfx.ember_features(x), counts,
            tf.cast(ids, tf.float32)], axis=1)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def bytes(self, x):
        return {"sequence": rustfx.byte_sequence(x, 512, preset="malconv2")}


@pytest.fixture(scope="module")
def host():
    out = run_make("serving-host", env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert out.returncode == 0, out.stderr[-4000:]
    return HOST


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("serving") / "model")
    module = Features()
    tf.saved_model.save(module, path, signatures={
        "serving_default": module.features, "bytes": module.bytes})
    return path, module


def run_host(host, *args):
    return subprocess.run([host, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


def parse(stdout, dtype):
    rows = {}
    for line in stdout.splitlines():
        path, *values = line.split(" ")
        rows[path] = np.array([float.fromhex(v) if dtype == np.float32 else int(v)
                               for v in values], dtype)
    return rows


def test_host_gives_the_python_results_exactly(host, model, machine_files):
    path, module = model
    files = machine_files[:12] + [os.path.join(ROOT, "tests", "golden", "pe", "built",
                                               "dll64_exports.dll")]
    contents = tf.constant([open(f, "rb").read() for f in files])
    for signature, fn, dtype in (("serving_default", module.features, np.float32),
                                 ("bytes", module.bytes, np.int32)):
        out = run_host(host, path, signature, *files)
        assert out.returncode == 0, out.stderr[-3000:]
        got = parse(out.stdout, dtype)
        want = next(iter(fn(contents).values())).numpy()
        assert list(got) == files
        for i, f in enumerate(files):
            assert got[f].dtype == want.dtype
            np.testing.assert_array_equal(got[f].view(np.uint32 if dtype == np.float32
                                                      else np.int32),
                                          want[i].view(np.uint32 if dtype == np.float32
                                                       else np.int32), err_msg=f)


def test_host_links_no_op_library(host):
    ldd = subprocess.run(["ldd", host], capture_output=True, text=True).stdout
    assert "rustfx" not in ldd and "libtensorflow_framework" in ldd, ldd


@pytest.mark.parametrize("args,message", [
    (["/nonexistent/model", "serving_default", "/etc/hostname"], "loading /nonexistent/model"),
    (["MODEL", "no_such_signature", "/etc/hostname"], "no signature no_such_signature"),
    (["MODEL", "serving_default", "/nonexistent/file"], "cannot read /nonexistent/file"),
])
def test_host_errors_are_clear(host, model, args, message):
    args = [model[0] if a == "MODEL" else a for a in args]
    out = run_host(host, *args)
    assert out.returncode == 1 and message in out.stderr, out.stderr[-2000:]
