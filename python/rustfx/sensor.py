"""Export a Keras model with rustfx layers to run in pure Rust (rustfx-sensor).

`export(model, dir)` splits a Keras 3 model whose input is raw file bytes
(`keras.Input(shape=(), dtype="string")`) where its rustfx layers end:

- `dir/features.json`: each rustfx layer's FeatureSpec (output version
  included), the model input it reads and the ONNX input it feeds, in the
  order of the ONNX graph's inputs; and the ONNX outputs with the keys
  rustfx-sensor prints them under (`output_0`, ..., as `model.export`'s
  SavedModel signature names them);
- `dir/model.onnx`: the rest of the model, from the rustfx layers' outputs
  to the model's outputs, through Keras's ONNX export (tf2onnx).

`rustfx_sensor::Model` (crates/rustfx-sensor) and `rustfx-sensor` load
the pair: the Rust core computes the features from the specs (the ops'
values, bit for bit) and tract runs the network. docs/sensor.md has the
details and the footprint.

    model = keras.Model(inputs, outputs)    # rustfx layers on `inputs`
    rustfx.sensor.export(model, "target/my-sensor")

A model that cannot be split raises `ExportError`, naming the layer: a
rustfx layer that does not read the model's input (or reads paths,
`files=`), a ragged or sparse rustfx output that feeds other layers (ONNX
takes dense tensors only; ragged numeric rows the layer pads, `pad=`, are
dense: features.json records the pad and rustfx-sensor pads each batch to
its longest row as the layer does), any other layer that takes the raw bytes (ONNX
has no string ops), or a layer the ONNX export cannot express.
"""

import json
import logging
import os
import re

import keras
import numpy as np

from rustfx.layers import ExtractorLayer

__all__ = ["export", "ExportError", "FORMAT", "FORMAT_VERSION"]

FORMAT = "rustfx-sensor"
FORMAT_VERSION = 1
FEATURES_FILE = "features.json"
MODEL_FILE = "model.onnx"


class ExportError(ValueError):
    """The model cannot be split into rustfx features and an ONNX graph."""


