"""Classify files by language with the model the demo exported.

    .venv/bin/python python/demo/classify.py MODEL_DIR FILE...

Loads the SavedModel (its serving signature takes a batch of raw file
contents; the feature extraction is inside it, as rustfx ops, so
`import rustfx` must come first) and prints one line per file:
path, language, probability, tab-separated. Files that cannot be read are
reported on stderr by path; the rest are still classified; the exit status
is 1 if any failed.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402,F401  (registers the ops before the model loads)

MAX_BYTES = 64 << 10  # as in training


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    model_dir, paths = sys.argv[1], sys.argv[2:]
    model = tf.saved_model.load(model_dir)
    with open(os.path.join(model_dir, "labels.txt")) as f:
        labels = f.read().split("\n")
    contents, status = rustfx.read_files(paths, max_bytes=MAX_BYTES, on_error="empty",
                                         with_status=True)
    probabilities = model.serve(contents).numpy()
    failed = False
    for path, code, message, probs in zip(paths, status.codes.numpy(),
                                          status.messages.numpy(), probabilities):
        if code != 0:
            print(f"{path}: {message.decode()}", file=sys.stderr)
            failed = True
            continue
        best = int(probs.argmax())
        print(f"{path}\t{labels[best]}\t{probs[best]:.9g}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
