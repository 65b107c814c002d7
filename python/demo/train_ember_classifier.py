"""rustfx example: a small classifier on EMBER2024 feature vectors.

Malware-ML teams train on thrember's 2568-value vectors (EMBER feature
version 3). This example computes the same vectors with rustfx inside the
tf.data pipeline (read_files -> ember_features, both Rust ops) and trains a
small Keras model on them. There is no malware on this machine, so the
task is a stand-in with labels we know: the kind of an executable file
(Windows PE from the test corpus and Python packages, ELF executable, ELF
shared library, script), from its bytes alone. It prints the pipeline's
throughput and the held-out accuracy, then exports the model *with* its
feature extraction (the EmberFeatures Keras layer) and checks that the
reloaded model gives the same predictions on raw bytes.

    .venv/bin/python python/demo/train_ember_classifier.py [--epochs 15]
"""

import argparse
import glob
import os
import random
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402
from rustfx import layers  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KINDS = ["Windows PE", "ELF executable", "ELF shared library", "script"]
MAX_BYTES = 4 << 20


def find_files(per_kind, seed):
    """(path, kind) pairs, up to `per_kind` of each kind."""
    def regular(paths):
        return sorted(p for p in paths if os.path.isfile(p) and not os.path.islink(p)
                      and 64 <= os.path.getsize(p) <= MAX_BYTES)
    site = os.path.join(sys.prefix, "lib", "python3*", "site-packages")
    candidates = {
        0: regular(glob.glob(os.path.join(ROOT, "tests", "golden", "pe", "**", "*.*"), recursive=True)
                   + glob.glob(os.path.join(site, "**", "*.exe"), recursive=True)),
        1: regular(glob.glob("/usr/bin/*")),
        2: regular(glob.glob("/usr/lib/x86_64-linux-gnu/*.so*")),
        3: regular(glob.glob("/usr/lib/python3*/**/*.py", recursive=True)
                   + glob.glob("/usr/share/perl*/**/*.pm", recursive=True)),
    }
    rng = random.Random(seed)
    pairs = []
    for kind, paths in candidates.items():
        if kind == 0:
            paths = [p for p in paths if open(p, "rb").read(2) == b"MZ"]
        elif kind in (1, 2):
            paths = [p for p in paths if open(p, "rb").read(4) == b"\x7fELF"]
        rng.shuffle(paths)
        pairs += [(p, kind) for p in paths[:per_kind]]
    rng.shuffle(pairs)
    return pairs


@keras.saving.register_keras_serializable(package="rustfx_demo")
def scaled(features):
    """EMBER values span from flags to timestamps: sign(x) * log1p(|x|)."""
    return tf.sign(features) * tf.math.log1p(tf.abs(features))


def dataset(pairs, batch):
    paths = tf.constant([p for p, _ in pairs])
    labels = tf.constant([k for _, k in pairs], tf.int32)
    return (tf.data.Dataset.from_tensor_slices((paths, labels)).batch(batch)
            .map(lambda p, y: (scaled(rustfx.ember_features(
                rustfx.read_files(p, max_bytes=MAX_BYTES))), y),
                 num_parallel_calls=tf.data.AUTOTUNE)
            .cache().prefetch(tf.data.AUTOTUNE))


def demo_setup(doc, per_kind, epochs):
    """The examples' command line (--per-kind, --epochs, --seed,
    --sensor-dir) and their files: (args, train pairs, held-out pairs)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--per-kind", type=int, default=per_kind)
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sensor-dir", default=None,
                        help="also export the model for rustfx-sensor there (and check it "
                             "agrees, if target/sensor/rustfx-sensor is built)")
    args = parser.parse_args()
    keras.utils.set_random_seed(args.seed)
    pairs = find_files(args.per_kind, args.seed)
    counts = np.bincount([k for _, k in pairs], minlength=len(KINDS))
    print("files:", ", ".join(f"{n} {kind}" for kind, n in zip(KINDS, counts)))
    split = len(pairs) * 4 // 5
    return args, pairs[:split], pairs[split:]


def main():
    args, train, held_out = demo_setup(__doc__, per_kind=150, epochs=15)
    pairs = train + held_out

    total = sum(os.path.getsize(p) for p, _ in pairs)
    start = time.perf_counter()
    train_ds, held_ds = dataset(train, 32), dataset(held_out, 32)
    for _ in train_ds.concatenate(held_ds):
        pass
    seconds = time.perf_counter() - start
    print(f"read + ember_features in tf.data: {len(pairs)} files, {total / 1e6:.1f} MB "
          f"in {seconds:.2f} s ({total / 1e6 / seconds:.0f} MB/s, "
          f"{len(pairs) / seconds:.0f} files/s)")

    head = keras.Sequential([
        keras.Input((len(rustfx.ember_feature_names()),)),
        keras.layers.Normalization(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(len(KINDS), activation="softmax"),
    ])
    head.layers[0].adapt(train_ds.map(lambda x, y: x))
    head.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    head.fit(train_ds, epochs=args.epochs, verbose=0, shuffle=False)
    _, accuracy = head.evaluate(held_ds, verbose=0)
    print(f"held-out accuracy: {accuracy:.3f} on {len(held_out)} files")

    # The deployable model: raw bytes in, kind out; extraction included.
    contents = keras.Input((), dtype="string")
    features = layers.EmberFeatures()(contents)
    outputs = head(keras.layers.Lambda(scaled)(features))
    model = keras.Model(contents, outputs)
    sample = [open(p, "rb").read() for p, _ in held_out[:16]]
    want = model.predict(tf.constant(sample), verbose=0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ember_kind.keras")
        model.save(path)
        reloaded = keras.models.load_model(path, safe_mode=False)
        got = reloaded.predict(tf.constant(sample), verbose=0)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    print(f"exported with its feature extraction; the reloaded model agrees on "
          f"{len(sample)} files")
    if args.sensor_dir:
        export_for_sensor(model, args.sensor_dir, [p for p, _ in held_out[:16]], want)
    return accuracy


def export_for_sensor(model, sensor_dir, paths, want, sensor_args=()):
    """The model for rustfx-sensor (features.json + model.onnx); if the
    program is built, checks it gives Keras's outputs within 1e-5 and the
    same winners (`sensor_args`: more arguments for rustfx-sensor)."""
    rustfx.sensor.export(model, sensor_dir)
    sensor = os.path.join(ROOT, "target", "sensor", "rustfx-sensor")
    if not os.path.exists(sensor):
        print(f"exported for rustfx-sensor: {sensor_dir} (`make sensor` builds the program)")
        return
    out = subprocess.run([sensor, "--model", sensor_dir, "--max-bytes", str(MAX_BYTES),
                          *sensor_args, *paths],
                         capture_output=True, text=True, check=True)
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert [r[0] for r in rows] == paths, out.stdout[:500]
    for (path, text), probs in zip(rows, want):
        got = np.array(text.removeprefix("output_0=").split(" "), dtype=np.float32)
        assert np.argmax(got) == np.argmax(probs), path
        np.testing.assert_allclose(got, probs, rtol=0, atol=1e-5)
    print(f"exported for rustfx-sensor: {sensor_dir}; rustfx-sensor agrees on {len(paths)} "
          "files (same winners, within 1e-5)")


if __name__ == "__main__":
    main()
