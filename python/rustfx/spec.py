"""FeatureSpec: what an extractor computes, as data that travels.

A spec names an extractor, gives every parameter (defaults filled in) and
states its output and its output version. The Rust core owns the rules:
this module asks it (through its C ABI, rustfx._core) to check and
complete each spec, so Python, the ops, `rustfx-features --spec` and the
Rust API accept and refuse exactly the same specs, with the same messages.

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

import functools
import json

import tensorflow as tf

from rustfx import _core
from rustfx._common import documents, invalid, no_autograph, ops

__all__ = ["FeatureSpec", "extract", "registry"]


def _ask(query, spec=""):
    """The core's answer (rustfx's spec::query, through the C ABI: no op
    runs, so this works the same eagerly, in a tf.function being traced or
    in a tf.Graph); a refusal is InvalidArgumentError with the core's
    message."""
    try:
        return _core.spec_query(query, spec)
    except ValueError as e:
        raise invalid(str(e)) from None


@functools.lru_cache(maxsize=None)
def _registry_text():
    return _ask("registry")[0]


def registry():
    """Every extractor of the core's registry, by name: {"name",
    "output_version", "doc", "params": [{"name", "type", "default",
    "required", "names", "doc"}], "examples": [params, ...]}. A new dict on
    each call."""
    return {entry["name"]: entry for entry in json.loads(_registry_text())}


def _plain(value):
    """numpy scalars and arrays (and eager tensors) as plain JSON values."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (tuple, range)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode()
    raise invalid(f"a spec parameter must be JSON (int, bool, str, list, None), got {value!r}")


def _dumps(obj):
    return json.dumps(obj, sort_keys=True, default=_plain)


@functools.lru_cache(maxsize=4096)
def _canonical(text):
    return _ask("spec", text)[0]


_BUILT = {}


class FeatureSpec:
    """One extractor call as data: FeatureSpec(extractor, **params), or
    FeatureSpec.from_json(text or dict). Checked and completed by the core;
    immutable; equal specs have equal to_json()."""

    __slots__ = ("_json", "_dict")

    def __init__(self, extractor, **params):
        # The wrappers build a spec on every call: a built spec is reused
        # for the same arguments (keyed with their types, so 1 and True
        # differ), which keeps a call's Python cost near the op's.
        try:
            key = (extractor, tuple(sorted(
                (k, type(v), tuple(v) if isinstance(v, list) else v)
                for k, v in params.items())))
            cached = _BUILT.get(key)
        except TypeError:  # an unhashable value (a numpy array): no reuse
            key = cached = None
        if cached is None:
            canonical = _canonical(_dumps({"extractor": extractor, "params": params}))
            cached = (canonical, json.loads(canonical))
            if key is not None and len(_BUILT) < 4096:
                _BUILT[key] = cached
        self._json, self._dict = cached

    @classmethod
    def from_json(cls, spec):
        """A spec from its JSON text, a dict of it, or a FeatureSpec."""
        if isinstance(spec, FeatureSpec):
            return spec
        if isinstance(spec, dict):
            spec = _dumps(spec)
        if not isinstance(spec, str):
            raise invalid(f"a feature spec is JSON text or a dict, got {type(spec).__name__}")
        self = cls.__new__(cls)
        self._set(_canonical(spec))
        return self

    from_dict = from_json

    def _set(self, canonical):
        self._json = canonical
        self._dict = json.loads(canonical)

    @property
    def extractor(self):
        return self._dict["extractor"]

    @property
    def params(self):
        """Every parameter, defaults filled in (a new dict)."""
        return dict(self._dict["params"])

    @property
    def output_version(self):
        return self._dict["output_version"]

    @property
    def output(self):
        """{"kind": "dense" | "ragged" | "sparse", "dtype", "shape": [width or None]}."""
        return dict(self._dict["output"])

    def to_json(self):
        """The canonical JSON text (one line, keys sorted)."""
        return self._json

    def to_dict(self):
        return json.loads(self._json)

    def feature_names(self):
        """The name of each value of a row, for the extractors that name
        them (general_file_info, ember_features)."""
        return _ask("feature_names", self._json)

    def __eq__(self, other):
        return isinstance(other, FeatureSpec) and other._json == self._json

    def __hash__(self):
        return hash(self._json)

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self._dict["params"].items())
        return f"FeatureSpec({self.extractor!r}{', ' if params else ''}{params})"


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
    if not isinstance(spec, FeatureSpec):
        spec = FeatureSpec.from_json(spec)
    contents, source = documents(contents)
    out = spec._dict["output"]
    attrs = dict(input=contents, spec=spec._json, **source)
    if out["kind"] == "dense":
        # A DType, not its name: the op's eager fast path takes only that.
        rows = ops.Rustfx_DenseRows(Tout=tf.as_dtype(out["dtype"]), name=name, **attrs)
        if not tf.executing_eagerly():  # an eager tensor's shape is already whole
            rows.set_shape(contents.shape.concatenate(out["shape"]))
        return rows
    with tf.name_scope(name or spec.extractor):
        if out["kind"] == "ragged":
            op = ops.Rustfx_RaggedStrings if out["dtype"] == "string" else ops.Rustfx_RaggedIds
            values, splits = op(**attrs)
            return _ragged(values, splits, contents)
        width = out["shape"][0]
        indices, values, dense_shape = ops.Rustfx_SparseRows(**attrs)
        flat = tf.SparseTensor(indices, values, dense_shape)
        if contents.shape.rank != 1:
            shape = tf.concat([tf.shape(contents, out_type=tf.int64),
                               [tf.constant(width, tf.int64)]], axis=0)
            flat = tf.sparse.reshape(flat, shape)
        # The static shape too, so Keras layers (Dense) can follow directly.
        flat.set_shape(contents.shape.concatenate([width]))
        return flat


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