def export(model, dir):
    """Writes `dir/features.json` and `dir/model.onnx` for rustfx-sensor;
    returns the features.json contents as a dict. See the module's doc."""
    model = _functional(model)
    raw = _raw_input(model)
    features = _features(model, raw)
    head, onnx_inputs = _head(model, features)
    os.makedirs(dir, exist_ok=True)
    onnx_path = os.path.join(dir, MODEL_FILE)
    graph = _export_onnx(head, onnx_path, model, onnx_inputs)
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model_input": raw.name,
        "features": [{"layer": layer.name, "model_input": raw.name, "onnx_input": name,
                      "spec": layer.spec.to_dict(),
                      **({} if layer.pad is None else {"pad": layer.pad})}
                     for (layer, _), name in zip(features, onnx_inputs)],
        "outputs": [{"key": f"output_{i}", "onnx_output": o.name}
                    for i, o in enumerate(graph.output)],
    }
    with open(os.path.join(dir, FEATURES_FILE), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    return manifest


def _functional(model):
    if isinstance(model, keras.Sequential):
        if not model.built or not getattr(model, "inputs", None):
            raise ExportError("the Sequential model has no inputs yet: start it with "
                              "keras.Input(shape=(), dtype=\"string\")")
        model = keras.Model(model.inputs, model.outputs)
    if not isinstance(model, keras.Model) or not hasattr(model, "_nodes_by_depth"):
        raise ExportError(f"{type(model).__name__} is not a functional Keras model; build it "
                          "with keras.Model(inputs, outputs) (subclassed models have no graph "
                          "to split)")
    return model


def _raw_input(model):
    inputs = model.inputs
    if len(inputs) != 1:
        raise ExportError(f"the model has {len(inputs)} inputs "
                          f"({', '.join(i.name for i in inputs)}); a sensor model takes one, "
                          "the raw bytes of each file")
    raw = inputs[0]
    if raw.dtype != "string" or tuple(raw.shape) != (None,):
        raise ExportError(f"the model input '{raw.name}' is {raw.dtype} of shape "
                          f"{tuple(raw.shape)}; a sensor model takes raw file bytes, "
                          "keras.Input(shape=(), dtype=\"string\")")
    return raw


def _nodes(model):
    """The model's call nodes, inputs first."""
    for depth in sorted(model._nodes_by_depth, reverse=True):
        for node in model._nodes_by_depth[depth]:
            if node.operation is not None and not node.is_input:
                yield node


def _describe(layer):
    return f"layer '{layer.name}' ({type(layer).__name__})"


def _features(model, raw):
    """[(rustfx layer, its output KerasTensor)] that feed the rest of the
    model, in the order of model.layers; checks what the sensor cannot run."""
    nodes = list(_nodes(model))
    extractor_outputs = {}
    for node in nodes:
        layer = node.operation
        if isinstance(layer, ExtractorLayer):
            if len(node.input_tensors) != 1 or node.input_tensors[0] is not raw:
                raise ExportError(f"{_describe(layer)} does not read the model input "
                                  f"'{raw.name}'; in a sensor model every rustfx layer "
                                  "reads the raw bytes")
            if layer.files is not None:
                raise ExportError(f"{_describe(layer)} reads files (files=...); the sensor "
                                  "reads the files itself and feeds their bytes: drop files=")
            extractor_outputs[id(node.output_tensors[0])] = (layer, node.output_tensors[0])
    for node in nodes:
        layer = node.operation
        if not isinstance(layer, ExtractorLayer) and any(t is raw for t in node.input_tensors):
            raise ExportError(f"{_describe(layer)} takes the raw bytes '{raw.name}'; only "
                              "rustfx layers may: the rest of the model runs in ONNX, which "
                              "has no string ops")
    used = {}
    for node in nodes:
        for tensor in node.input_tensors:
            if id(tensor) in extractor_outputs and not isinstance(node.operation, ExtractorLayer):
                used[id(tensor)] = extractor_outputs[id(tensor)]
                layer = extractor_outputs[id(tensor)][0]
                rows = layer.spec.rows
                if (rows.ragged and layer.pad is None) or rows.sparse:
                    raise ExportError(
                        f"{_describe(layer)} gives {rows.kind} {rows.dtype} "
                        f"rows, which feed {_describe(node.operation)}; ONNX takes dense "
                        "tensors only (for hashed_ngrams use output=\"sequence\" or "
                        "\"counts\"; ragged numeric rows with the layer's pad=)")
    for tensor in model.outputs:
        if id(tensor) in extractor_outputs:
            raise ExportError(f"{_describe(extractor_outputs[id(tensor)][0])} is a model "
                              "output; the sensor's outputs come from the ONNX graph (run "
                              "rustfx-sensor --features to see the features)")
    if not used:
        raise ExportError("no rustfx layer feeds the rest of the model: nothing to split")
    order = {id(layer): i for i, layer in enumerate(model.layers)}
    return sorted(used.values(), key=lambda pair: order.get(id(pair[0]), len(order)))


def _onnx_name(layer, taken):
    name = re.sub(r"[^A-Za-z0-9_]", "_", layer.name) or "feature"
    base, i = name, 1
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name)
    return name


def _head(model, features):
    """The model from the rustfx outputs to the model's outputs, with one
    named keras.Input per feature, called once (Keras exports called models
    only)."""
    try:
        rest = keras.Model([t for _, t in features], model.outputs)
    except ValueError as e:
        raise ExportError(f"the layers after the rustfx layers cannot be split off: {e}") from e
    taken, inputs = set(), []
    for layer, tensor in features:
        out = layer.spec.output
        # Padded ragged rows: (batch, the batch's longest), shape [None].
        inputs.append(keras.Input(shape=tuple(out["shape"]), dtype=out["dtype"],
                                  name=_onnx_name(layer, taken)))
    head = keras.Model(inputs, rest(inputs), name="rustfx_sensor_head")
    # A padded ragged input's length is the batch's: one value will do.
    head([np.zeros((1, *(d or 1 for d in i.shape[1:])), i.dtype) for i in inputs])
    return head, [i.name for i in inputs]


