"""A SavedModel and a `.keras` file made by rustfx before its op library
moved to TF's C kernel API (tests/golden/legacy, made by
make_legacy_models.py at commit 86d4855) still load, and give the values
that build gave: op names, signatures and outputs did not change."""

import ast
import os

import keras
import numpy as np
import tensorflow as tf

import rustfx  # noqa: F401  (registers the ops and the Keras layers)

LEGACY = os.path.join(os.path.dirname(__file__), "..", "golden", "legacy")


def docs():
    with open(os.path.join(LEGACY, "docs.txt")) as f:
        return ast.literal_eval(f.read())


def test_legacy_saved_model_gives_the_same_values():
    loaded = tf.saved_model.load(os.path.join(LEGACY, "saved_model"))
    paths = tf.constant([os.path.join(LEGACY, "files", "a.txt"),
                         os.path.join(LEGACY, "files", "missing")])
    got = {k: v.numpy() for k, v in loaded(tf.constant(docs()), paths).items()}
    # String outputs are object arrays: a file of ours, not untrusted input.
    want = np.load(os.path.join(LEGACY, "saved_model_outputs.npz"), allow_pickle=True)
    assert sorted(got) == sorted(want.files)
    for key in want.files:
        w, g = want[key], got[key]
        assert g.dtype == w.dtype and g.shape == w.shape, key
        if w.dtype.kind == "f":
            # Bit for bit, NaN included (byte_histogram's empty="nan").
            assert np.array_equal(g.view(np.uint32 if w.itemsize == 4 else np.uint64),
                                  w.view(np.uint32 if w.itemsize == 4 else np.uint64)), key
        else:
            assert np.array_equal(g, w), key


def test_legacy_keras_file_gives_the_same_values():
    model = keras.models.load_model(os.path.join(LEGACY, "model.keras"))
    want = np.load(os.path.join(LEGACY, "keras_outputs.npy"))
    got = model(tf.constant(docs())).numpy()
    # The features are bit for bit (above); the Dense layer's float sums may
    # round differently in another TF.
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
