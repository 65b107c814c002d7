"""FeatureSpec: what an extractor computes, as data that travels.

A spec names an extractor, gives every parameter (defaults filled in) and
states its output and its output version. The Rust core owns the rules:
this module asks it (through its C ABI, rustfx_core._abi) to check and
complete each spec, so Python, the ops, `rustfx-features --spec` and the
Rust API accept and refuse exactly the same specs, with the same messages.

    spec = rustfx_core.FeatureSpec("byte_entropy_histogram", window=1024)
    spec.to_json()    # '{"extractor":"byte_entropy_histogram",...}'
    spec.rows         # DenseRows('float32', width=256): how its rows look

No TensorFlow here: a refusal is a ValueError with the core's message.
rustfx.FeatureSpec is this class with TensorFlow's InvalidArgumentError
instead (its `refusal`), and either is accepted wherever a spec is. A
spec made by a rustfx whose output version of that extractor differs from
this one's is refused when it is loaded: its features are not this
build's.
"""

import functools
import json

from rustfx_core import _abi
from rustfx_core.outputs import rows_of

__all__ = ["FeatureSpec", "registry"]


@functools.lru_cache(maxsize=None)
def _registry_text():
    return _abi.spec_query("registry")[0]


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
    raise ValueError(f"a spec parameter must be JSON (int, bool, str, list, None), "
                     f"got {value!r}")


def _dumps(obj):
    return json.dumps(obj, sort_keys=True, default=_plain)


@functools.lru_cache(maxsize=4096)
def _canonical(text):
    """The core's canonical JSON of a spec (ValueError if it refuses)."""
    return _abi.spec_query("spec", text)[0]


# Specs built from arguments, by (extractor, params with their types).
_BUILT = {}


class FeatureSpec:
    """One extractor call as data: FeatureSpec(extractor, **params), or
    FeatureSpec.from_json(text or dict). Checked and completed by the core;
    immutable; equal specs have equal to_json()."""

    __slots__ = ("_json", "_dict", "_rows")

    #: The exception of a refusal, from the core's message (rustfx.spec's
    #: subclass makes it TensorFlow's InvalidArgumentError).
    refusal = ValueError

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
            try:
                canonical = _canonical(_dumps({"extractor": extractor, "params": params}))
            except ValueError as e:
                raise self.refusal(str(e)) from None
            cached = (canonical, json.loads(canonical))
            if key is not None and len(_BUILT) < 4096:
                _BUILT[key] = cached
        self._json, self._dict = cached
        self._rows = None

    @classmethod
    def from_json(cls, spec):
        """A spec from its JSON text, a dict of it, or a FeatureSpec."""
        if isinstance(spec, cls):
            return spec
        self = cls.__new__(cls)
        self._rows = None
        if isinstance(spec, FeatureSpec):  # rustfx_core's and rustfx's: already checked
            self._json, self._dict = spec._json, spec._dict
            return self
        try:
            if isinstance(spec, dict):
                spec = _dumps(spec)
            if not isinstance(spec, str):
                raise ValueError(f"a feature spec is JSON text or a dict, got "
                                 f"{type(spec).__name__}")
            self._json = _canonical(spec)
        except ValueError as e:
            raise cls.refusal(str(e)) from None
        self._dict = json.loads(self._json)
        return self

    from_dict = from_json

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

    @property
    def rows(self):
        """How its rows look: a rustfx_core.outputs.Rows (DenseRows,
        RaggedRows, StringRows or SparseRows), with the dtype and width."""
        if self._rows is None:
            self._rows = rows_of(self._dict["output"])
        return self._rows

    def to_json(self):
        """The canonical JSON text (one line, keys sorted)."""
        return self._json

    def to_dict(self):
        return json.loads(self._json)

    def feature_names(self):
        """The name of each value of a row, for the extractors that name
        them (general_file_info, ember_features)."""
        try:
            return _abi.spec_query("feature_names", self._json)
        except ValueError as e:
            raise self.refusal(str(e)) from None

    def __eq__(self, other):
        return isinstance(other, FeatureSpec) and other._json == self._json

    def __hash__(self):
        return hash(self._json)

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self._dict["params"].items())
        return f"FeatureSpec({self.extractor!r}{', ' if params else ''}{params})"
