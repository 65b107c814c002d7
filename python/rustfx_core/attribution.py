"""From a model's scores per feature back to the bytes behind them.

A model attribution method (gradient x input of a Keras model,
rustfx.explain_model; LightGBM's SHAP values, `pred_contrib=True`) gives one
score per feature, that is per output index of an extractor. rustfx.explain
lists the contributions at each index: the byte spans whose values were
summed into it. `spans()` splits each index's score among them:

    share(c) = score[c.index] * |c.value| / sum(|v| for v at c.index)

(equal shares when every value at the index is 0). Why this rule: an
index's output is a function of the sum of its contributions (a count, a
count over the length, a normalised sum), so a contribution that made more
of the sum takes more of the score; the absolute values keep hashing signs
from pushing a share past its index's total; and the shares at an index add
up to its score exactly, so totals per feature always equal the model's
scores. It is exact for a linear model on a linear extractor (byte_histogram)
and a first-order reading elsewhere (entropy bins, row norms).

Scores the bytes cannot take (an extractor that does not explain yet, the
indexes a truncated explanation never reached, a feature the file lacks
whose absence SHAP still scores) stay as rows with offset -1
and length 0, never silently dropped. Needs numpy and pandas, no TensorFlow:
reports of a LightGBM model run without it.
"""

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Attribution", "spans", "explain_scores", "feature_names", "SPAN_COLUMNS"]

# The columns of Attribution.spans, in order.
SPAN_COLUMNS = ["score", "source", "feature", "index", "offset", "length", "value", "text"]


def feature_names(spec):
    """The name of each output index of `spec` (a FeatureSpec), or None
    for extractors that do not name their values (the explanation's
    `feature` column then holds the extractor's name)."""
    try:
        return spec.feature_names()
    except ValueError:
        return None


def spans(explanation, scores, *, source=None, names=None):
    """Every contribution of `explanation` (one document's DataFrame from
    rustfx.explain) with its share of `scores` (a score per output index:
    a 1-D array, or a dict index -> score), plus a row (offset -1) for each
    scored index with no contribution. Columns SPAN_COLUMNS, `source`
    naming where the scores came from (a layer, an extractor); `names`
    names the indexes of the rows without contributions."""
    import pandas as pd

    if isinstance(scores, dict):
        indexes = np.fromiter(scores, np.int64, len(scores))
        values = np.fromiter(scores.values(), np.float64, len(scores))
    else:
        values = np.asarray(scores, np.float64).ravel()
        indexes = np.arange(values.size)
    score_at = dict(zip(indexes.tolist(), values.tolist()))
    default_name = source if source is not None else ""

    if explanation is None or len(explanation) == 0:
        df = pd.DataFrame(columns=["feature", "index", "offset", "length", "value", "text"])
    else:
        df = explanation[["feature", "index", "offset", "length", "value", "text"]].copy()
    index = df["index"].to_numpy(np.int64)
    weight = np.abs(df["value"].to_numpy(np.float64))
    # Sum of |value| and number of contributions per index, for the shares.
    keys, inverse = np.unique(index, return_inverse=True)
    total = np.bincount(inverse, weights=weight, minlength=keys.size)
    count = np.bincount(inverse, minlength=keys.size)
    key_score = np.array([score_at.get(k, 0.0) for k in keys.tolist()], np.float64)
    share = np.where(total[inverse] > 0, weight / np.where(total > 0, total, 1)[inverse],
                     1.0 / np.maximum(count[inverse], 1))
    df.insert(0, "score", key_score[inverse] * share if index.size else np.zeros(0))
    df.insert(1, "source", default_name)

    covered = set(keys.tolist())
    missing = [(i, s) for i, s in zip(indexes.tolist(), values.tolist())
               if s != 0.0 and i not in covered]
    if missing:
        rest = pd.DataFrame({
            "score": [s for _, s in missing],
            "source": default_name,
            "feature": [names[i] if names is not None and i < len(names) else default_name
                        for i, _ in missing],
            "index": [i for i, _ in missing],
            "offset": -1, "length": 0, "value": 0.0, "text": [b""] * len(missing)})
        df = rest if df.empty else pd.concat([df, rest], ignore_index=True)
    df = df.astype({"index": np.int64, "offset": np.int64, "length": np.int64,
                    "value": np.float64, "score": np.float64})
    return df[SPAN_COLUMNS]


