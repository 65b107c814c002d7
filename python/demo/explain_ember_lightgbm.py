"""rustfx example: why the EMBER2024 LightGBM model scored a file, in its bytes.

    .venv/bin/python python/demo/explain_ember_lightgbm.py FILE [--model MODEL.txt]
        [--html OUT.html] [--top-k 15] [--extractors ember_features]

Loads the model python/demo/train_ember_lightgbm.py wrote
(target/ember-lightgbm/model.txt; the stand-in task "Python packaging
launcher or not", see there). Without one it trains the same model in this
process on vectors from rustfx_core.extract (no Ray; seconds), so it
runs anywhere. `--extractors` trains it in-process on other rustfx
features instead (dense ones, side by side: byte_histogram,string_features).
Then, for FILE:

1. LightGBM's own SHAP values, `booster.predict(x, pred_contrib=True)`: a
   contribution per EMBER2024 dimension plus the expected value, which sum
   to the raw score (log-odds), LightGBM's TreeSHAP property (checked);
2. rustfx.explain(ember spec, bytes) lists the byte spans behind each
   dimension (imports, sections, strings, histograms), and each dimension's
   SHAP value is split among them (rustfx_core.attribution);
3. prints the report (rustfx_core.report.text_report) and writes the HTML
   one (hex view with the spans coloured by score).

No TensorFlow is imported: rustfx_core, numpy, pandas and LightGBM only.
"""

import argparse
import os
import sys
import time

import numpy as np

import rustfx_core
from rustfx_core import attribution, report

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import train_ember_lightgbm as training  # noqa: E402  (find_files, is_launcher: one rule)

EMBER = [rustfx_core.FeatureSpec("ember_features")]  # what `--spec ember2024` extracts


def vectors(specs, docs):
    """The specs' features side by side, as the model sees them."""
    return np.hstack([rustfx_core.extract(spec, docs) for spec in specs]).astype(np.float32)


def train_quickly(specs, rounds=100):
    """The training script's model (same files, labels and parameters),
    from in-process vectors, on every distinct file (no held-out split:
    this model is only explained)."""
    import lightgbm
    files = training.find_files()
    docs = rustfx_core.read_files(files)
    hashes, x = rustfx_core.sha256(docs), vectors(specs, docs)
    keep = sorted({h: i for i, h in enumerate(hashes) if docs.codes[i] == 0}.values())
    y = np.array([training.is_launcher(files[i]) for i in keep], np.int32)
    model = lightgbm.LGBMClassifier(n_estimators=rounds, learning_rate=0.1, num_leaves=15,
                                    min_child_samples=3, verbose=-1)
    model.fit(x[keep], y)
    return model.booster_, len(keep)


def explain_file(booster, path, specs=EMBER, top_k=15, max_contributions=None):
    """The Attribution of `booster`'s raw score on the file at `path`."""
    import pandas as pd
    with open(path, "rb") as f:
        contents = f.read(rustfx_core.DEFAULT_MAX_BYTES)
    x = vectors(specs, [contents])
    shap = booster.predict(x, pred_contrib=True)[0]
    raw = float(booster.predict(x, raw_score=True)[0])
    # TreeSHAP's local accuracy: dimensions + expected value = raw score.
    assert abs(shap.sum() - raw) <= 1e-6 * max(1.0, abs(raw)), (shap.sum(), raw)
    frames, notes, start = [], [], 0
    for spec in specs:  # each spec's slice of the SHAP values, to its bytes
        width = spec.rows.width
        frame, spec_notes = attribution.explain_scores(spec, contents, shap[start:start + width],
                                                       max_contributions=max_contributions)
        frames.append(frame)
        notes += spec_notes
        start += width
    spans = pd.concat(frames, ignore_index=True)
    probability = float(booster.predict(x)[0])
    return attribution.Attribution(
        spans=spans, output=raw, prediction=np.array([probability]),
        method="LightGBM SHAP (pred_contrib), raw score in log-odds",
        label=f"launcher, p={probability:.4f};", base=float(shap[-1]), size=len(contents),
        path=path, notes=notes, top_k=top_k, contents=contents)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--model", default=os.path.join(ROOT, "target", "ember-lightgbm",
                                                         "model.txt"))
    parser.add_argument("--html", default=None,
                        help="where to write the HTML report (default: FILE's name + "
                             ".lightgbm.html in target/explain)")
    parser.add_argument("--top-k", type=int, default=15)
    parser.add_argument("--extractors", default="ember_features",
                        help="comma-separated rustfx extractors (not ember_features: a model "
                             "trained here, --model ignored)")
    args = parser.parse_args()

    import lightgbm
    specs = [rustfx_core.FeatureSpec(name) for name in args.extractors.split(",")]
    if specs == EMBER and os.path.exists(args.model):
        booster = lightgbm.Booster(model_file=args.model)
        print(f"model: {args.model}")
    else:
        start = time.perf_counter()
        booster, count = train_quickly(specs)
        why = (f"no model at {args.model} (python/demo/train_ember_lightgbm.py writes it)"
               if specs == EMBER else f"features {args.extractors}")
        print(f"{why}: trained one in-process on {count} files in "
              f"{time.perf_counter() - start:.1f} s")
    attribution_ = explain_file(booster, args.file, specs, args.top_k)
    print(report.text_report(attribution_, top_k=args.top_k))
    html_path = args.html or os.path.join(ROOT, "target", "explain",
                                          os.path.basename(args.file) + ".lightgbm.html")
    os.makedirs(os.path.dirname(os.path.abspath(html_path)), exist_ok=True)
    report.write_html(attribution_, html_path)
    print(f"HTML report: {html_path}")


if __name__ == "__main__":
    main()
