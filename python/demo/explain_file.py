"""rustfx example: why the Keras file-kind classifier said what it did about
a file, in the file's bytes.

    .venv/bin/python python/demo/explain_file.py FILE [--method integrated_gradients]
        [--layers ember_features[,byte_entropy_histogram...]] [--html OUT.html]

The model is python/demo/train_ember_classifier.py's (raw bytes in, the
kind of executable out: Windows PE, ELF executable, ELF shared library,
script; the EmberFeatures layer inside the model). That demo keeps no
model, so this script trains a small one the same way (fewer files and
epochs, well under a minute) and saves it as target/explain/<layers>.keras,
loaded on later runs (--retrain to redo it). `--layers` puts other rustfx
layers in its place (any dense float extractor, side by side).

rustfx.explain_model then scores each output index of each rustfx layer by
gradient x input of the predicted class's logit (--score) and splits the
scores among the byte spans rustfx.explain lists; the script prints the
report (rustfx_core.report.text_report) and writes the HTML one.
"""

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402
from rustfx.explain_model import METHODS, SCORES  # noqa: E402
from rustfx_core import report  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
# One file list, label set and scaling with the demo (`scaled` is registered
# with Keras there, so the saved model loads).
from train_ember_classifier import KINDS, MAX_BYTES, find_files, scaled  # noqa: E402


def extractor_layers(names):
    layers = []
    for name in names:
        layer = getattr(rustfx.layers, rustfx.layers.class_name(name))()
        rows = layer.spec.rows
        if rows.ragged or rows.sparse or not np.issubdtype(np.dtype(rows.dtype), np.floating):
            sys.exit(f"--layers: {name} gives {rows}; this example needs dense float features")
        layers.append(layer)
    return layers


def train(names, per_kind, epochs, seed):
    """The demo's model, small: features once per file, the head trained
    on them, then the deployable model (bytes in) around the same layers."""
    keras.utils.set_random_seed(seed)
    pairs = find_files(per_kind, seed)
    layers = extractor_layers(names)

    def features(contents):
        return tf.concat([scaled(layer(contents)) for layer in layers], axis=-1)
    x = np.concatenate([features(rustfx.read_files([p for p, _ in pairs[i:i + 32]],
                                                   max_bytes=MAX_BYTES)).numpy()
                        for i in range(0, len(pairs), 32)])
    y = np.array([k for _, k in pairs], np.int32)
    head = keras.Sequential([
        keras.Input((x.shape[1],)),
        keras.layers.Normalization(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(len(KINDS), activation="softmax"),
    ])
    head.layers[0].adapt(x)
    head.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    head.fit(x, y, epochs=epochs, batch_size=32, verbose=0)
    _, accuracy = head.evaluate(x, y, verbose=0)

    contents = keras.Input((), dtype="string")
    parts = [keras.layers.Lambda(scaled)(layer(contents)) for layer in layers]
    merged = parts[0] if len(parts) == 1 else keras.layers.Concatenate()(parts)
    return keras.Model(contents, head(merged)), len(pairs), accuracy


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--layers", default="ember_features",
                        help="comma-separated rustfx extractors the model is built on")
    parser.add_argument("--method", default="grad_x_input", choices=METHODS)
    parser.add_argument("--score", default="logit", choices=SCORES,
                        help="explain the predicted class's logit (default: a probability "
                             "near 1 has almost no gradient) or its probability")
    parser.add_argument("--top-k", type=int, default=15)
    parser.add_argument("--per-kind", type=int, default=40)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--retrain", action="store_true")
    parser.add_argument("--html", default=None, help="default: target/explain/FILE.keras.html")
    args = parser.parse_args()

    names = args.layers.split(",")
    out_dir = os.path.join(ROOT, "target", "explain")
    os.makedirs(out_dir, exist_ok=True)
    model_path = os.path.join(out_dir, "_".join(names) + ".keras")
    if os.path.exists(model_path) and not args.retrain:
        model = keras.models.load_model(model_path, safe_mode=False)
        print(f"model: {model_path}")
    else:
        start = time.perf_counter()
        model, count, accuracy = train(names, args.per_kind, args.epochs, 0)
        model.save(model_path)
        print(f"trained on {count} files in {time.perf_counter() - start:.1f} s "
              f"(training accuracy {accuracy:.3f}); saved {model_path}")

    result = rustfx.explain_model(model, args.file, args.top_k, method=args.method,
                                  score=args.score, labels=KINDS, max_bytes=MAX_BYTES)
    print(report.text_report(result, top_k=args.top_k))
    html_path = args.html or os.path.join(out_dir, os.path.basename(args.file) + ".keras.html")
    report.write_html(result, html_path)
    print(f"HTML report: {html_path}")


if __name__ == "__main__":
    main()
