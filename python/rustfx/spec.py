"""FeatureSpec in TensorFlow: rustfx.extract(spec, contents) runs it as an op.

FeatureSpec, registry() and the rules (the core's, through its C ABI) are
rustfx_core's (rustfx_core.spec): this module adds only what needs
TensorFlow, a refusal raised as tf.errors.InvalidArgumentError, and the
op that runs a spec.

    spec = rustfx.FeatureSpec("byte_entropy_histogram", window=1024)
    spec.to_json()    # '{"extractor":"byte_entropy_histogram",...}'
    features = rustfx.extract(spec, contents)   # = byte_entropy_histogram(...)

Every extractor op carries its spec as its `spec` attr, so a SavedModel
holds the spec of each extractor it runs, and a Keras layer's config *is*
its spec, so a `.keras` file holds it too. A spec made by a rustfx whose
output version of that extractor differs from this one's is refused when
it is loaded (FeatureSpec.from_json, a layer's from_config, a SavedModel's
ops): its features are not this build's.
"""

import tensorflow as tf

import rustfx_core
from rustfx._common import documents, invalid, no_autograph, ops
from rustfx_core import RowsVisitor, registry

__all__ = ["FeatureSpec", "extract", "registry"]


class FeatureSpec(rustfx_core.FeatureSpec):
    """One extractor call as data: FeatureSpec(extractor, **params), or
    FeatureSpec.from_json(text, dict or a rustfx_core.FeatureSpec). Checked
    and completed by the core; immutable; equal specs have equal
    to_json(). rustfx_core.FeatureSpec, refusing with
    tf.errors.InvalidArgumentError (the core's message)."""

    __slots__ = ()
    refusal = staticmethod(invalid)


@no_autograph
def extract(spec, contents, *, name=None):
    """The features `spec` describes, of `contents` (a tf.string tensor of
    any shape, or rustfx.files(paths)). `spec`: a FeatureSpec, its JSON
    text or dict. Output by the spec's kind: dense, contents.shape +
    [width]; ragged, a RaggedTensor contents.shape + [None] (a rank-0 input
    gives a 1-D tensor); sparse, a tf.SparseTensor contents.shape + [width].
    """
    return extract_spec(spec, contents, name)


def extract_spec(spec, contents, name=None):
    """extract() without its AutoGraph wrapper, for the wrappers (already
    wrapped) to call: a wrapper layer costs ~15 us a call.

    The static shapes are set here, from the spec: the ops' shape functions
    cannot read the spec attr, so they know only contents.shape + [None]
    (dense), [None] values and row splits (ragged, sparse)."""
    if not isinstance(spec, rustfx_core.FeatureSpec):
        spec = FeatureSpec.from_json(spec)
    contents, source = documents(contents)
    attrs = dict(input=contents, spec=spec.to_json(), **source)
    return spec.rows.accept(_OPS, spec, contents, attrs, name)


class _Ops(RowsVisitor):
    """The op of each output kind, and its output as a tensor of
    contents.shape + [width or None]."""

    def dense(self, rows, spec, contents, attrs, name):
        # A DType, not its name: the op's eager fast path takes only that.
        out = ops.Rustfx_DenseRows(Tout=tf.as_dtype(rows.dtype), name=name, **attrs)
        if not tf.executing_eagerly():  # an eager tensor's shape is already whole
            out.set_shape(contents.shape.concatenate([rows.width]))
        return out

    def ragged(self, rows, spec, contents, attrs, name):
        # One op for every dtype (Tout), strings included.
        with tf.name_scope(name or spec.extractor):
            values, splits = ops.Rustfx_Ragged(Tout=tf.as_dtype(rows.dtype), **attrs)
            return _ragged(values, splits, contents)

    def strings(self, rows, spec, contents, attrs, name):
        return self.ragged(rows, spec, contents, attrs, name)

    def sparse(self, rows, spec, contents, attrs, name):
        with tf.name_scope(name or spec.extractor):
            indices, values, dense_shape = ops.Rustfx_SparseRows(**attrs)
            flat = tf.SparseTensor(indices, values, dense_shape)
            if contents.shape.rank != 1:
                shape = tf.concat([tf.shape(contents, out_type=tf.int64),
                                   [tf.constant(rows.width, tf.int64)]], axis=0)
                flat = tf.sparse.reshape(flat, shape)
            # The static shape too, so Keras layers (Dense) can follow directly.
            flat.set_shape(contents.shape.concatenate([rows.width]))
            return flat


_OPS = _Ops()


def _ragged(values, splits, contents):
    """Rebuilds contents.shape + [None] from rows over the flattened input,
    with every static dimension contents has."""
    rank = contents.shape.rank
    if rank == 0:
        return values
    n = contents.shape.num_elements()
    if n is not None and not tf.executing_eagerly():
        splits.set_shape([n + 1])
    ragged = tf.RaggedTensor.from_row_splits(values, splits, validate=False)
    dims = tf.shape(contents, out_type=tf.int64)
    for axis in range(rank - 1, 0, -1):
        length = contents.shape[axis]
        ragged = tf.RaggedTensor.from_uniform_row_length(
            ragged, dims[axis] if length is None else tf.constant(length, tf.int64),
            validate=False)
    return ragged
