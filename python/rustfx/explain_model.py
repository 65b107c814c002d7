"""Why a Keras model said what it said about a file, in the file's bytes.

    attribution = rustfx.explain_model(model, "suspect.exe", top_k=20)
    print(rustfx_core.report.text_report(attribution))
    rustfx_core.report.write_html(attribution, "why.html")

The model contains rustfx layers (rustfx.layers: EmberFeatures,
ByteHistogram, ...), each holding its FeatureSpec. explain_model runs the
model on the file and scores each output index of each rustfx layer:

- method="grad_x_input" (the default): the gradient of the explained output
  with respect to the layer's output, times that output. The layer's output
  *is* the feature vector, so this is one forward and one backward pass,
  and it is exact for whatever is linear between the features and the
  output (a linear or logistic head's logit is exactly the sum of the
  scores plus the bias).
- method="integrated_gradients": the same product averaged over `steps`
  points from zero features to the file's (a midpoint Riemann sum, the
  steps in one batch): its scores sum to output - base, base being the
  output on zero features, also through nonlinear heads. `steps` times the
  work of one pass.

Each index's score is then split among the byte spans that made it
(rustfx.explain's contributions, in proportion to |value|; the rule and
why: rustfx_core.attribution). score="logit" explains a probability
model's logit rather than its saturating probability. Only float outputs carry gradients: the
layers that give token ids or strings are noted in the result, not scored.
"""

import os

import numpy as np
import tensorflow as tf

import rustfx_core
from rustfx_core.attribution import Attribution, explain_scores
from rustfx_core.attribution import spans as spans_of

__all__ = ["explain_model", "rustfx_layers"]

METHODS = ("grad_x_input", "integrated_gradients")
SCORES = ("output", "logit")


def rustfx_layers(model):
    """The rustfx extractor layers of `model`, nested models included."""
    from rustfx.layers import ExtractorLayer
    return [layer for layer in model._flatten_layers(include_self=False, recursive=True)
            if isinstance(layer, ExtractorLayer)]


def _read(path, max_bytes):
    if isinstance(path, (bytes, bytearray, memoryview)):
        return None, bytes(path)
    with open(path, "rb") as f:
        # The name as Python holds it (a name that is not UTF-8 as
        # surrogates); os.fsencode gives its exact bytes back.
        return os.fsdecode(path), f.read(max_bytes)


class _Watch:
    """Replaces each layer's extraction (rustfx.layers.ExtractorLayer.extract,
    what its call runs) for one pass: the output is scaled by the batch's
    alphas (integrated gradients) and watched by the tape, so the gradient
    reaches it whatever model, nesting or other inputs surround the layer."""

    def __init__(self, layers, tape, alphas):
        self.layers, self.tape, self.alphas = layers, tape, alphas
        self.outputs, self.skipped = {}, {}

    def __enter__(self):
        for layer in self.layers:
            layer.extract = self._wrap(layer, type(layer).extract.__get__(layer))
        return self

    def __exit__(self, *exc):
        for layer in self.layers:
            layer.__dict__.pop("extract", None)

    def _wrap(self, layer, extract):
        def watched(inputs):
            out = extract(inputs)
            if isinstance(out, tf.SparseTensor) and out.dtype.is_floating:
                values = out.values * tf.gather(self.alphas, out.indices[:, 0])
                self.tape.watch(values)
                self.outputs[id(layer)] = ("sparse", out.indices, values)
                return tf.SparseTensor(out.indices, values, out.dense_shape)
            if isinstance(out, tf.Tensor) and out.dtype.is_floating:
                out = out * tf.reshape(self.alphas, [-1, 1])
                self.tape.watch(out)
                self.outputs[id(layer)] = ("dense", None, out)
                return out
            self.skipped[id(layer)] = f"{type(out).__name__} of {out.dtype.name}"
            return out
        return watched


def _explained(outputs, target, score):
    """The value explained per row: the target column, or its logit."""
    if score == "output":
        return outputs[:, target]
    # Probabilities in, logits out (clipped: a saturated 1.0 stays finite).
    probs = tf.clip_by_value(outputs, 1e-7, 1 - 1e-7)
    if outputs.shape[1] == 1:  # a sigmoid's logit: log(p / (1 - p))
        return tf.math.log(probs[:, 0]) - tf.math.log1p(-probs[:, 0])
    # A softmax's logits are log p up to a constant per row: centred, they
    # are the logits minus their mean, whatever the constant.
    log_probs = tf.math.log(probs)
    return log_probs[:, target] - tf.reduce_mean(log_probs, axis=1)


