"""rustfx demo: tell source files apart by language, from their bytes alone.

Finds source files on this machine (the label comes from the file extension,
which the model never sees), then trains a small Keras classifier whose
whole feature extraction runs inside tf.data as rustfx ops:
read_files (Rust, bounded, non-blocking) -> hashed word n-grams (Rust).
Prints the input pipeline's throughput and the validation accuracy, then
exports the best model *with its feature extraction* (rustfx's Keras layers)
as a SavedModel and classifies files from it with classify.py in a new
process, checking it agrees.

Run with `make demo` (sets everything up), or `python <this file>` in the venv.
"""

import argparse
import glob
import os
import random
import subprocess
import sys
import time
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROOTS = ["/usr", sys.prefix, sys.base_prefix]
LANGUAGES = {
    "Python": (".py",),
    "C header": (".h",),
    "Perl": (".pm", ".pl"),
    "reStructuredText": (".rst",),
    "JavaScript": (".js",),
    "JSON": (".json",),
    "XML": (".xml",),
    "HTML": (".html", ".htm"),
}
NUM_BUCKETS = 1 << 13
MAX_BYTES = 64 << 10


def find_files(per_language, seed):
    """Up to `per_language` regular files of each language, 200 B..1 MB."""
    by_ext = {ext: label for label, exts in enumerate(LANGUAGES.values())
              for ext in exts}
    found = {label: set() for label in range(len(LANGUAGES))}
    for root in dict.fromkeys(ROOTS):
        for dirpath, _, names in os.walk(root):
            for name in names:
                label = by_ext.get(os.path.splitext(name)[1])
                if label is None:
                    continue
                path = os.path.join(dirpath, name)
                try:
                    if os.path.islink(path) or not 200 <= os.path.getsize(path) <= 1 << 20:
                        continue
                except OSError:
                    continue
                found[label].add(path)
    rng = random.Random(seed)
    paths, labels = [], []
    for label, files in found.items():
        chosen = sorted(files)
        rng.shuffle(chosen)
        for path in chosen[:per_language]:
            paths.append(path)
            labels.append(label)
    return paths, labels


FEATURE_SETS = ("ngrams", "ngrams+bytes", "ngrams+bytes+strings")


def features(contents, feature_set):
    """The model's input: bag of hashed word 1- and 2-grams, l2-normalised,
    optionally with the EMBER byte histogram and string features. Pure rustfx
    ops, so it runs in tf.data and inside the SavedModel."""
    parts = [rustfx.hashed_ngrams(contents, num_buckets=NUM_BUCKETS,
                                  ngram_widths=(1, 2), tokenizer="word",
                                  output="counts", norm="l2")]
    if "bytes" in feature_set:
        parts.append(rustfx.byte_histogram(contents))
    if "strings" in feature_set:
        # Counts and lengths span orders of magnitude: log1p keeps them tame.
        parts.append(tf.math.log1p(rustfx.string_features(contents)))
    return tf.concat(parts, axis=-1)


def pipeline(paths, labels, batch_size, feature_set):
    """Paths -> (features, label, bytes read) batches; FX in the map stage."""
    def extract(path, label):
        contents = rustfx.read_files(path, max_bytes=MAX_BYTES, on_error="empty")
        return (features(contents, feature_set), label,
                tf.strings.length(contents))
    return (tf.data.Dataset.from_tensor_slices((paths, labels))
            .batch(batch_size)
            .map(extract, num_parallel_calls=tf.data.AUTOTUNE))


def measure_throughput(paths, labels, batch_size, feature_set):
    start = time.perf_counter()
    files = total_bytes = 0
    for x, _, lengths in pipeline(paths, labels, batch_size, feature_set):
        files += int(x.shape[0])
        total_bytes += int(tf.reduce_sum(lengths))
    seconds = time.perf_counter() - start
    print(f"input pipeline ({feature_set}, tf.data AUTOTUNE): {files} files, "
          f"{total_bytes / 1e6:.1f} MB in {seconds:.2f} s = "
          f"{files / seconds:,.0f} files/s, {total_bytes / 1e6 / seconds:.1f} MB/s")


