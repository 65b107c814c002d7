"""Keras 3 layers (TensorFlow backend), one per extractor of the core's
registry, made from it (rustfx.registry()): a new extractor gets its layer
with no code here.

Each layer calls the rustfx function of the same name, so its output equals
that function's, bit for bit, eagerly, in `ds.map(layer)` and inside a
model. Like `keras.layers.Hashing` and `TextVectorization`, the layers are
stateless preprocessing: the constructor takes the function's keywords (or
`spec=`, a rustfx.FeatureSpec of the same extractor), `get_config()` holds
the layer's FeatureSpec under "spec" (so `.keras` files carry it, output
version included), and the layers are registered with Keras as
"rustfx>ClassName". Loading a layer whose spec has another output version
than this rustfx's fails, naming the extractor and both versions.

    inputs = keras.Input(shape=(), dtype="string")       # a batch of raw bytes
    ids = rustfx.layers.HashedNgrams(num_buckets=2**18, ngram_widths=(1, 2),
                                     tokenizer="word", output="sequence",
                                     max_tokens=512, pad_value=2**18)(inputs)
    bytes_ = rustfx.layers.ByteHistogram()(inputs)

Saving: a model with these layers saves as `.keras` (`model.save`) and as a
SavedModel (`model.export`); both load only in a process that has run
`import rustfx`, which registers the ops (SavedModel) and these classes
(`.keras`). Without it, loading fails with "Op type not registered" or
"Could not locate class".

Every extractor layer also takes `files`: None (the default; the input is
contents) or a dict of `rustfx.files` keywords (`{}` for its defaults,
`dict(max_bytes=2**20, on_error="empty")`): the input is then paths, and
the layer's op reads the files itself, exactly as
`layer(rustfx.read_files(paths, **files))` would give.

Layers of ragged numeric rows (hashed_ngrams' ids, byte_sequence with
output="ragged") also take `pad`: None (the default; a ragged output) or a
number: each batch is then padded to its longest row with it (the
RaggedTensor's `.to_tensor(pad)`), a dense tensor of shape (batch, None)
that Embedding and Conv1D layers take. This is how MalConv2 feeds its
network: `ByteSequence(preset="malconv2", dtype="int16", output="ragged",
pad=0)` holds each file at 2 bytes per byte, padded only to the batch's
longest file (python/demo/train_malconv2.py).

Parameter errors are the op's own: each constructor runs its op once,
eagerly, on an empty batch, so a bad value raises the op's
`tf.errors.InvalidArgumentError` (with the message the function gives) when
the layer is created, not when the model is first called.

The ops are TensorFlow ops on the CPU with no XLA kernel: the layers set
`supports_jit = False` (so `jit_compile="auto"` does not compile a model
containing them), and need the TensorFlow backend inside a model; in a
`tf.data` pipeline they work whatever the backend.
"""

import keras
import tensorflow as tf

from rustfx import cached, io
from rustfx.spec import FeatureSpec, extract, registry

_register = keras.saving.register_keras_serializable(package="rustfx")


