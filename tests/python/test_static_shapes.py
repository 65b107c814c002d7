"""Static shapes in graphs: what each spec implies, set by the Python
wrappers, whatever the ops' shape functions know.

The ops' shape functions cannot read the `spec` attr (TensorFlow's C kernel
API gives a shape function no string attrs), so they know only
input.shape + [None] (dense), [None] values and row splits (ragged) and
[None, 2] / [None] / [2] (sparse). rustfx.extract sets the rest from the
spec: dense, contents.shape + [width]; ragged, contents.shape + [None] (a
1-D tensor for a rank-0 input); sparse, contents.shape + [width]. Every
test runs twice: on the ops as built, and on ops whose outputs are loosened
to what those shape functions give ("unknown"), so the wrappers alone
must give the shapes.
"""

import keras
import pytest
import tensorflow as tf

import rustfx
import rustfx.spec

REGISTRY = rustfx.registry()
EXAMPLES = [(name, i, params) for name, entry in REGISTRY.items()
            for i, params in enumerate(entry["examples"])]
EXAMPLE_IDS = [f"{name}-{i}" for name, i, _ in EXAMPLES]
INPUT_SHAPES = [[None], [2, 3], []]


def loose(tensor, shape):
    """`tensor`, its static shape only `shape`."""
    return tf.compat.v1.placeholder_with_default(tensor, shape)


class LooseOps:
    """The op library, with each extractor op's static output shapes the
    least its shape function will know (its outputs pass through
    placeholder_with_default, which keeps the values)."""

    def __init__(self, ops):
        self._ops = ops

    def __getattr__(self, name):
        return getattr(self._ops, name)

    def Rustfx_DenseRows(self, input, **attrs):  # noqa: A002,N802 (the op's names)
        rows = self._ops.Rustfx_DenseRows(input=input, **attrs)
        return loose(rows, input.shape.concatenate([None]))

    def _ragged(self, op, attrs):
        values, splits = op(**attrs)
        return loose(values, [None]), loose(splits, [None])

    def Rustfx_Ragged(self, **attrs):  # noqa: N802
        return self._ragged(self._ops.Rustfx_Ragged, attrs)

    def Rustfx_SparseRows(self, **attrs):  # noqa: N802
        indices, values, dense_shape = self._ops.Rustfx_SparseRows(**attrs)
        return loose(indices, [None, 2]), loose(values, [None]), loose(dense_shape, [2])


@pytest.fixture(params=["built", "unknown"])
def op_shapes(request, monkeypatch):
    if request.param == "unknown":
        monkeypatch.setattr(rustfx.spec, "ops", LooseOps(rustfx.spec.ops))
    return request.param


def expected(spec, input_shape):
    """(static shape, dtype, Python type) of extract(spec, input)."""
    out = spec.output
    dtype = tf.as_dtype(out["dtype"])
    if out["kind"] == "dense":
        return input_shape + out["shape"], dtype, tf.Tensor
    if out["kind"] == "sparse":
        return input_shape + out["shape"], dtype, tf.SparseTensor
    return input_shape + [None], dtype, tf.RaggedTensor if input_shape else tf.Tensor


def traced_output(spec, input_shape, files=False):
    """extract(spec, x) as traced for x: TensorSpec(input_shape, tf.string)."""
    seen = []

    @tf.function(input_signature=[tf.TensorSpec(input_shape, tf.string)])
    def run(x):
        out = rustfx.extract(spec, rustfx.files(x) if files else x)
        seen.append(out)
        return out
    run.get_concrete_function()
    return seen[0]


@pytest.mark.parametrize("input_shape", INPUT_SHAPES, ids=str)
@pytest.mark.parametrize("name,i,params", EXAMPLES, ids=EXAMPLE_IDS)
def test_every_example_has_its_specs_static_shape(name, i, params, input_shape, op_shapes):
    spec = rustfx.FeatureSpec(name, **params)
    shape, dtype, kind = expected(spec, input_shape)
    for files in (False, True):
        out = traced_output(spec, input_shape, files=files)
        assert isinstance(out, kind), (files, type(out))
        assert out.shape.as_list() == shape, files
        assert out.dtype == dtype, files


def test_the_loose_ops_do_lose_the_shapes(monkeypatch):
    """The "unknown" runs test something: without the wrappers' shapes, a
    dense output would have no width."""
    monkeypatch.setattr(rustfx.spec, "ops", LooseOps(rustfx.spec.ops))

    @tf.function(input_signature=[tf.TensorSpec([2, 3], tf.string)])
    def run(x):
        rows = rustfx.spec.ops.Rustfx_DenseRows(
            input=x, spec=rustfx.FeatureSpec("byte_histogram").to_json(), Tout=tf.float32)
        assert rows.shape.as_list() == [2, 3, None]
        values, splits = rustfx.spec.ops.Rustfx_Ragged(
            input=x, spec=rustfx.FeatureSpec(
                "hashed_ngrams", num_buckets=64, ngram_widths=[1]).to_json(), Tout=tf.int64)
        assert splits.shape.as_list() == [None]
        return rows
    run.get_concrete_function()


def test_the_wrapper_functions_have_the_shapes_too(op_shapes):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def run(x):
        assert rustfx.byte_histogram(x).shape.as_list() == [None, 256]
        assert rustfx.hashed_ngrams(x, num_buckets=64).shape.as_list() == [None, None]
        return x
    run.get_concrete_function()


def test_a_keras_input_through_a_layer_has_the_specs_shape(op_shapes):
    inputs = keras.Input(shape=(), dtype="string")
    outputs = rustfx.layers.ByteHistogram()(inputs)
    assert tuple(outputs.shape) == (None, 256)
    assert outputs.dtype == "float32"
    # The model traced in a graph has it too.
    model = keras.Model(inputs, outputs)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def run(x):
        out = model(x)
        assert out.shape.as_list() == [None, 256]
        return out
    run.get_concrete_function()