def train(split, feature_set, args, num_classes):
    """Trains on cached features; returns (model, validation accuracy)."""
    (train_paths, train_labels), (val_paths, val_labels) = split

    def drop_lengths(x, y, _):
        return x, y
    train_ds = (pipeline(train_paths, train_labels, args.batch_size, feature_set)
                .map(drop_lengths).cache().prefetch(tf.data.AUTOTUNE))
    val_ds = (pipeline(val_paths, val_labels, args.batch_size, feature_set)
              .map(drop_lengths).cache().prefetch(tf.data.AUTOTUNE))
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([
        tf.keras.Input(shape=train_ds.element_spec[0].shape[1:]),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dropout(0.2),
        tf.keras.layers.Dense(num_classes, activation="softmax"),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    print(f"\ntraining on {feature_set}:")
    model.fit(train_ds, validation_data=val_ds, epochs=args.epochs, verbose=1)
    _, accuracy = model.evaluate(val_ds, verbose=0)
    return model, accuracy


def end_to_end(model, feature_set):
    """The trained model behind rustfx's Keras layers: raw file contents in,
    class probabilities out, the same FX as `features` inside the model."""
    inputs = keras.Input(shape=(), dtype="string", name="contents")
    parts = [rustfx.layers.HashedNgrams(num_buckets=NUM_BUCKETS, ngram_widths=(1, 2),
                                        tokenizer="word", output="counts",
                                        norm="l2")(inputs)]
    if "bytes" in feature_set:
        parts.append(rustfx.layers.ByteHistogram()(inputs))
    if "strings" in feature_set:
        parts.append(keras.layers.Lambda(tf.math.log1p)(rustfx.layers.StringFeatures()(inputs)))
    x = keras.layers.Concatenate()(parts) if len(parts) > 1 else parts[0]
    return keras.Model(inputs, model(x))


def export_and_check(model, feature_set, val_paths, export_dir, sensor_dir):
    """Exports the end-to-end model as a SavedModel (serving signature: a
    batch of raw bytes), then classifies validation files from it with
    classify.py in a new process and checks it agrees with this one; then
    exports it for rustfx-sensor (pure Rust, no TF) and checks that too."""
    served = end_to_end(model, feature_set)
    served.export(export_dir, verbose=False)
    with open(os.path.join(export_dir, "labels.txt"), "w") as f:
        f.write("\n".join(LANGUAGES) + "\n")
    sample = val_paths[:32]
    here = served(rustfx.read_files(sample, max_bytes=MAX_BYTES, on_error="empty")).numpy()
    out = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "classify.py"),
                          export_dir, *sample], capture_output=True, text=True, check=True)
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert [r[0] for r in rows] == sample, out.stdout[:500]
    names = list(LANGUAGES)
    for (path, name, probability), probs in zip(rows, here):
        assert name == names[int(np.argmax(probs))], (path, name)
        np.testing.assert_allclose(float(probability), probs.max(), rtol=1e-6)
    print(f"SavedModel with rustfx FX embedded: {export_dir}\n"
          f"classify.py in a new process agrees on {len(sample)} files; try:\n"
          f"  .venv/bin/python python/demo/classify.py {export_dir} FILE...")
    export_for_sensor(served, sensor_dir, sample, here)


def export_for_sensor(served, sensor_dir, sample, here):
    """The same model for rustfx-sensor (features.json + model.onnx): if the
    program is built (`make sensor`), checks it gives the same winners and
    probabilities within 1e-5 of Keras's on the sample."""
    rustfx.sensor.export(served, sensor_dir)
    with open(os.path.join(sensor_dir, "labels.txt"), "w") as f:
        f.write("\n".join(LANGUAGES) + "\n")
    sensor = os.path.join(ROOT, "target", "sensor", "rustfx-sensor")
    if not os.path.exists(sensor):
        print(f"exported for rustfx-sensor: {sensor_dir} (`make sensor` builds the program)")
        return
    out = subprocess.run([sensor, "--model", sensor_dir, "--max-bytes", str(MAX_BYTES), *sample],
                         capture_output=True, text=True, check=True)
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert [r[0] for r in rows] == sample, out.stdout[:500]
    for (path, probs_text), probs in zip(rows, here):
        got = np.array(probs_text.removeprefix("output_0=").split(" "), dtype=np.float32)
        assert np.argmax(got) == np.argmax(probs), path
        np.testing.assert_allclose(got, probs, rtol=0, atol=1e-5)
    print(f"exported for rustfx-sensor (pure Rust, no TF): {sensor_dir}\n"
          f"rustfx-sensor agrees on {len(sample)} files (same winners, within 1e-5); try:\n"
          f"  target/sensor/rustfx-sensor --model {sensor_dir} --max-bytes {MAX_BYTES} FILE...")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-language", type=int, default=600)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--features", choices=FEATURE_SETS, action="append",
                        help="feature sets to compare (default: all)")
    parser.add_argument("--export-dir", default="target/demo-model",
                        help="where the best model is saved, FX included")
    parser.add_argument("--sensor-dir", default="target/demo-sensor",
                        help="where the best model is exported for rustfx-sensor")
    args = parser.parse_args()
    feature_sets = args.features or list(FEATURE_SETS)

    paths, labels = find_files(args.per_language, seed=0)
    names = list(LANGUAGES)
    counts = np.bincount(labels, minlength=len(names))
    print("files found:", ", ".join(f"{n} {c}" for n, c in zip(names, counts)))
    # Split by a hash of the path, so the split does not depend on order.
    is_val = [zlib.crc32(p.encode()) % 5 == 0 for p in paths]
    train_set = [(p, y) for p, y, v in zip(paths, labels, is_val) if not v]
    val_set = [(p, y) for p, y, v in zip(paths, labels, is_val) if v]
    random.Random(1).shuffle(train_set)
    split = (tuple(map(list, zip(*train_set))), tuple(map(list, zip(*val_set))))

    measure_throughput(paths, labels, args.batch_size, feature_sets[-1])
    results = {}
    for feature_set in feature_sets:
        results[feature_set] = train(split, feature_set, args, len(names))
    print(f"\nvalidation accuracy on {len(val_set)} files ({len(names)} "
          f"languages, chance {1 / len(names):.3f}):")
    for feature_set, (_, accuracy) in results.items():
        print(f"  {feature_set:<24} {accuracy:.3f}")
    best = max(results, key=lambda k: results[k][1])
    export_and_check(results[best][0], best, split[1][0], args.export_dir,
                     args.sensor_dir)


if __name__ == "__main__":
    main()
