"""rustfx_core.explain (and rustfx.explain): each document's contributions,
as pandas DataFrames, checked against oracles that do not use them: numpy's
bincount for byte histograms, extract() for exactness, the document's own
bytes for offsets. The properties every explainer must have (in-bounds
spans, the cap as a prefix, texts cut at their cap, feature names) run over
every registry example, skipping with the core's reason those that do not
explain yet, so each lights up the day its explainer lands.

No TensorFlow here but in the one test of rustfx.explain's refusals
(tests/python/test_core_only.py checks explain in a process without it).
"""

import sys

import numpy as np
import pytest

import rustfx_core
from rustfx_core import FeatureSpec

pd = pytest.importorskip("pandas", reason="explain() needs pandas")

HISTOGRAM = FeatureSpec("byte_histogram")
EXAMPLES = [(name, i, params) for name, entry in rustfx_core.registry().items()
            for i, params in enumerate(entry["examples"])]
IDS = [f"{name}-{i}" for name, i, _ in EXAMPLES]


def some_documents(documents, machine_files, count=40):
    """A few random documents (empty ones included) and real files."""
    real = [open(path, "rb").read()[:1 << 16] for path in machine_files[:8]]
    return documents[:count] + real


def explained_or_skip(spec, docs, **options):
    """explain()'s tables, or a skip with the core's reason."""
    try:
        return rustfx_core.explain(spec, docs, **options)
    except ValueError as e:
        if "does not explain" not in str(e):
            raise
        pytest.skip(str(e))


def test_columns_dtypes_and_attrs():
    (table,) = rustfx_core.explain(HISTOGRAM, b"aab")
    assert list(table.columns) == ["feature", "index", "offset", "length", "value", "text"]
    assert [str(t) for t in table.dtypes] == ["object", "uint64", "uint64", "uint64",
                                              "float64", "object"]
    assert set(table.attrs) == {"extractor", "truncated", "combine"}
    assert table.attrs["extractor"] == "byte_histogram"
    assert table.attrs["truncated"] is False
    assert isinstance(table.attrs["combine"], str) and table.attrs["combine"]
    assert (table.feature == "byte_histogram").all()
    assert all(isinstance(t, bytes) for t in table.text)
    # One bytes object is one document; JSON text and dicts are specs too.
    assert len(rustfx_core.explain('{"extractor": "byte_histogram"}', [b"a", b""])) == 2
    (empty,) = rustfx_core.explain({"extractor": "byte_histogram"}, b"")
    assert len(empty) == 0 and str(empty.dtypes["index"]) == "uint64"
    assert rustfx_core.explain(HISTOGRAM, []) == []


def test_byte_histogram_sums_are_bincount(documents, machine_files):
    for doc in some_documents(documents, machine_files):
        counts = np.bincount(np.frombuffer(doc, np.uint8), minlength=256)
        (table,) = rustfx_core.explain(HISTOGRAM, doc)
        sums = table.groupby("index").value.sum()
        np.testing.assert_array_equal(sums.index.to_numpy(), np.flatnonzero(counts))
        np.testing.assert_array_equal(sums.to_numpy(), counts[counts > 0])
        # One row per byte value, at its first offset.
        first = {b: doc.index(bytes([b])) for b in np.flatnonzero(counts).tolist()}
        assert dict(zip(table["index"].tolist(), table.offset.tolist())) == first


def test_byte_offsets_are_every_byte(documents, machine_files):
    for doc in some_documents(documents, machine_files):
        (table,) = rustfx_core.explain(HISTOGRAM, doc, byte_offsets=True)
        np.testing.assert_array_equal(np.sort(table.offset.to_numpy()), np.arange(len(doc)))
        np.testing.assert_array_equal(
            table["index"].to_numpy(), np.frombuffer(doc, np.uint8)[table.offset.to_numpy()])
        assert (table.length == 1).all() and (table.value == 1.0).all()


def test_byte_histogram_sums_finish_into_extract(documents, machine_files):
    """Exact: the sums per index, divided by the length as combine says,
    are extract()'s float32 row."""
    docs = some_documents(documents, machine_files)
    rows = rustfx_core.extract(HISTOGRAM, docs)
    for doc, row, table in zip(docs, rows, rustfx_core.explain(HISTOGRAM, docs)):
        assert "length" in table.attrs["combine"]
        sums = np.zeros(256)
        np.add.at(sums, table["index"].to_numpy().astype(np.intp), table.value.to_numpy())
        want = (sums / len(doc)).astype(np.float32) if doc else np.zeros(256, np.float32)
        assert want.tobytes() == row.tobytes()


@pytest.mark.parametrize("params", [e[2] for e in EXAMPLES if e[0] == "byte_sequence"])
def test_byte_sequence_positions(params, documents, machine_files):
    spec = FeatureSpec("byte_sequence", **params)
    docs = some_documents(documents, machine_files) + [bytes(range(256)) * 3]
    shift, pad = spec.params["shift"], spec.params["pad_value"]
    rows = rustfx_core.extract(spec, docs)
    if spec.rows.ragged:  # output="ragged": the kept bytes only, no pad
        rows = np.split(rows.values, rows.row_splits[1:-1])
    for doc, row, table in zip(docs, rows, rustfx_core.explain(spec, docs)):
        index, offset = table["index"].to_numpy(), table.offset.to_numpy()
        kept = min(len(doc), len(row))
        np.testing.assert_array_equal(index, np.arange(kept))
        assert (np.diff(offset.astype(np.int64)) > 0).all()
        if spec.params["sampling"] == "head" or len(doc) <= len(row):
            np.testing.assert_array_equal(offset, index)
        values = np.frombuffer(doc, np.uint8)[offset].astype(np.int64) + shift
        np.testing.assert_array_equal(table.value.to_numpy(), values)
        np.testing.assert_array_equal(row[:kept], values)
        assert (row[kept:] == pad).all()


