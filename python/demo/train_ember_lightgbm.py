"""rustfx example: EMBER2024 vectors to Parquet on Ray, then LightGBM.

EMBER2024's benchmark models are LightGBM on the 2568-value vectors. The
job at scale is two steps, and this example runs both:

  1. vectorise a corpus once, into Parquet shards (Ray, all local cores):
         python -m rustfx.corpus --spec ember2024 --input FILES --output OUT
  2. train LightGBM from the Parquet rows (rustfx.corpus.read_parquet) and
     evaluate it on held-out files.

There is no labelled malware on this machine, so the task is a STAND-IN
with a made-up labelling rule, and its metric says nothing about malware
detection: label 1 = "a Python packaging launcher" (the Windows launchers
of distlib and setuptools: t32.exe, w64.exe, cli-64.exe, gui.exe, ...,
found in the Python installs of this machine and tests/golden/pe/launchers),
label 0 = every other file of the PE test corpus (tests/golden/pe: MinGW
builds, signed, resource and malformed variants, a few non-PE files). The
label comes from where a file was found, never from its bytes, the way a
family label would. Files with the same SHA-256 (the same launcher in
several Python versions) are kept once, and the train/test split is by
SHA-256 (stratified by label), so no file is on both sides.

    .venv/bin/python python/demo/train_ember_lightgbm.py [--output target/ember-lightgbm]

It prints the counts, the held-out ROC AUC and accuracy, and writes
OUT/model.txt (LightGBM's text model) and OUT/metrics.json. Why the model
scores a file as it does, down to its bytes (LightGBM's SHAP values mapped
through rustfx.explain; docs/explain.md):

    .venv/bin/python python/demo/explain_ember_lightgbm.py FILE [--model OUT/model.txt]
"""

import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAUNCHER_NAMES = ("t32", "t64", "t64-arm", "w32", "w64", "w64-arm", "cli", "cli-32",
                  "cli-64", "cli-arm64", "gui", "gui-32", "gui-64", "gui-arm64")


def is_launcher(path):
    """The stand-in labelling rule (by provenance: the file's place and name)."""
    name = os.path.basename(path)
    if os.sep + "launchers" + os.sep in path:
        return True
    stem = name[:-4] if name.endswith(".exe") else None
    return stem is not None and stem.split("_")[-1] in LAUNCHER_NAMES and (
        "distlib" in path or "setuptools" in path)


def find_files(limit=None):
    """The PE test corpus and the packaging launchers of this machine's
    Python installs; with `limit`, a balanced subset of about that many."""
    corpus = sorted(p for p in glob.glob(os.path.join(ROOT, "tests", "golden", "pe", "**", "*"),
                                         recursive=True) if os.path.isfile(p))
    installs = set()
    for pattern in ("/usr/lib/python3*/**/*.exe",
                    os.path.expanduser("~/.pyenv/versions/**/*.exe"),
                    os.path.join(sys.prefix, "lib", "python3*", "site-packages", "**", "*.exe")):
        installs |= {p for p in glob.glob(pattern, recursive=True)
                     if os.path.isfile(p) and is_launcher(p)}
    files = corpus + sorted(installs)
    if limit:
        positives = [p for p in files if is_launcher(p)][: limit // 2]
        negatives = [p for p in files if not is_launcher(p)][: limit - len(positives)]
        files = positives + negatives
    return sorted(files)


def test_mask(shas, labels, test_fraction):
    """Held-out rows: within each label, the rows ordered by SHA-256 and
    every 1/test_fraction-th of them taken (stratified, stable, and copies
    of a file, already merged, cannot land on both sides)."""
    import numpy as np
    mask = np.zeros(len(shas), bool)
    for label in set(labels):
        rows = sorted((s, i) for i, (s, l) in enumerate(zip(shas, labels)) if l == label)
        for k, (_, i) in enumerate(rows):
            mask[i] = int((k + 1) * test_fraction) != int(k * test_fraction)
    return mask


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(ROOT, "target", "ember-lightgbm"))
    parser.add_argument("--limit", type=int, default=None,
                        help="use about this many files (a quick run)")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--test-fraction", type=float, default=0.3)
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()

    import lightgbm
    import numpy as np
    from sklearn.metrics import accuracy_score, roc_auc_score

    os.makedirs(args.output, exist_ok=True)
    files = find_files(args.limit)
    listing = os.path.join(args.output, "files.txt")
    with open(listing, "w") as f:
        f.write("".join(p + "\n" for p in files))

    # 1. Vectorise (a rerun skips the committed shards).
    vectors = os.path.join(args.output, "vectors")
    command = [sys.executable, "-m", "rustfx.corpus", "--spec", "ember2024",
               "--input", listing, "--output", vectors, "--shard-size", "100"]
    if args.workers:
        command += ["--workers", str(args.workers)]
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=True)

    # 2. Train and evaluate from the Parquet rows.
    from rustfx import corpus
    table = corpus.read_parquet(vectors, "ember2024").to_pydict()
    seen, rows = set(), []
    for path, sha, status, vector in zip(table["path"], table["sha256"], table["status"],
                                         table["ember_features"]):
        if status != 0 or sha in seen:
            continue
        seen.add(sha)
        rows.append((os.fsdecode(path), sha, vector))  # the path column is bytes
    x = np.asarray([r[2] for r in rows], np.float32)
    y = np.asarray([is_launcher(r[0]) for r in rows], np.int32)
    test = test_mask([r[1] for r in rows], list(y), args.test_fraction)
    print(f"{len(table['path'])} files vectorised, {len(rows)} distinct; "
          f"train {int((~test).sum())} ({int(y[~test].sum())} launchers), "
          f"test {int(test.sum())} ({int(y[test].sum())} launchers)")
    if len(set(y[~test])) < 2 or len(set(y[test])) < 2:
        sys.exit("both labels are needed in train and test: use more files")
    model = lightgbm.LGBMClassifier(n_estimators=args.rounds, learning_rate=0.1,
                                    num_leaves=15, min_child_samples=3, verbose=-1)
    model.fit(x[~test], y[~test])
    scores = model.predict_proba(x[test])[:, 1]
    metrics = {"roc_auc": float(roc_auc_score(y[test], scores)),
               "accuracy": float(accuracy_score(y[test], scores >= 0.5)),
               "train": int((~test).sum()), "test": int(test.sum()),
               "task": "stand-in: Python packaging launcher vs other PE test files",
               "features_sha256": hashlib.sha256(x.tobytes()).hexdigest()}
    model.booster_.save_model(os.path.join(args.output, "model.txt"))
    with open(os.path.join(args.output, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    print(f"held-out ROC AUC {metrics['roc_auc']:.3f}, accuracy {metrics['accuracy']:.3f} "
          f"(stand-in task; see the module doc)")
    print(f"model: {os.path.join(args.output, 'model.txt')}")


if __name__ == "__main__":
    main()