class ExtractorLayer(keras.layers.Layer):
    """A stateless layer running one FeatureSpec. Subclasses (made from
    the registry below) set `extractor`, the registry name. Public for the
    modules that find these layers in a model (rustfx.explain_model,
    rustfx.sensor): `spec`, `files` (None, or the rustfx.files keywords the
    layer reads its paths with), `pad`, `cache`, and `extract`, what
    `call` runs."""

    extractor = None

    def __init__(self, *args, spec=None, files=None, pad=None, cache=None, **kwargs):
        names = [p["name"] for p in registry()[self.extractor]["params"]]
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes at most {len(names)} "
                            f"positional parameters ({', '.join(names)})")
        params = dict(zip(names, args))
        # With spec= (a saved layer's config), the keywords are Keras's own:
        # its "dtype" policy is not byte_sequence's `dtype` parameter.
        for name in names if spec is None else ():
            if name in kwargs:
                params[name] = kwargs.pop(name)
        if spec is not None:
            if params:
                raise TypeError("give either spec= or the extractor's parameters, not both")
            spec = FeatureSpec.from_json(spec)
            if spec.extractor != self.extractor:
                raise TypeError(f"{type(self).__name__} runs {self.extractor}, "
                                f"got a spec of {spec.extractor}")
        else:
            spec = FeatureSpec(self.extractor, **params)
        if files is not None and not isinstance(files, dict):
            raise TypeError("files must be None or a dict of rustfx.files keywords "
                            f"(max_bytes, on_error), got {files!r}")
        if cache is not None:
            if files is None:
                raise TypeError("cache= is for a layer whose inputs are paths: give files= too "
                                "(files={} for rustfx.files' defaults)")
            cached.check(cache)
        rows = spec.rows
        if pad is not None and not (rows.ragged and rows.dtype != "string"):
            raise TypeError(f"pad is for ragged numeric rows; {spec.extractor} with these "
                            f"parameters gives {rows.kind} {rows.dtype} rows")
        super().__init__(**kwargs)
        self.spec = spec
        self.pad = pad
        self.files = None if files is None else dict(files)
        # Not in the config: a directory of this machine. A model saved with
        # it serves without it (rustfx/cached.py); set it to None before
        # exporting to keep the directory out of the SavedModel.
        self.cache = cache
        self.supports_jit = False
        # Inputs are strings: no float conversion, and Python lists of bytes
        # are accepted when called eagerly.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True
        with tf.init_scope():
            self.extract(tf.constant([], tf.string))

    def extract(self, inputs):
        with tf.device("CPU:0"):
            inputs = tf.convert_to_tensor(inputs)
            if self.files is not None:
                inputs = io.files(inputs, **self.files, cache=self.cache)
            out = extract(self.spec, inputs)
            if self.pad is not None:
                out = out.to_tensor(default_value=tf.cast(self.pad, out.dtype))
            return out

    def call(self, inputs):
        return self.extract(inputs)

    def compute_output_spec(self, inputs):
        rows = self.spec.rows
        return keras.KerasTensor(tuple(inputs.shape) + (rows.width,), dtype=rows.dtype,
                                 sparse=rows.sparse,
                                 ragged=rows.ragged and self.pad is None)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.spec.rows.width,)

    def get_config(self):
        config = {**super().get_config(), "spec": self.spec.to_dict()}
        if self.pad is not None:
            config["pad"] = self.pad
        if self.files is not None:
            config["files"] = dict(self.files)
        return config


def class_name(extractor):
    """The layer class of an extractor: "byte_histogram" -> "ByteHistogram"."""
    return "".join(part[:1].upper() + part[1:] for part in extractor.split("_"))


def _make_layer(entry):
    name = class_name(entry["name"])
    doc = (f"`rustfx.{entry['name']}` as a layer: {entry['doc']}.\n\n"
           f"Takes the function's keywords ({', '.join(p['name'] for p in entry['params']) or 'none'}) "
           "or spec=, and files= (and cache=, a rustfx.FeatureCache, with files=).")
    cls = type(name, (ExtractorLayer,), {"extractor": entry["name"], "__doc__": doc,
                                     "__module__": __name__, "__qualname__": name})
    return _register(cls)


_LAYERS = {class_name(name): _make_layer(entry) for name, entry in registry().items()}
globals().update(_LAYERS)


@_register
class ReadFiles(keras.layers.Layer):
    """`rustfx.read_files`: paths -> contents (string, the shape of paths).

    `with_status` is not offered: a layer gives one tensor; call
    `rustfx.read_files(..., with_status=True)` to see which reads failed.
    A model that reads files opens paths of the machine it runs on: put
    this layer in the input pipeline rather than in a served model.
    """

    def __init__(self, max_bytes=io.DEFAULT_MAX_BYTES, on_error="raise", **kwargs):
        if kwargs.get("files") is not None:
            raise TypeError("ReadFiles reads its input's files already; "
                            "files= is for the extractor layers")
        kwargs.pop("files", None)
        super().__init__(**kwargs)
        self._read = dict(max_bytes=max_bytes, on_error=on_error)
        self.supports_jit = False
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True
        with tf.init_scope():
            self.call(tf.constant([], tf.string))

    def call(self, inputs):
        with tf.device("CPU:0"):
            # read_files takes str paths by their bytes (os.fsencode).
            return io.read_files(inputs, **self._read)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(tuple(inputs.shape), dtype="string")

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), **self._read}


__all__ = [*_LAYERS, "ReadFiles"]
