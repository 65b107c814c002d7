"""Paths to rows: each read batch read, hashed and extracted by the core
into a pyarrow.Table (FeatureSet.arrow_schema()), with no TensorFlow.

One row per path: path (binary: the path's bytes, exact whatever the
name, os.fsencode of a str path), size (bytes read, at most max_bytes), sha256 (hex,
in Rust, of those bytes; null in error rows), content_key (the feature cache's
key of those bytes: their BLAKE3, hex; null in error rows), status (a tf.errors code, 0 =
OK), message, then each feature's columns and its row digests
(rustfx_core.corpus.arrow; null in error rows).
"""

import os

import numpy as np
import pyarrow as pa

from rustfx_core._abi import DEFAULT_MAX_BYTES, Documents, Extractor
from rustfx_core.corpus.arrow import feature_columns
from rustfx_core.corpus.features import FeatureSet
from rustfx_core.corpus.inputs import is_uri, read_batches, read_uris


class Plan:
    """What turns paths into rows: the feature set, each feature's extractor
    in the core, and the rows' schema. Built from FeatureSet.to_json() (what
    a Ray worker is given)."""

    def __init__(self, feature_set_json):
        self.json = feature_set_json
        self.feature_set = FeatureSet.load(feature_set_json)
        self.extractors = {column: Extractor(spec.to_json())
                           for column, spec in self.feature_set.features.items()}
        self.schema = self.feature_set.arrow_schema()


def iter_tables(paths, feature_set, *, max_bytes=None, on_error="record",
                read_batch_bytes=None):
    """The rows of `paths` (extract_table's), as one pyarrow.Table per read
    batch (read_batches), in order: each batch is read, hashed and
    extracted, and its contents freed before the next one is read."""
    plan = Plan(FeatureSet.load(feature_set).to_json())
    return plan_tables(paths, plan, max_bytes, on_error, read_batch_bytes)


def extract_table(paths, feature_set, *, max_bytes=None, on_error="record",
                  read_batch_bytes=None):
    """The rows (a pyarrow.Table, feature_set.arrow_schema()) of `paths`:
    each file read once by rustfx's core (read_files' rules, or pyarrow for
    URIs), hashed and given to every extractor of the feature set.
    on_error="record" makes an unreadable file a row with its status and
    message (features null); "raise" fails on the first one. Files are read
    in read batches (read_batches, iter_tables), so the contents held are
    bounded whatever len(paths) is; the rows returned are all of them."""
    plan = Plan(FeatureSet.load(feature_set).to_json())
    return concat(list(plan_tables(paths, plan, max_bytes, on_error, read_batch_bytes)),
                  plan.schema)


def plan_tables(paths, plan, max_bytes, on_error, read_batch_bytes):
    """iter_tables with a Plan built once (a worker's)."""
    max_bytes = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    if on_error not in ("record", "raise"):
        raise ValueError(f"on_error must be 'record' or 'raise', got {on_error!r}")
    # Bytes from here on: a name that is not UTF-8 (str from os.listdir
    # holds it as surrogates) keeps its bytes, into the path column too.
    paths = [bytes(os.fsencode(p)) for p in paths]
    for batch in read_batches(paths, max_bytes, read_batch_bytes):
        yield _extract_batch(batch, plan, max_bytes, on_error)


def _text(message):
    """`message` as valid UTF-8 for a string column: a surrogate (a name
    that is not UTF-8, in an exception's text) as its `\\udcXX` escape."""
    return message.encode("utf-8", "backslashreplace").decode("utf-8")


def concat(tables, schema):
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _extract_batch(paths, plan, max_bytes, on_error):
    """One read batch: read by the core (the only copy of the contents,
    unless some paths are URIs, read through pyarrow), hash, extract."""
    documents = Documents(len(paths))
    remote = [i for i, p in enumerate(paths) if is_uri(p)]
    for i, p in enumerate(paths):
        if not is_uri(p):
            documents.read(i, p, max_bytes)
    if remote:
        contents, codes, messages = read_uris([os.fsdecode(paths[i]) for i in remote],
                                              max_bytes)
        for j, i in enumerate(remote):
            documents.set(i, contents[j], codes[j], messages[j])
        del contents
    failed = documents.codes != 0
    if on_error == "raise" and failed.any():
        first = int(np.argmax(failed))
        raise OSError(f"rustfx corpus: {documents.messages[first]} (use --on-error record "
                      f"to keep going with an error row)")
    sizes, digests = documents.digest()
    keys = documents.content_keys()
    columns = {
        "path": pa.array(paths, pa.binary()),
        "size": pa.array(sizes, pa.int64()),
        "sha256": pa.array([None if bad else d for d, bad in zip(digests, failed)], pa.string()),
        "content_key": pa.array([None if bad else k for k, bad in zip(keys, failed)],
                                pa.string()),
        "status": pa.array(documents.codes, pa.int32()),
        "message": pa.array([_text(m) for m in documents.messages], pa.string()),
    }
    raw_keys = documents.content_keys(raw=True)
    for column, spec in plan.feature_set.features.items():
        rows = spec.rows.batch(plan.extractors[column].extract(documents))
        # In place: the digests of the core's rows, with no export.
        digests = rows.handle.digests(raw_keys)
        columns.update(feature_columns(spec, column, rows, digests))
    return pa.Table.from_pydict(columns, schema=plan.schema)
