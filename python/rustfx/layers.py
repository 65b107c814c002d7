"""Keras 3 layers (TensorFlow backend), one per rustfx extractor.

Each layer calls the rustfx function of the same name, so its output equals
that function's, bit for bit, eagerly, in `ds.map(layer)` and inside a
model. Like `keras.layers.Hashing` and `TextVectorization`, the layers are
stateless preprocessing: the constructor takes the function's keywords,
`get_config` / `from_config` round-trip them, and the layers are registered
with Keras as "rustfx>ClassName".

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

from rustfx import binary, io, text

__all__ = ["HashedNgrams", "ByteHistogram", "ByteEntropyHistogram",
           "StringFeatures", "GeneralFileInfo", "Ember2024StringFeatures",
           "EmberFeatures",
           "ByteSequence", "ReadFiles"]

_register = keras.saving.register_keras_serializable(package="rustfx")


class _Extractor(keras.layers.Layer):
    """A stateless layer calling one rustfx function with fixed keywords.

    Subclasses pass the function's keywords to `__init__` (they are the
    layer's config) and define `_output_spec()` -> (dims the output adds
    to the input's shape, dtype, kind), kind being "dense", "sparse" or
    "ragged".
    """

    _function = None

    def __init__(self, fx_config, files=None, **kwargs):
        super().__init__(**kwargs)
        self._fx_config = dict(fx_config)
        if files is not None and not isinstance(files, dict):
            raise TypeError("files must be None or a dict of rustfx.files keywords "
                            f"(max_bytes, on_error), got {files!r}")
        self._files = None if files is None else dict(files)
        self.supports_jit = False
        # Inputs are strings: no float conversion, and Python lists of bytes
        # are accepted when called eagerly.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True
        with tf.init_scope():
            self._extract(tf.constant([], tf.string))

    def _extract(self, inputs):
        with tf.device("CPU:0"):
            inputs = tf.convert_to_tensor(inputs)
            if self._files is not None:
                inputs = io.files(inputs, **self._files)
            return type(self)._function(inputs, **self._fx_config)

    def call(self, inputs):
        return self._extract(inputs)

    def compute_output_spec(self, inputs):
        dims, dtype, kind = self._output_spec()
        return keras.KerasTensor(tuple(inputs.shape) + dims, dtype=dtype,
                                 sparse=kind == "sparse",
                                 ragged=kind == "ragged")

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + self._output_spec()[0]

    def get_config(self):
        config = {**super().get_config(), **self._fx_config}
        if self._files is not None:
            config["files"] = dict(self._files)
        return config


@_register
class HashedNgrams(_Extractor):
    """`rustfx.hashed_ngrams` as a layer; same keywords, same output.

    Output for input shape S (in a model, S = (batch,)); all four work
    eagerly, in tf.data, in a functional model, in `.keras` files and in
    `model.export` signatures:
      - "sequence": int64 S + (max_tokens,), padded with pad_value. The usual
        choice in a model: `Embedding(num_buckets + 1, ...)` after it, with
        pad_value=num_buckets.
      - "counts": float32 S + (num_buckets,), bag of n-grams.
      - "sparse": the same as a tf.SparseTensor (a KerasTensor with
        sparse=True, static shape S + (num_buckets,)); `Dense` takes it as
        is, so a large num_buckets needs no dense rows.
      - "ragged": int64 tf.RaggedTensor S + (None,) (a KerasTensor with
        ragged=True). Natural in tf.data (`.padded_batch` / `.to_tensor()`);
        in a model most built-in Keras layers do not take ragged input, so
        use "sequence" there unless your own layer consumes it.
    Composite outputs (sparse, ragged) as *model outputs* export as
    composite signature outputs, which `tf.saved_model.load` handles but
    non-Python servers may not: a served model should end in dense tensors.
    """

    _function = staticmethod(text.hashed_ngrams)

    def __init__(self, num_buckets, ngram_widths=(1,), tokenizer="whitespace",
                 lowercase=False, hash="fingerprint64", output="ragged",
                 max_tokens=None, pad_value=-1, binary=False,
                 alternate_sign=False, norm=None, **kwargs):
        super().__init__(dict(
            num_buckets=num_buckets, ngram_widths=list(ngram_widths),
            tokenizer=tokenizer, lowercase=lowercase, hash=hash,
            output=output, max_tokens=max_tokens, pad_value=pad_value,
            binary=binary, alternate_sign=alternate_sign, norm=norm), **kwargs)

    def _extract(self, inputs):
        outputs = super()._extract(inputs)
        if isinstance(outputs, tf.SparseTensor):
            # The op's dense_shape is a tensor; give Keras the static width.
            outputs.set_shape(outputs.shape[:-1].concatenate(
                [self._fx_config["num_buckets"]]))
        return outputs

    def _output_spec(self):
        config = self._fx_config
        output = config["output"]
        if output == "sequence":
            return (config["max_tokens"],), "int64", "dense"
        if output == "ragged":
            return (None,), "int64", "ragged"
        return (config["num_buckets"],), "float32", output.replace(
            "counts", "dense")


@_register
class ByteHistogram(_Extractor):
    """`rustfx.byte_histogram`: float32 S + (256,)."""

    _function = staticmethod(binary.byte_histogram)

    def __init__(self, empty="zeros", **kwargs):
        super().__init__(dict(empty=empty), **kwargs)

    def _output_spec(self):
        return (256,), "float32", "dense"


@_register
class ByteEntropyHistogram(_Extractor):
    """`rustfx.byte_entropy_histogram`: float32 S + (256,)."""

    _function = staticmethod(binary.byte_entropy_histogram)

    def __init__(self, window=2048, step=1024, empty="zeros", **kwargs):
        super().__init__(dict(window=window, step=step, empty=empty), **kwargs)

    def _output_spec(self):
        return (256,), "float32", "dense"


@_register
class StringFeatures(_Extractor):
    """`rustfx.string_features`: float32 S + (104,), EMBER's order."""

    _function = staticmethod(binary.string_features)

    def __init__(self, **kwargs):
        super().__init__({}, **kwargs)

    def _output_spec(self):
        return (104,), "float32", "dense"


