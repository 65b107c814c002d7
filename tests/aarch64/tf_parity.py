"""The TensorFlow side of x86-64 against aarch64: what the rustfx wheel's ops
give, as digests, so two runs (one per CPU) can be compared.

`make test-aarch64` (tests/aarch64/tf_cell.py) runs it with the x86-64
venv (the x86-64 wheel) and, under qemu-user, with the aarch64 Python (the
aarch64 wheel), both TF 2.20, on the same files:

    python tf_parity.py rows --corpus DIR... --out rows.json
        every extractor of the registry, each example plus each value of
        `output` and `dtype` it allows (parity.cases, the cases
        tests/aarch64/parity.py runs through rustfx-features), run eagerly
        on all the files at once (rustfx.files); per case, the SHA-256 of
        each part's dtype, shape and bytes (dense; ragged values and
        row_splits; sparse indices, values and dense_shape). And the
        hashes whose code differs by CPU (SHA-256's block functions, BLAKE3's
        SIMD): rustfx.sha256 and rustfx.content_key of every file and of
        byte strings around SHA-256's block edges, and how many SHA-256s
        differ from hashlib's here.
    python tf_parity.py save-model DIR --corpus DIR... --out model.json
        a SavedModel taking paths, with every case's FX inside, saved to
        DIR; then reloaded here and run on the files (the digests).
    python tf_parity.py model DIR --corpus DIR... --out model.json
        that SavedModel loaded (rustfx imported first) and run.

Imports rustfx from the installed wheel, never from the checkout. Needs
numpy, tensorflow and rustfx; parity.py beside it for the cases and files.
"""

import argparse
import hashlib
import json
import os
import platform
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402  (registers the ops before any SavedModel loads)
from parity import cases, corpus_files  # noqa: E402


def spec_json(name, params):
    """The canonical spec JSON, or None where the spec refuses the params."""
    try:
        return rustfx.FeatureSpec(name, **params).to_json()
    except (ValueError, TypeError, tf.errors.InvalidArgumentError):
        return None


def registry_cases():
    registry = [{"name": name, **entry} for name, entry in sorted(rustfx.registry().items())]
    return cases(spec_json, registry)


def parts(x):
    """An extractor's output as named dense tensors (the matrix suite's
    golden parts)."""
    if isinstance(x, tf.RaggedTensor):
        return {"values": x.flat_values, "row_splits": x.row_splits}
    if isinstance(x, tf.SparseTensor):
        return {"indices": x.indices, "values": x.values, "dense_shape": x.dense_shape}
    return {"": x}


def digest(t):
    """SHA-256 of a tensor's dtype, shape and bytes (strings: each one's
    length and bytes), so equal digests mean equal bits, NaN payloads
    included."""
    a = np.asarray(t.numpy() if hasattr(t, "numpy") else t)
    h = hashlib.sha256(f"{a.dtype.str if a.dtype != object else 'bytes'} {a.shape}".encode())
    if a.dtype == object:
        for s in a.reshape(-1):
            h.update(len(s).to_bytes(8, "little") + s)
    else:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


# Lengths around SHA-256's 64-byte blocks and its padding's edge (55, 56),
# up to 1 MiB, beside the corpus's files.
HASH_LENGTHS = (0, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 1000, 4096, 65537, 1 << 20)


def hashes(files):
    """The hex digests of rustfx.sha256 and rustfx.content_key on every
    file's bytes and on HASH_LENGTHS bytes of a fixed pattern, and how many
    of the SHA-256s differ from hashlib's."""
    contents = []
    for path in files:
        with open(path, "rb") as f:
            contents.append(f.read())
    contents += [bytes((i * 31 + n) % 251 for i in range(n)) for n in HASH_LENGTHS]
    sha = [h.decode() for h in rustfx.sha256(tf.constant(contents)).numpy()]
    key = [h.decode() for h in rustfx.content_key(tf.constant(contents)).numpy()]
    return {"inputs": len(contents), "sha256": sha, "content_key": key,
            "sha256_not_hashlib": sum(h != hashlib.sha256(c).hexdigest()
                                      for h, c in zip(sha, contents))}


def rows(args):
    files = corpus_files(args.corpus)
    paths = tf.constant(files)
    found, refused = registry_cases()
    out = {"files": int(paths.shape[0]), "refused": refused, "cases": {},
           "hashes": hashes(files)}
    for _, spec in found:
        result = rustfx.extract(rustfx.FeatureSpec.from_json(spec), rustfx.files(paths))
        out["cases"][spec] = {k: digest(v) for k, v in parts(result).items()}
    return out


class Features(tf.Module):
    """Every case's FX on the files at `paths`, inside the graph: read
    (rustfx.files) and extract, one output per part."""

    def __init__(self, specs):
        super().__init__()
        self.specs = specs

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def __call__(self, paths):
        out = {}
        for i, spec in enumerate(self.specs):
            result = rustfx.extract(rustfx.FeatureSpec.from_json(spec), rustfx.files(paths))
            for part, t in parts(result).items():
                out[f"case{i}" + ("." + part if part else "")] = t
        return out


def model_digests(model, args):
    paths = tf.constant(corpus_files(args.corpus))
    outputs = model.signatures["serving_default"](paths=paths)
    return {"files": int(paths.shape[0]), "outputs": {k: digest(v) for k, v in
                                                      sorted(outputs.items())}}


def save_model(args):
    specs = [spec for _, spec in registry_cases()[0]]
    module = Features(specs)
    tf.saved_model.save(module, args.dir, signatures={"serving_default": module.__call__})
    return {"specs": specs, **model_digests(tf.saved_model.load(args.dir), args)}


def load_model(args):
    return model_digests(tf.saved_model.load(args.dir), args)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["rows", "save-model", "model"])
    parser.add_argument("dir", nargs="?", help="the SavedModel's directory")
    parser.add_argument("--corpus", action="append", required=True, help="a directory of files")
    parser.add_argument("--out", required=True, help="the digests (JSON)")
    args = parser.parse_args()
    if args.what != "rows" and not args.dir:
        parser.error(f"{args.what} needs the SavedModel's directory")
    start = time.monotonic()
    result = {"rows": rows, "save-model": save_model, "model": load_model}[args.what](args)
    result["tensorflow"] = tf.__version__
    result["machine"] = platform.machine()
    result["rustfx"] = os.path.dirname(rustfx.__file__)
    result["seconds"] = round(time.monotonic() - start, 1)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print(f"tf_parity {args.what}: {result['seconds']} s, TF {tf.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
