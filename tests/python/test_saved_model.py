"""Every rustfx op survives a SavedModel round trip into a fresh process,
which must import rustfx before loading (the ops are not in TF itself)."""

import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

import rustfx

DOCS = [b"MZ\x90\x00 hello World hello", b"", "caf\u00e9 \u03a3 x".encode()]


class Features(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def __call__(self, contents):
        return {
            "ids": rustfx.hashed_ngrams(contents, num_buckets=1000,
                                        ngram_widths=(1, 2)).to_tensor(-1),
            "sequence": rustfx.hashed_ngrams(contents, num_buckets=1000,
                                             tokenizer="sklearn_char_wb",
                                             hash="murmur3", output="sequence",
                                             max_tokens=8),
            "counts": rustfx.hashed_ngrams(contents, num_buckets=64,
                                           tokenizer="byte", hash="murmur3",
                                           output="counts",
                                           alternate_sign=True, norm="l2"),
            "sparse": tf.sparse.to_dense(rustfx.hashed_ngrams(
                contents, num_buckets=64, tokenizer="char", output="sparse")),
            "histogram": rustfx.byte_histogram(contents),
            "entropy": rustfx.byte_entropy_histogram(contents, window=4, step=2),
            "strings": rustfx.string_features(contents),
            "sequence_bytes": rustfx.byte_sequence(contents, 16,
                                                   preset="malconv2"),
        }


LOAD = """
import sys, numpy as np, tensorflow as tf
{imports}
loaded = tf.saved_model.load(sys.argv[1])
out = loaded(tf.constant({docs!r}))
np.savez(sys.argv[2], **{{k: v.numpy() for k, v in out.items()}})
"""


def run_loader(export_dir, out, imports):
    code = LOAD.format(imports=imports, docs=DOCS)
    return subprocess.run([sys.executable, "-c", code, export_dir, out],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


def test_saved_model_round_trip_in_fresh_process(tmp_path):
    module = Features()
    want = {k: v.numpy() for k, v in module(tf.constant(DOCS)).items()}
    export_dir = str(tmp_path / "model")
    tf.saved_model.save(module, export_dir)

    out = str(tmp_path / "out.npz")
    done = run_loader(export_dir, out, "import rustfx")
    assert done.returncode == 0, done.stderr[-3000:]
    got = np.load(out)
    assert sorted(got.files) == sorted(want)
    for key, value in want.items():
        np.testing.assert_array_equal(got[key], value, err_msg=key)

    # Without `import rustfx` the graph cannot run: the documented contract.
    missing = run_loader(export_dir, out, "")
    assert missing.returncode != 0
    assert "Rustfx>" in missing.stderr


class FileFeatures(tf.Module):
    """A serving signature that takes paths: the ops read the files."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def __call__(self, paths):
        files = rustfx.files(paths, max_bytes=12, on_error="empty")
        return {
            "ids": rustfx.hashed_ngrams(files, num_buckets=1000, output="sequence",
                                        max_tokens=8),
            "histogram": rustfx.byte_histogram(files),
        }


LOAD_PATHS = """
import sys, numpy as np, tensorflow as tf
import rustfx
loaded = tf.saved_model.load(sys.argv[1])
out = loaded(tf.constant(sys.argv[3:]))
np.savez(sys.argv[2], **{k: v.numpy() for k, v in out.items()})
"""


def test_saved_model_reading_its_files_in_fresh_process(tmp_path):
    paths = []
    for i, doc in enumerate(DOCS):
        path = tmp_path / f"doc{i}"
        path.write_bytes(doc)
        paths.append(str(path))
    paths.append(str(tmp_path / "missing"))  # on_error="empty": an empty row
    export_dir = str(tmp_path / "model")
    tf.saved_model.save(FileFeatures(), export_dir)

    out = str(tmp_path / "out.npz")
    done = subprocess.run([sys.executable, "-c", LOAD_PATHS, export_dir, out, *paths],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr[-3000:]
    got = np.load(out)
    # The reference: the same extractors on the contents, cut at max_bytes.
    contents = tf.constant([doc[:12] for doc in DOCS] + [b""])
    want_ids = rustfx.hashed_ngrams(contents, num_buckets=1000, output="sequence",
                                    max_tokens=8)
    np.testing.assert_array_equal(got["ids"], want_ids.numpy())
    np.testing.assert_array_equal(got["histogram"], rustfx.byte_histogram(contents).numpy())
