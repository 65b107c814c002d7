"""Writes the models that tests/python/test_legacy_models.py loads: a
SavedModel and a `.keras` file made by the rustfx of commit 86d4855, the
last build on TensorFlow's C++ kernel API, and the values that build gave.

Run once, with that build (`git checkout 86d4855 && make build`):

    .venv/bin/python tests/golden/legacy/make_legacy_models.py tests/golden/legacy

The files are committed: they stand for the SavedModels and `.keras` files
users made before the op library moved to TF's C kernel API, which must
still load and give the same values.
"""

import os
import sys

import keras
import numpy as np
import tensorflow as tf

import rustfx

# Text, binary, invalid UTF-8, empty, and a PE header: every extractor has
# something to find.
DOCS = [
    b"MZ\x90\x00\x03\x00 hello World hello http://example.com C:\\Windows HKEY_LOCAL",
    b"",
    "caf\u00e9 \u03a3 x \u4e2d\u6587 words and more words".encode(),
    bytes(range(256)) * 3,
    b"\xff\xfe\x00 broken \xc3 utf8 \xe2\x82",
]


def registry_specs():
    """(key, spec) for every registry example."""
    for name, entry in sorted(rustfx.registry().items()):
        for i, params in enumerate(entry["examples"]):
            yield f"{name}_{i}", rustfx.FeatureSpec(name, **params)


def dense(x):
    """Any rustfx output as dense tensors: ragged -> (values, row_splits),
    sparse -> (indices, values, dense_shape)."""
    if isinstance(x, tf.RaggedTensor):
        return {"values": x.flat_values, "row_splits": x.row_splits}
    if isinstance(x, tf.SparseTensor):
        return {"indices": x.indices, "values": x.values, "dense_shape": x.dense_shape}
    return {"": x}


class Features(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string),
                                  tf.TensorSpec([None], tf.string)])
    def __call__(self, contents, paths):
        out = {}
        for key, spec in registry_specs():
            for part, t in dense(rustfx.extract(spec, contents)).items():
                out[f"{key}{'.' + part if part else ''}"] = t
        contents_read, status = rustfx.read_files(paths, max_bytes=64, on_error="empty",
                                                  with_status=True)
        out["read_files.contents"] = contents_read
        out["read_files.status"] = status.codes
        out["files.byte_histogram"] = rustfx.byte_histogram(
            rustfx.files(paths, max_bytes=64, on_error="empty"))
        out["sha256"] = rustfx.sha256(contents)
        return out


def keras_model():
    inputs = keras.Input(shape=(), dtype="string")
    ids = rustfx.layers.HashedNgrams(num_buckets=1000, ngram_widths=(1, 2), output="sequence",
                                     max_tokens=32, pad_value=1000)(inputs)
    x = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(1001, 4)(ids))
    x = keras.layers.Concatenate()([x, rustfx.layers.ByteHistogram()(inputs),
                                    rustfx.layers.StringFeatures()(inputs)])
    return keras.Model(inputs, keras.layers.Dense(3, activation="softmax")(x))


def main(out_dir):
    keras.utils.set_random_seed(0)
    paths = tf.constant([os.path.join(out_dir, "files", name) for name in ["a.txt", "missing"]])
    os.makedirs(os.path.join(out_dir, "files"), exist_ok=True)
    with open(os.path.join(out_dir, "files", "a.txt"), "wb") as f:
        f.write(b"legacy file contents, read by read_files and rustfx.files\n")
    module = Features()
    saved = os.path.join(out_dir, "saved_model")
    tf.saved_model.save(module, saved)
    values = {k: v.numpy() for k, v in module(tf.constant(DOCS), paths).items()}
    np.savez(os.path.join(out_dir, "saved_model_outputs.npz"), **values)

    model = keras_model()
    model.save(os.path.join(out_dir, "model.keras"))
    np.save(os.path.join(out_dir, "keras_outputs.npy"), model(tf.constant(DOCS)).numpy())
    with open(os.path.join(out_dir, "docs.txt"), "w") as f:
        f.write(repr(DOCS) + "\n")
    print(f"{len(values)} SavedModel outputs, built against TF {tf.__version__}")


if __name__ == "__main__":
    main(sys.argv[1])
