"""Explanations: from a feature back to the bytes that made it.

rustfx_core.explain(spec, contents) lists, for each document, its
*contributions* to the spec's output: which output index each went to
(a bucket, a dimension, a position), where its bytes are in the document,
what it added, and its text for tokens and strings. rustfx computes every
feature itself, so it records each increment as it makes it (the Rust
core's rustfx::explain, through the C ABI): summed per index and finished
as `df.attrs["combine"]` says, they give extract()'s output exactly.

The answer is a pandas DataFrame per document, the table an analyst sorts,
filters and groups (`df.groupby("index").value.sum()`); pandas is imported
on the first call only (`pip install pandas`, or the wheel's `explain`
extra), so rustfx_core itself still needs only numpy.

    df = rustfx_core.explain(rustfx_core.FeatureSpec("byte_histogram"), b"aab")[0]
    df[["feature", "index", "offset", "value"]]   # b"a": 2.0 at 0, b"b": 1.0 at 2
"""

import operator

import numpy as np

from rustfx_core import _abi
from rustfx_core.spec import FeatureSpec

__all__ = ["explain"]

#: The columns of each DataFrame, in order, with their dtypes ("text":
#: bytes objects; "feature": str).
COLUMNS = {"feature": object, "index": np.uint64, "offset": np.uint64,
           "length": np.uint64, "value": np.float64, "text": object}


def _pandas():
    try:
        import pandas
    except ImportError as e:
        raise ImportError("rustfx explain() returns pandas DataFrames: `pip install pandas` "
                          "(or the rustfx wheel's `explain` extra)") from e
    return pandas


def _cap(value, name, refused):
    """`value` as an int for the core to check, or None (the core's
    default); a non-integer is refused here, the core has no such value."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise refused(f"{name} must be an int or None, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise refused(f"{name} must be an int or None, got {value!r}") from None


def _documents(contents, refused):
    """`contents` as a list of bytes: one bytes-like object, or a sequence
    of them (not str: a text has no bytes until it is encoded)."""
    if isinstance(contents, (bytes, bytearray, memoryview)):
        contents = [contents]
    elif isinstance(contents, str) or not hasattr(contents, "__iter__"):
        raise refused(f"contents must be bytes or a list of bytes, got "
                      f"{type(contents).__name__}")
    docs = []
    for doc in contents:
        if not isinstance(doc, (bytes, bytearray, memoryview)):
            raise refused(f"each document must be bytes, got {type(doc).__name__}")
        docs.append(bytes(doc))
    return docs


def _names(spec):
    """The name of each dense index, for extractors that name them."""
    try:
        return _abi.spec_query("feature_names", spec.to_json())
    except ValueError:  # "X does not name its values": the extractor's name
        return None


def explain(spec, contents, *, max_contributions=None, max_text_bytes=None,
            byte_offsets=False):
    """The contributions of each document of `contents` (bytes, or a list
    of bytes) to the output of `spec` (a FeatureSpec, its JSON text or
    dict, as extract() takes it): a list with one pandas DataFrame per
    document (a single bytes object is one document), a row per
    contribution in the order the extractor made them:

    - feature (str): the name of `index` for extractors that name their
      values (FeatureSpec.feature_names(): ember_features,
      general_file_info), else the extractor's name;
    - index (uint64): the output index (a bucket id, a dimension, a
      position in the row);
    - offset, length (uint64): where its bytes are in the document;
    - value (float64): what it added at `index`;
    - text (bytes): for tokens, n-grams, strings and names, their text as
      the extractor saw it, cut at `max_text_bytes`; else b"".

    `df.attrs`: "extractor" (its name), "truncated" (True when
    `max_contributions` stopped it before the document's end: raise the cap
    for the rest) and "combine" (one line: how the values at an index make
    the output value, e.g. a histogram's sum divided by the length).

    max_contributions (rows per document), max_text_bytes: None for the
    core's defaults (100 000 and 256). byte_offsets: byte histograms give
    a row per byte (every offset) instead of one per byte value (its
    count, at its first offset).

    A refusal (a bad spec or cap, an extractor that does not explain: "X
    does not explain: why") raises ValueError with the core's message, or
    the spec class's refusal (rustfx.FeatureSpec: tf.errors.
    InvalidArgumentError), as FeatureSpec does. Needs pandas."""
    refused = spec.refusal if isinstance(spec, FeatureSpec) else ValueError
    spec = FeatureSpec.from_json(spec)
    caps = (_cap(max_contributions, "max_contributions", refused),
            _cap(max_text_bytes, "max_text_bytes", refused))
    docs = _documents(contents, refused)
    pandas = _pandas()
    extractor, names = _abi.Extractor(spec.to_json()), _names(spec)
    tables = []
    for doc in docs:
        try:
            explained = extractor.explain(doc, *caps, bool(byte_offsets))
        except ValueError as e:
            raise refused(str(e)) from None
        tables.append(_table(pandas, explained, spec.extractor, names))
    return tables


def _table(pandas, explained, extractor, names):
    columns = explained.columns
    index = columns["index"]
    if names is None:
        feature = [extractor] * len(index)
    else:  # an index beyond the names would be a bug; still say which
        feature = [names[i] if i < len(names) else f"{extractor}[{i}]"
                   for i in index.tolist()]
    data = {"feature": feature, **columns}
    table = pandas.DataFrame(
        {name: pandas.Series(data[name], dtype=dtype) for name, dtype in COLUMNS.items()})
    table.attrs.update(extractor=extractor, truncated=bool(explained.truncated),
                       combine=explained.combine)
    return table