class _Log(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _layer_in(text, model):
    """The layer of `model` (or of a model nested in it) that a TF or ONNX
    node name like 'functional_1/dense_2_1/MatMul' belongs to."""
    names = {}

    def collect(m):
        for layer in getattr(m, "layers", []):
            names.setdefault(layer.name, layer)
            collect(layer)
    collect(model)
    for part in reversed(re.split(r"[/:\[\] ]", text)):
        candidate = part
        while candidate:
            if candidate in names:
                return names[candidate]
            stripped = re.sub(r"_\d+$", "", candidate)
            if stripped == candidate:
                break
            candidate = stripped
    return None


def _unsupported(message, model, what):
    layer = _layer_in(message, model)
    where = _describe(layer) if layer is not None else "a layer after the rustfx layers"
    return ExportError(f"{where} cannot be exported to ONNX: {what}")


def _export_onnx(head, path, model, onnx_inputs):
    """Keras's ONNX export of `head`; the loaded graph. tf2onnx logs the ops
    it cannot convert and keeps them as-is: both are refused here. It also
    turns constants a layer holds as tensors (Normalization(mean=...,
    variance=...)) into graph inputs: those become initializers again."""
    import onnx

    _register_handlers()
    log = _Log()
    logger = logging.getLogger("tf2onnx")
    logger.addHandler(log)
    try:
        head.export(path, format="onnx", verbose=False)
    except Exception as e:  # noqa: BLE001 (any failure of the converter)
        failures = [m for m in log.messages if "is not supported" in m or "rror" in m]
        raise _unsupported(" ".join(failures) or str(e), model,
                           f"{type(e).__name__}: {e}") from e
    finally:
        logger.removeHandler(log)
    proto = onnx.load(path)
    graph = proto.graph
    initialized = {t.name for t in graph.initializer}
    extra = [i for i in graph.input if i.name not in initialized and i.name not in onnx_inputs]
    if extra:
        _inline_constants(head, proto, extra, model)
        onnx.save(proto, path)
    inputs = [i.name for i in graph.input if i.name not in {t.name for t in graph.initializer}]
    if inputs != onnx_inputs:
        raise ExportError(f"the ONNX export named its inputs {inputs}, expected {onnx_inputs}")
    for node in graph.node:
        if not onnx.defs.has(node.op_type, node.domain or ""):
            raise _unsupported(node.name, model,
                               f"it needs the op {node.op_type!r} (ONNX node '{node.name}'), "
                               "which is not an ONNX op")
    return graph


def _inline_constants(head, proto, extra, model):
    """Makes the graph inputs tf2onnx made of captured constants
    initializers, with the values the traced function captured (the same
    trace as Keras's export, so the same names)."""
    from onnx import numpy_helper
    import tensorflow as tf
    try:
        from keras.src.export.onnx import get_concrete_fn
        signature = [[tf.TensorSpec(i.shape, i.dtype, name=i.name) for i in head.inputs]]
        function = get_concrete_fn(head, signature).get_concrete_function(*signature)
        captured = function.inputs[len(function.inputs) - len(function.captured_inputs):]
        values = {t.name: v for t, v in zip(captured, function.captured_inputs)
                  if t.dtype != tf.resource}
    except Exception:  # noqa: BLE001 (a Keras without this helper: refused below)
        values = {}
    for graph_input in extra:
        value = values.get(graph_input.name)
        if value is None:
            raise _unsupported(graph_input.name, model,
                               f"the ONNX export made an input of '{graph_input.name}' "
                               "and its value could not be found")
        proto.graph.initializer.append(numpy_helper.from_array(np.asarray(value),
                                                                graph_input.name))
        proto.graph.input.remove(graph_input)


_HANDLERS = []


def _register_handlers():
    """tf2onnx handlers for TF ops it lacks and Keras models use: `Log1p`
    (`log1p` of counts, as in the demo and the EMBER example), converted to
    Goldberg's log(u) * x / (u - 1), u = 1 + x, accurate to a few ulps
    (plain Log(1 + x) loses the low bits of small x, which a Normalization
    after it amplifies). Registered once."""
    if _HANDLERS:
        return
    from tf2onnx import utils
    from tf2onnx.handler import tf_op

    @tf_op("Log1p")
    class Log1p:
        @classmethod
        def version_1(cls, ctx, node, **kwargs):
            dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(node.output[0]))
            one = utils.make_name(f"{node.name}_one")
            ctx.make_const(one, np.array(1, dtype=dtype))
            zero = utils.make_name(f"{node.name}_zero")
            ctx.make_const(zero, np.array(0, dtype=dtype))
            x, shapes, dtypes = node.input[0], node.output_shapes, node.output_dtypes
            ctx.remove_node(node.name)
            # log1p(x) = log(u) * x / (u - 1) with u = 1 + x, and x where
            # u == 1: the rounding of 1 + x cancels out (Goldberg's trick).
            u = ctx.make_node("Add", [x, one]).output[0]
            u_minus_one = ctx.make_node("Sub", [u, one]).output[0]
            ratio = ctx.make_node("Div", [x, u_minus_one]).output[0]
            log = ctx.make_node("Mul", [ctx.make_node("Log", [u]).output[0], ratio]).output[0]
            exact = ctx.make_node("Equal", [u_minus_one, zero]).output[0]
            ctx.make_node("Where", [exact, x, log], outputs=[node.output[0]],
                          shapes=shapes, dtypes=dtypes)

    _HANDLERS.append(Log1p)