def test_the_cap_truncates():
    doc = bytes(range(256)) * 4
    (full,) = rustfx_core.explain(HISTOGRAM, doc, byte_offsets=True)
    assert len(full) == len(doc) and full.attrs["truncated"] is False
    (capped,) = rustfx_core.explain(HISTOGRAM, doc, byte_offsets=True, max_contributions=10)
    assert len(capped) == 10 and capped.attrs["truncated"] is True
    exact = rustfx_core.explain(HISTOGRAM, doc, byte_offsets=True, max_contributions=len(doc))
    assert exact[0].attrs["truncated"] is False


@pytest.mark.parametrize("name,i,params", EXAMPLES, ids=IDS)
def test_every_explainer_is_in_bounds_and_capped(name, i, params, documents, machine_files):
    """What any explanation must be: spans inside the document, indices
    inside a fixed-width row, feature names by index, a cap that keeps the
    first rows, texts cut at max_text_bytes as prefixes of the whole."""
    spec = FeatureSpec(name, **params)
    docs = some_documents(documents, machine_files, count=15)
    tables = explained_or_skip(spec, docs)
    width = spec.output["shape"][0]
    try:
        names = spec.feature_names()
    except ValueError:
        names = None
    for doc, table in zip(docs, tables):
        assert table.attrs["extractor"] == name and table.attrs["combine"]
        end = table.offset.to_numpy() + table.length.to_numpy()
        assert (end <= len(doc)).all(), name
        if width is not None:
            assert (table["index"].to_numpy() < width).all(), name
        if names is None:
            assert (table.feature == name).all()
        else:
            assert table.feature.tolist() == [names[k] for k in table["index"].tolist()]
        assert all(len(text) <= 256 for text in table.text)  # the default cap
        if len(table) < 2:
            continue
        cap = len(table) // 2
        (capped,) = rustfx_core.explain(spec, doc, max_contributions=cap, max_text_bytes=3)
        assert capped.attrs["truncated"] is True and len(capped) == cap
        head = table.iloc[:cap].reset_index(drop=True)
        pd.testing.assert_frame_equal(capped.drop(columns="text"), head.drop(columns="text"))
        assert capped.text.tolist() == [text[:3] for text in head.text]


def test_every_extractor_explains_through_the_c_abi():
    """Every registry example explains from Python. An extractor that could
    not would refuse with "NAME does not explain: why" (the core's rule,
    tests/explain.rs) and be listed there and here."""
    refusals = []
    for name, _, params in EXAMPLES:
        try:
            rustfx_core.explain(FeatureSpec(name, **params), b"MZ hello")
        except ValueError as e:
            refusals.append((name, str(e)))
    assert not refusals, refusals


@pytest.mark.parametrize("options,words", [
    (dict(max_contributions=0), "max_contributions must be in [1, "),
    (dict(max_contributions=-1), "max_contributions must be in [1, "),
    (dict(max_contributions=10**12), "max_contributions must be in [1, "),
    (dict(max_contributions=2**70), "max_contributions must be in [1, "),
    (dict(max_text_bytes=-1), "max_text_bytes must be in [0, "),
    (dict(max_text_bytes=1 << 30), "max_text_bytes must be in [0, "),
    (dict(max_contributions=1.5), "max_contributions must be an int or None"),
    (dict(max_contributions=True), "max_contributions must be an int or None"),
    (dict(max_text_bytes="3"), "max_text_bytes must be an int or None"),
])
def test_bad_options_are_refused(options, words):
    with pytest.raises(ValueError, match=f"^{words}".replace("[", r"\[")):
        rustfx_core.explain(HISTOGRAM, b"abc", **options)


@pytest.mark.parametrize("contents", ["text", 3, [b"a", "b"], None])
def test_bad_contents_are_refused(contents):
    with pytest.raises(ValueError, match="bytes"):
        rustfx_core.explain(HISTOGRAM, contents)


def test_a_bad_spec_is_refused_as_extract_refuses_it():
    bad = '{"extractor": "byte_histogram", "params": {"x": 1}}'
    with pytest.raises(ValueError) as refused:
        rustfx_core.extract(bad, [b""])
    with pytest.raises(ValueError) as got:
        rustfx_core.explain(bad, b"")
    assert str(got.value) == str(refused.value)


def test_without_pandas_the_message_says_how(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` fails
    with pytest.raises(ImportError, match="pip install pandas"):
        rustfx_core.explain(HISTOGRAM, b"abc")


def test_rustfx_explain_is_the_core_one_refusing_as_tensorflow_does():
    rustfx = pytest.importorskip("rustfx")
    import tensorflow as tf

    assert rustfx.explain is rustfx_core.explain
    (table,) = rustfx.explain(rustfx.FeatureSpec("byte_histogram"), b"ab")
    assert table["index"].tolist() == [97, 98]
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_contributions"):
        rustfx.explain(rustfx.FeatureSpec("byte_histogram"), b"ab", max_contributions=0)
