"""Byte-level features of executables and documents: EMBER-compatible
histograms and string features, and MalConv-style raw byte sequences.

Every extractor takes `contents`, a tf.string tensor of file contents, or
rustfx.files(paths) to read the files itself (rustfx.io.files)."""

import tensorflow as tf

from rustfx._common import documents, invalid, no_autograph, ops

__all__ = ["byte_histogram", "byte_entropy_histogram", "string_features",
           "general_file_info", "GENERAL_FILE_INFO_NAMES",
           "ember2024_string_features", "ember_features",
           "ember_feature_names", "byte_sequence",
           "BYTE_SEQUENCE_PRESETS"]

#: The columns of general_file_info.
GENERAL_FILE_INFO_NAMES = ("size", "entropy", "start_byte_0", "start_byte_1",
                           "start_byte_2", "start_byte_3")

#: Named byte_sequence conventions: EMBER's MalConv (bytes 0..255, pad 256,
#: 2**20 bytes) and MalConv2 (bytes + 1, pad 0, 4,000,000 bytes).
BYTE_SEQUENCE_PRESETS = {
    "ember": dict(max_len=1 << 20, shift=0, pad_value=256),
    "malconv2": dict(max_len=4_000_000, shift=1, pad_value=0),
}


@no_autograph
def byte_histogram(contents, *, empty="zeros", name=None):
    """EMBER ByteHistogram: float32 contents.shape + [256], each row the byte
    counts divided by their sum. An empty input gives zeros (empty="zeros",
    the default: a NaN feature poisons a model) or NaN like EMBER
    (empty="nan")."""
    contents, source = documents(contents)
    return ops.Rustfx_ByteHistogram(input=contents, empty=empty, name=name, **source)


@no_autograph
def byte_entropy_histogram(contents, *, window=2048, step=1024, empty="zeros",
                           name=None):
    """EMBER ByteEntropyHistogram: float32 contents.shape + [256], a 16x16
    histogram of (window entropy bin, high nibble), normalised. window and
    step in [1, 2**24]. empty as for byte_histogram."""
    contents, source = documents(contents)
    return ops.Rustfx_ByteEntropyHistogram(
        input=contents, window=window, step=step, empty=empty, name=name, **source)


@no_autograph
def string_features(contents, *, name=None):
    """EMBER StringExtractor: float32 contents.shape + [104] in EMBER's order
    (numstrings, avlength, printables, 96-bin printable distribution,
    entropy, paths, urls, registry, MZ). The four pattern counts are over
    the whole input; the rest over printable runs of >= 5 bytes. An input
    without strings (empty included) gives zeros, as in EMBER."""
    contents, source = documents(contents)
    return ops.Rustfx_StringFeatures(input=contents, name=name, **source)


@no_autograph
def general_file_info(contents, *, name=None):
    """EMBER2024 (thrember) general file information without is_pe: float32
    contents.shape + [6] = size, entropy (pefile's entropy_H, bit for bit),
    and the first four bytes (0 past the end). thrember's general group is
    these with is_pe third. An empty input gives zeros (thrember raises)."""
    contents, source = documents(contents)
    return ops.Rustfx_GeneralFileInfo(input=contents, name=name, **source)


@no_autograph
def ember2024_string_features(contents, *, name=None):
    """EMBER2024 (thrember) `strings` group: float32 contents.shape + [177]
    = numstrings, avlength, printables, 96-bin printable distribution,
    entropy, then how many strings match each of thrember's 77 patterns
    (sorted by name). An input without strings gives zeros."""
    contents, source = documents(contents)
    return ops.Rustfx_Ember2024StringFeatures(input=contents, name=name, **source)


def _groups(groups):
    if isinstance(groups, str):
        raise invalid(f"groups must be a list of group names, got the string {groups!r}")
    return list(groups or [])


@no_autograph
def ember_features(contents, *, feature_version=3, groups=None, name=None):
    """EMBER2024 (thrember, EMBER feature version 3) feature vectors: float32
    contents.shape + [2568], thrember's twelve groups in its order (general,
    histogram, byteentropy, strings, header, section, imports, exports,
    datadirectories, richheader, authenticode, pefilewarnings), or only
    the groups named in `groups`, in that order. Files that are not PE get
    zeros in the PE groups, as in thrember; an empty file gets zeros
    (thrember raises). ember_feature_names() names each value."""
    contents, source = documents(contents)
    return ops.Rustfx_EmberFeatures(
        input=contents, feature_version=feature_version, groups=_groups(groups),
        name=name, **source)


def ember_feature_names(*, feature_version=3, groups=None):
    """The name of each value of ember_features with the same arguments, as
    a list of str ("<group>_<value>", e.g. "header_machine")."""
    names = ops.Rustfx_EmberFeatureNames(feature_version=feature_version,
                                         groups=_groups(groups))
    return [n.decode() for n in names.numpy()]


@no_autograph
def byte_sequence(contents, max_len=None, *, preset="ember", shift=None,
                  pad_value=None, sampling="head", name=None):
    """MalConv-style raw bytes: int32 contents.shape + [max_len], each kept
    byte as byte + shift, then pad_value (which may not be a byte value).

    Parameters not given come from `preset` ("ember" or "malconv2", see
    BYTE_SEQUENCE_PRESETS). sampling="head" keeps the first max_len bytes;
    "head_tail" keeps the first ceil(max_len/2) and last floor(max_len/2)
    bytes of longer inputs.
    """
    if preset not in BYTE_SEQUENCE_PRESETS:
        raise invalid(f"preset must be one of {', '.join(BYTE_SEQUENCE_PRESETS)}, "
                      f"got {preset!r}")
    defaults = BYTE_SEQUENCE_PRESETS[preset]
    contents, source = documents(contents)
    return ops.Rustfx_ByteSequence(
        input=contents, **source,
        max_len=defaults["max_len"] if max_len is None else max_len,
        shift=defaults["shift"] if shift is None else shift,
        pad_value=defaults["pad_value"] if pad_value is None else pad_value,
        sampling=sampling, name=name)