def explain_scores(spec, contents, scores, *, source=None, max_contributions=None,
                   max_text_bytes=None, byte_offsets=False):
    """spans() of `contents` (one document's bytes) under `spec` for
    `scores`, calling rustfx_core.explain; (DataFrame, notes), the notes
    saying what could not be mapped to bytes (an extractor that does not
    explain yet, a truncated explanation)."""
    import rustfx_core
    from rustfx_core.spec import FeatureSpec

    # The core's class (rustfx's raises TensorFlow's errors, which this
    # TF-free module does not catch).
    spec = FeatureSpec.from_json(spec.to_json() if isinstance(spec, FeatureSpec) else spec)
    source = source or spec.extractor
    names = feature_names(spec)
    notes = []
    try:
        explanation = rustfx_core.explain(spec, [contents], max_contributions=max_contributions,
                                          max_text_bytes=max_text_bytes,
                                          byte_offsets=byte_offsets)[0]
    except (ValueError, NotImplementedError) as e:
        # Kept as unmapped rows: the scores are real even where the
        # extractor cannot yet say which bytes made them.
        explanation = None
        notes.append(f"{source}: no byte spans ({e})")
    if explanation is not None and explanation.attrs.get("truncated"):
        notes.append(f"{source}: explanation truncated at {len(explanation)} contributions "
                     "(raise max_contributions); later bytes are not mapped")
    return spans(explanation, scores, source=source, names=names), notes


@dataclass
class Attribution:
    """One file's prediction and where its score came from in the bytes.

    `spans`: SPAN_COLUMNS, every contribution's share of the score, sorted
    by |score| (largest first). `output`: the explained value (a class's
    probability, a LightGBM raw score); `base`: the model's value at the
    reference point (SHAP's expected value, the zero features of integrated
    gradients; None for gradient x input), so output ~ base + sum(scores).
    """

    spans: object
    output: float
    prediction: np.ndarray
    method: str
    target: int = None
    label: str = None
    base: float = None
    size: int = None
    path: str = None
    notes: list = field(default_factory=list)
    top_k: int = 20
    contents: bytes = field(default=None, repr=False)

    def __post_init__(self):
        order = np.argsort(-np.abs(self.spans["score"].to_numpy()), kind="stable")
        self.spans = self.spans.iloc[order].reset_index(drop=True)

    def top(self, k=None):
        """The k (default top_k) spans with the largest |score| that cover bytes."""
        df = self.spans
        mapped = df[(df["offset"] >= 0) & (df["score"] != 0)]
        return mapped.head(k or self.top_k).reset_index(drop=True)

    def features(self, k=None):
        """The k (default top_k) largest scores summed per (source, feature,
        index): the model's own attribution of each feature, with the
        number of spans behind it and their first texts."""
        df = self.spans
        grouped = df.groupby(["source", "feature", "index"], sort=False)
        out = grouped.agg(score=("score", "sum"), spans=("offset", lambda o: int((o >= 0).sum())),
                          text=("text", _first_texts)).reset_index()
        out = out.iloc[np.argsort(-np.abs(out["score"].to_numpy()), kind="stable")]
        out = out.reset_index(drop=True)[["score", "source", "feature", "index", "spans", "text"]]
        return out[out["score"] != 0].head(k or self.top_k).reset_index(drop=True)

    @property
    def total(self):
        """The sum of every score (what the method distributed)."""
        return float(self.spans["score"].sum())


def _first_texts(texts, limit=3):
    seen = []
    for text in texts:
        if text and text not in seen:
            seen.append(text)
            if len(seen) == limit:
                break
    return seen