@_register
class GeneralFileInfo(_Extractor):
    """`rustfx.general_file_info`: float32 S + (6,), EMBER2024's general
    group without is_pe."""

    _function = staticmethod(binary.general_file_info)

    def __init__(self, **kwargs):
        super().__init__({}, **kwargs)

    def _output_spec(self):
        return (6,), "float32", "dense"


@_register
class Ember2024StringFeatures(_Extractor):
    """`rustfx.ember2024_string_features`: float32 S + (177,), EMBER2024's
    strings group."""

    _function = staticmethod(binary.ember2024_string_features)

    def __init__(self, **kwargs):
        super().__init__({}, **kwargs)

    def _output_spec(self):
        return (177,), "float32", "dense"


@_register
class EmberFeatures(_Extractor):
    """`rustfx.ember_features`: float32 S + (width,), EMBER2024 (thrember,
    feature version 3) vectors: 2568 values, or the named groups only."""

    _function = staticmethod(binary.ember_features)

    def __init__(self, feature_version=3, groups=None, **kwargs):
        super().__init__(dict(feature_version=feature_version,
                              groups=list(groups or [])), **kwargs)
        # The width comes from the core (via the names op), not a copy here.
        self._width = len(binary.ember_feature_names(
            feature_version=feature_version, groups=groups))

    def _output_spec(self):
        return (self._width,), "float32", "dense"


@_register
class ByteSequence(_Extractor):
    """`rustfx.byte_sequence`: int32 S + (max_len,). Parameters left None
    come from `preset` (see rustfx.BYTE_SEQUENCE_PRESETS) and stay None in
    the config, as in the function."""

    _function = staticmethod(binary.byte_sequence)

    def __init__(self, max_len=None, preset="ember", shift=None,
                 pad_value=None, sampling="head", **kwargs):
        super().__init__(dict(max_len=max_len, preset=preset, shift=shift,
                              pad_value=pad_value, sampling=sampling),
                         **kwargs)

    def _output_spec(self):
        max_len = self._fx_config["max_len"]
        if max_len is None:
            max_len = binary.BYTE_SEQUENCE_PRESETS[
                self._fx_config["preset"]]["max_len"]
        return (max_len,), "int32", "dense"


@_register
class ReadFiles(_Extractor):
    """`rustfx.read_files`: paths -> contents (string, the shape of paths).

    `with_status` is not offered: a layer gives one tensor; call
    `rustfx.read_files(..., with_status=True)` to see which reads failed.
    A model that reads files opens paths of the machine it runs on: put
    this layer in the input pipeline rather than in a served model.
    """

    _function = staticmethod(io.read_files)

    def __init__(self, max_bytes=io.DEFAULT_MAX_BYTES, on_error="raise",
                 **kwargs):
        if kwargs.get("files") is not None:
            raise TypeError("ReadFiles reads its input's files already; "
                            "files= is for the extractor layers")
        super().__init__(dict(max_bytes=max_bytes, on_error=on_error),
                         **kwargs)

    def _output_spec(self):
        return (), "string", "dense"
