"""rustfx example: a small MalConv2-style network on raw bytes, fed as its
authors feed it.

MalConv2 (Raff et al., AAAI 2021) reads a file's bytes as integers 1..256
(byte + 1, 0 the pad), embeds them, runs a gated convolution with a large
stride and keeps the maximum over time. Each batch is padded only to its
longest file. rustfx gives exactly that input:
`byte_sequence(preset="malconv2", dtype="int16", output="ragged")` holds
each file at 2 bytes per byte (not int32 rows of max_len), and the Keras
layer's `pad=0` pads each batch to its longest file. The files are read by
the op itself (`rustfx.files`) inside tf.data.

There is no malware on this machine, so the task is the same stand-in as
train_ember_classifier.py: the kind of an executable file (Windows PE from
the test corpus, ELF executable, ELF shared library, script), from its
bytes alone. It prints the held-out accuracy, saves the model with its
byte extraction and checks the reloaded model agrees. With --sensor-dir it
also exports it for rustfx-sensor and, if built, checks that the pure-Rust
sensor gives Keras's outputs.

    .venv/bin/python python/demo/train_malconv2.py [--epochs 4]
"""

import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402
from rustfx import layers  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_ember_classifier import KINDS, demo_setup, export_for_sensor  # noqa: E402

# The bytes a file is read by, and MalConv2's window (kernel = stride).
MAX_LEN = 1 << 18
WINDOW = 128


def sequences(max_len=MAX_LEN, **kwargs):
    """MalConv2's input layer: int16 bytes + 1, each batch padded with 0 to
    its longest file."""
    return layers.ByteSequence(max_len, preset="malconv2", dtype="int16", output="ragged",
                               pad=0, **kwargs)


def dataset(pairs, batch):
    """(padded int16 bytes, label) batches, the files read by the op."""
    paths = tf.constant([p for p, _ in pairs])
    labels = tf.constant([k for _, k in pairs], tf.int32)
    read = sequences(files={})
    return (tf.data.Dataset.from_tensor_slices((paths, labels)).batch(batch)
            .map(lambda p, y: (read(p), y), num_parallel_calls=tf.data.AUTOTUNE)
            .cache().prefetch(tf.data.AUTOTUNE))


def malconv2(classes, embedding=8, filters=64):
    """Embedding, a gated convolution (conv * sigmoid(conv), kernel = stride
    = WINDOW) and temporal max pooling; a file shorter than one window is
    padded to it (with 0, MalConv2's pad)."""
    ids = keras.Input((None,), dtype="int16")
    x = keras.layers.Embedding(257, embedding)(ids)
    x = keras.layers.ZeroPadding1D((0, WINDOW))(x)
    value = keras.layers.Conv1D(filters, WINDOW, strides=WINDOW)(x)
    gate = keras.layers.Conv1D(filters, WINDOW, strides=WINDOW, activation="sigmoid")(x)
    x = keras.layers.GlobalMaxPooling1D()(keras.layers.Multiply()([value, gate]))
    x = keras.layers.Dense(32, activation="relu")(x)
    return keras.Model(ids, keras.layers.Dense(classes, activation="softmax")(x))


def main():
    args, train, held_out = demo_setup(__doc__, per_kind=60, epochs=4)
    pairs = train + held_out
    train_ds, held_ds = dataset(train, 16), dataset(held_out, 16)

    start = time.perf_counter()
    longest, held = 0, 0
    for x, _ in train_ds.concatenate(held_ds):
        longest = max(longest, x.shape[1])
        held += x.numpy().nbytes
    print(f"read + byte_sequence (int16, ragged) in tf.data: {len(pairs)} files in "
          f"{time.perf_counter() - start:.2f} s; batches padded to their longest file "
          f"(at most {longest} of max_len {MAX_LEN}), {held / 1e6:.1f} MB held "
          f"(int32 rows of max_len: {len(pairs) * MAX_LEN * 4 / 1e6:.1f} MB)")

    head = malconv2(len(KINDS))
    head.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    head.fit(train_ds, epochs=args.epochs, verbose=0, shuffle=False)
    _, accuracy = head.evaluate(held_ds, verbose=0)
    print(f"held-out accuracy: {accuracy:.3f} on {len(held_out)} files")

    # The deployable model: raw bytes in, kind out; byte extraction included.
    contents = keras.Input((), dtype="string")
    model = keras.Model(contents, head(sequences()(contents)))
    sample = [open(p, "rb").read() for p, _ in held_out[:16]]
    want = model.predict(tf.constant(sample), verbose=0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "malconv2_kind.keras")
        model.save(path)
        reloaded = keras.models.load_model(path, safe_mode=False)
        got = reloaded.predict(tf.constant(sample), verbose=0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    print(f"saved with its byte extraction; the reloaded model agrees on {len(sample)} files")
    if args.sensor_dir:
        # A batch is padded to its longest file, in Keras and in the
        # sensor alike; one file per batch scores each file on its own.
        one_by_one = np.concatenate([model.predict(tf.constant([s]), verbose=0)
                                     for s in sample])
        export_for_sensor(model, args.sensor_dir, [p for p, _ in held_out[:16]], one_by_one,
                          sensor_args=["--batch-size", "1"])
    return accuracy


if __name__ == "__main__":
    main()