def _pass(model, layers, doc, alphas, target, score):
    """One batch of copies of `doc` through the model, each rustfx layer's
    output scaled by `alphas` (one per row). Returns the model's outputs,
    the explained value per row and its column, per layer id its features
    and the gradient of the explained values' sum with respect to them
    ((rows, width) arrays), and the layers whose outputs carry no gradient."""
    alphas = tf.constant(alphas, tf.float32)
    with tf.GradientTape() as tape, _Watch(layers, tape, alphas) as watch:
        outputs = model(tf.constant([doc] * int(alphas.shape[0])), training=False)
        outputs = tf.reshape(outputs, [tf.shape(outputs)[0], -1])
        if target is None:
            # The predicted class (a single output: its only column).
            target = int(np.argmax(outputs[0].numpy()))
        explained = _explained(outputs, target, score)
        total = tf.reduce_sum(explained)  # under the tape: the gradient starts here
    watched = {key: values for key, (_, _, values) in watch.outputs.items()}
    grads = tape.gradient(total, watched,
                          unconnected_gradients=tf.UnconnectedGradients.ZERO)
    width = {id(layer): layer.spec.rows.width for layer in layers}
    rows = len(alphas)
    features, gradients = {}, {}
    for key, (kind, indices, values) in watch.outputs.items():
        features[key] = _dense_rows(kind, indices, values, width[key], rows)
        gradients[key] = _dense_rows(kind, indices, tf.convert_to_tensor(grads[key]),
                                     width[key], rows)
    return outputs.numpy(), explained.numpy(), target, features, gradients, watch.skipped


def _dense_rows(kind, indices, values, width, rows):
    """Watched values (or their gradients) as a (rows, width) array."""
    values = np.asarray(values, np.float64)
    if kind == "dense":
        return values
    dense = np.zeros((rows, width), np.float64)
    idx = np.asarray(indices)
    np.add.at(dense, (idx[:, 0], idx[:, 1]), values)
    return dense


def explain_model(model, path, top_k=20, *, method="grad_x_input", target=None,
                  score="output", labels=None, steps=32, max_bytes=rustfx_core.DEFAULT_MAX_BYTES,
                  max_contributions=None, max_text_bytes=None, byte_offsets=False):
    """Attribution of `model`'s output on the file at `path` (or bytes) to
    byte spans, through each rustfx layer of the model.

    `target`: the output column explained (default: the predicted class,
    or column 0 of a single output); `labels` names the columns. `score`:
    "output" explains the column as the model gives it; "logit", for a
    model that outputs probabilities, explains its logit instead: a
    saturated probability (0.9999) has almost no gradient left, its logit
    does (a softmax: log p minus the mean of log p over the columns, which
    is the logit minus the mean logit; a single sigmoid: log(p / (1 - p))).
    The model input is the file's contents (its first `max_bytes`), or its
    path when the layers read files themselves (`files=`, whose max_bytes
    then apply). `steps`: integrated gradients' points. `top_k`: how many spans and features the
    result's top(), features() and reports give by default; every span is
    in `.spans`. The other keywords go to rustfx.explain. Returns a
    rustfx_core.attribution.Attribution (its `.contents`: the bytes the
    model saw)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")
    layers = rustfx_layers(model)
    if not layers:
        raise ValueError("the model has no rustfx layer (rustfx.layers) to explain through")
    reads_files = any(layer.files is not None for layer in layers)
    if reads_files:  # the bytes each layer's own read gives
        max_bytes = max(layer.files.get("max_bytes", rustfx_core.DEFAULT_MAX_BYTES)
                        for layer in layers if layer.files is not None)
    name, contents = _read(path, max_bytes)
    if reads_files and name is None:
        raise ValueError("the model's layers read files (files=): give a path, not bytes")
    doc = os.fsencode(name) if reads_files else contents

    outputs, explained, target, features, gradients, skipped = _pass(model, layers, doc, [1.0],
                                                                     target, score)
    prediction = outputs[0]
    base = None
    if method == "integrated_gradients":
        # Midpoints of `steps` intervals of [0, 1], then 0 for the base.
        alphas = [(i + 0.5) / steps for i in range(steps)] + [0.0]
        _, path_explained, _, _, path_gradients, _ = _pass(model, layers, doc, alphas, target,
                                                           score)
        base = float(path_explained[-1])
        gradients = {key: g[:-1].mean(axis=0, keepdims=True)
                     for key, g in path_gradients.items()}

    frames, notes = [], []
    for layer in layers:
        key, extractor = id(layer), layer.spec.extractor
        source = layer.name if layer.name == extractor else f"{layer.name} ({extractor})"
        if key in skipped:
            notes.append(f"{source}: not scored (its output is a {skipped[key]}, "
                         "which carries no gradient)")
            continue
        scores = features[key][0] * gradients[key][0]
        seen = contents
        if layer.files is not None:
            seen = contents[:layer.files.get("max_bytes", rustfx_core.DEFAULT_MAX_BYTES)]
        frame, layer_notes = explain_scores(layer.spec, seen, scores, source=source,
                                            max_contributions=max_contributions,
                                            max_text_bytes=max_text_bytes,
                                            byte_offsets=byte_offsets)
        frames.append(frame)
        notes += layer_notes
    import pandas as pd  # on first use, as rustfx.explain: `import rustfx` needs no pandas
    spans = pd.concat(frames, ignore_index=True) if frames else spans_of(None, [])
    single = prediction.size == 1
    return Attribution(spans=spans, output=float(explained[0]), prediction=prediction,
                       method=method if score == "output" else f"{method} of the logit",
                       target=None if single else target,
                       label=labels[target] if labels is not None else None, base=base,
                       size=len(contents), path=name, notes=notes, top_k=top_k,
                       contents=contents)
