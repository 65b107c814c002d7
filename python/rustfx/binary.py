"""Byte-level features of executables and documents: EMBER-compatible
histograms and string features, and MalConv-style raw byte sequences.

Every extractor takes `contents`, a tf.string tensor of file contents, or
rustfx.files(paths) to read the files itself (rustfx.io.files)."""

from rustfx._common import no_autograph
from rustfx.spec import FeatureSpec, registry
from rustfx.spec import extract_spec as extract

__all__ = ["byte_histogram", "byte_entropy_histogram", "string_features",
           "general_file_info", "GENERAL_FILE_INFO_NAMES",
           "ember2024_string_features", "ember_features",
           "ember_feature_names", "byte_sequence",
           "BYTE_SEQUENCE_PRESETS", "printable_strings"]

#: The columns of general_file_info (from the core).
GENERAL_FILE_INFO_NAMES = tuple(FeatureSpec("general_file_info").feature_names())


def _presets():
    preset = next(p for p in registry()["byte_sequence"]["params"] if p["name"] == "preset")
    return {name: {k: v for k, v in FeatureSpec("byte_sequence", preset=name).params.items()
                   if k in ("max_len", "shift", "pad_value")}
            for name in preset["names"]}


#: Named byte_sequence conventions (from the core): EMBER's MalConv (bytes
#: 0..255, pad 256, 2**20 bytes) and MalConv2 (bytes + 1, pad 0, 4,000,000).
BYTE_SEQUENCE_PRESETS = _presets()


@no_autograph
def byte_histogram(contents, *, empty="zeros", name=None):
    """EMBER ByteHistogram: float32 contents.shape + [256], each row the byte
    counts divided by their sum. An empty input gives zeros (empty="zeros",
    the default: a NaN feature poisons a model) or NaN like EMBER
    (empty="nan")."""
    return extract(FeatureSpec("byte_histogram", empty=empty), contents, name=name)


@no_autograph
def byte_entropy_histogram(contents, *, window=2048, step=1024, empty="zeros",
                           name=None):
    """EMBER ByteEntropyHistogram: float32 contents.shape + [256], a 16x16
    histogram of (window entropy bin, high nibble), normalised. window and
    step in [1, 2**24]. empty as for byte_histogram."""
    spec = FeatureSpec("byte_entropy_histogram", window=window, step=step, empty=empty)
    return extract(spec, contents, name=name)


@no_autograph
def string_features(contents, *, name=None):
    """EMBER StringExtractor: float32 contents.shape + [104] in EMBER's order
    (numstrings, avlength, printables, 96-bin printable distribution,
    entropy, paths, urls, registry, MZ). The four pattern counts are over
    the whole input; the rest over printable runs of >= 5 bytes. An input
    without strings (empty included) gives zeros, as in EMBER."""
    return extract(FeatureSpec("string_features"), contents, name=name)


@no_autograph
def general_file_info(contents, *, name=None):
    """EMBER2024 (thrember) general file information without is_pe: float32
    contents.shape + [6] = size, entropy (pefile's entropy_H, bit for bit),
    and the first four bytes (0 past the end). thrember's general group is
    these with is_pe third. An empty input gives zeros (thrember raises)."""
    return extract(FeatureSpec("general_file_info"), contents, name=name)


@no_autograph
def ember2024_string_features(contents, *, name=None):
    """EMBER2024 (thrember) `strings` group: float32 contents.shape + [177]
    = numstrings, avlength, printables, 96-bin printable distribution,
    entropy, then how many strings match each of thrember's 77 patterns
    (sorted by name). An input without strings gives zeros."""
    return extract(FeatureSpec("ember2024_string_features"), contents, name=name)


def _ember_spec(feature_version, groups):
    groups = [] if groups is None else groups
    if isinstance(groups, (list, tuple)):
        groups = list(groups)
    return FeatureSpec("ember_features", feature_version=feature_version, groups=groups)


@no_autograph
def ember_features(contents, *, feature_version=3, groups=(), name=None):
    """EMBER2024 (thrember, EMBER feature version 3) feature vectors: float32
    contents.shape + [2568], thrember's twelve groups in its order (general,
    histogram, byteentropy, strings, header, section, imports, exports,
    datadirectories, richheader, authenticode, pefilewarnings), or only
    the groups named in `groups`, in that order. Files that are not PE get
    zeros in the PE groups, as in thrember; an empty file gets zeros
    (thrember raises). ember_feature_names() names each value."""
    return extract(_ember_spec(feature_version, groups), contents, name=name)


def ember_feature_names(*, feature_version=3, groups=None):
    """The name of each value of ember_features with the same arguments, as
    a list of str ("<group>_<value>", e.g. "header_machine")."""
    return _ember_spec(feature_version, groups).feature_names()


@no_autograph
def byte_sequence(contents, max_len=None, *, preset="ember", shift=None,
                  pad_value=None, sampling="head", dtype="int32", output="dense", name=None):
    """MalConv-style raw bytes: each kept byte as byte + shift.

    output="dense": contents.shape + [max_len], padded with pad_value (which
    may not be a byte value). output="ragged": a RaggedTensor
    contents.shape + [None] of the kept bytes only, so a batch is padded to
    its longest file (`.to_tensor(pad_value)`), as MalConv2 feeds it.
    dtype: "int32" (default), "int64", or "int16"/"uint16" (2 bytes per
    byte; MalConv2's 0..256 fit), "uint8" (when shift + 255 and pad_value
    fit); a dtype too narrow for the values is refused.

    Parameters not given come from `preset` ("ember" or "malconv2", see
    BYTE_SEQUENCE_PRESETS). sampling="head" keeps the first max_len bytes;
    "head_tail" keeps the first ceil(max_len/2) and last floor(max_len/2)
    bytes of longer inputs.
    """
    spec = FeatureSpec("byte_sequence", max_len=max_len, preset=preset, shift=shift,
                       pad_value=pad_value, sampling=sampling, dtype=dtype, output=output)
    return extract(spec, contents, name=name)


@no_autograph
def printable_strings(contents, *, min_len=4, encodings=("ascii", "utf16le"),
                      max_strings=None, max_bytes=None, name=None):
    """The printable strings of each element, as GNU `strings -a -n min_len`
    finds them: a tf.string RaggedTensor contents.shape + [None] (a rank-0
    input gives a 1-D tensor), ready for hashed_ngrams(strings.flat_values)
    or a tf.strings op.

    encodings: "ascii" (`strings -e s`: runs of tab or 0x20..0x7e) and/or
    "utf16le" (`strings -e l`: such characters as little-endian 16-bit
    units, output as ASCII); the output has every string of the first
    encoding, then every string of the next. max_strings / max_bytes bound
    each element's strings (count / total bytes, the last one cut to fit);
    None: no bound beyond the input's size.
    """
    encodings = encodings if isinstance(encodings, str) else list(encodings)
    spec = FeatureSpec("printable_strings", min_len=min_len, encodings=encodings,
                       max_strings=max_strings, max_bytes=max_bytes)
    return extract(spec, contents, name=name)
