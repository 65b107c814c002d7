"""rustfx_core's rows as Arrow, both ways (the C Data Interface, the
PyCapsule protocol): every registry example x layout x dtype reaches
pyarrow, polars, duckdb and numpy with one element per document and no
copy (the consumers' buffer addresses are the core's), a failed document
is null, and documents come in from any Arrow binary or string array or
stream, read in place. The values are checked against the core's numpy
views, which test_core_only checks against TensorFlow's ops."""

import gc
import pickle
import warnings

import numpy as np
import pytest
from conftest import same_rows

import rustfx_core

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")

DOCS = [b"", b"MZ\x90\x00 hello world C:\\x http://a.b HKEY_X wide w\0i\0d\0e\0",
        "Gr\u00f6\u00dfe caf\u00e9 x\u00b2 hello hello".encode() * 3, bytes(range(256)) * 5]

EXAMPLES = [(name, i, params) for name, entry in rustfx_core.registry().items()
            for i, params in enumerate(entry["examples"])]
IDS = [f"{name}-{i}" for name, i, _ in EXAMPLES]
ARROW_TYPES = {"float32": pa.float32(), "int64": pa.int64(), "int32": pa.int32(),
               "int16": pa.int16(), "uint16": pa.uint16(), "uint8": pa.uint8()}


def expected_type(rows):
    """The Arrow type of a spec's rows (rustfx_core.outputs' table)."""
    if rows.kind == "dense":
        return pa.list_(ARROW_TYPES[rows.dtype], rows.width)
    if rows.sparse:
        return pa.large_list(pa.struct([("index", pa.int64()),
                                        ("value", ARROW_TYPES[rows.dtype])]))
    if rows.dtype == "string":
        return pa.large_list(pa.large_binary())
    return pa.large_list(ARROW_TYPES[rows.dtype])


def numpy_rows(rows):
    """Each document's row from the core's numpy views: a list per row."""
    if rows.rows.kind == "dense":
        return [list(r) for r in np.asarray(rows)]
    if rows.rows.dtype == "string":
        return rows.to_list()
    splits = rows.row_splits.tolist()
    if rows.rows.sparse:
        return [[{"index": i, "value": v} for i, v in zip(rows.indices[a:b].tolist(),
                                                           rows.values[a:b].tolist())]
                for a, b in zip(splits[:-1], splits[1:])]
    return [rows.values[a:b].tolist() for a, b in zip(splits[:-1], splits[1:])]


def core_values_address(rows):
    """The address of the core's values buffer, from its numpy view."""
    if rows.rows.kind == "dense":
        return np.asarray(rows).ctypes.data
    return None if rows.rows.dtype == "string" else rows.values.ctypes.data


def leaf(array):
    """The values child of an exported array (sparse: the struct's value)."""
    child = array.values
    return child.field("value") if pa.types.is_struct(child.type) else child


def same_nan(a, b):
    return a == b or (a != a and b != b)


def rows_equal(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if g and isinstance(g[0], dict):
            assert [x["index"] for x in g] == [x["index"] for x in w]
            assert all(same_nan(x["value"], y["value"]) for x, y in zip(g, w))
        else:
            assert len(g) == len(w) and all(same_nan(x, y) for x, y in zip(g, w))


@pytest.mark.parametrize("name,i,params", EXAMPLES, ids=IDS)
def test_every_example_reaches_arrow_consumers_with_no_copy(name, i, params):
    spec = rustfx_core.FeatureSpec(name, **params)
    rows = rustfx_core.extract(spec, DOCS)
    assert len(rows) == len(DOCS)
    array = pa.array(rows)
    assert len(array) == len(DOCS) and array.null_count == 0
    assert array.type == expected_type(spec.rows)
    rows_equal(array.to_pylist(), numpy_rows(rows))
    address = core_values_address(rows)
    if address is not None and len(leaf(array)):
        # pyarrow's buffer is the core's: no copy (and none on a second export).
        assert leaf(array).buffers()[1].address == address
        assert leaf(pa.array(rows)).buffers()[1].address == address
    # A table column, then polars and duckdb.
    features = pa.table({"x": rows})
    assert features.num_rows == len(DOCS) and features.column("x").type == array.type
    polars = pytest.importorskip("polars")
    series = polars.Series(rows)
    assert len(series) == len(DOCS)
    if address is not None and len(leaf(array)) and spec.rows.kind != "sparse":
        assert leaf(series.to_arrow()).buffers()[1].address == address
    duckdb = pytest.importorskip("duckdb")
    counted = duckdb.sql("select count(*), count(x) from features").fetchall()
    assert counted == [(len(DOCS), len(DOCS))]
    # The spec travels in the schema's metadata.
    field = pa.Field._import_from_c_capsule(rows.__arrow_c_schema__())
    assert field.metadata[b"rustfx.spec"].decode() == spec.to_json()


def test_dense_rows_are_a_numpy_view_and_old_callers_keep_working():
    spec = rustfx_core.FeatureSpec("byte_histogram")
    rows = rustfx_core.extract(spec, DOCS)
    view = np.asarray(rows)
    assert view.shape == rows.shape == (len(DOCS), 256) and view.dtype == np.float32
    assert np.asarray(rows).ctypes.data == view.ctypes.data  # the same buffer each time
    assert rows[1, ord("M")] == view[1, ord("M")]
    assert [r.tolist() for r in rows][1] == view[1].tolist()
    with pytest.warns(DeprecationWarning, match="numpy.asarray"):
        assert rows.tobytes() == view.tobytes()
    # The view keeps the core's buffer alive after the rows are gone.
    del rows
    gc.collect()
    assert view[1].sum() == pytest.approx(1.0)


def test_ragged_and_sparse_still_unpack_as_their_tuples_with_a_warning():
    ragged = rustfx_core.extract(rustfx_core.FeatureSpec("hashed_ngrams", num_buckets=97,
                                                         output="ragged"), DOCS)
    with pytest.warns(DeprecationWarning, match=r"\.values, \.row_splits"):
        values, splits = ragged
    assert values.tobytes() == ragged.values.tobytes() and splits[-1] == len(values)
    assert isinstance(ragged, rustfx_core.Ragged)
    sparse = rustfx_core.extract(rustfx_core.FeatureSpec("hashed_ngrams", num_buckets=97,
                                                         output="sparse"), DOCS)
    with pytest.warns(DeprecationWarning):
        values, indices, splits, shape = sparse
    assert shape == (len(DOCS), 97) and len(indices) == len(values) == splits[-1]


def test_a_failed_document_is_null_with_its_message(tmp_path):
    present = tmp_path / "a"
    present.write_bytes(b"hello")
    documents = rustfx_core.read_files([str(present), str(tmp_path / "missing")])
    rows = rustfx_core.extract(rustfx_core.FeatureSpec("byte_histogram"), documents)
    array = pa.array(rows)
    assert array.null_count == 1 and array[1].as_py() is None and array[0].is_valid
    assert list(rows.errors) == [1] and "missing" in rows.errors[1]


DOCUMENT_ARRAYS = {
    "binary": lambda d: pa.array(d, pa.binary()),
    "large_binary": lambda d: pa.array(d, pa.large_binary()),
    "binary_view": lambda d: pa.array(d, pa.binary_view()),
    "chunked": lambda d: pa.chunked_array([d[:2], d[2:]], pa.binary()),
    "sliced": lambda d: pa.array([b"x"] + d + [b"y"], pa.binary()).slice(1, len(d)),
}


@pytest.mark.parametrize("kind", sorted(DOCUMENT_ARRAYS))
def test_documents_come_in_from_any_arrow_binary_array_in_place(kind):
    spec = rustfx_core.FeatureSpec("hashed_ngrams", num_buckets=1 << 12, ngram_widths=[1, 2],
                                   output="ragged")
    want = rustfx_core.extract(spec, DOCS)
    assert same_rows(rustfx_core.extract(spec, DOCUMENT_ARRAYS[kind](DOCS)), want)


def test_strings_polars_and_a_parquet_column_come_in_as_documents(tmp_path):
    texts = ["http://a.example/x?q=1", "", "https://b.example/\u00e9t\u00e9"]
    spec = rustfx_core.FeatureSpec("hashed_ngrams", num_buckets=1 << 12, tokenizer="byte",
                                   ngram_widths=[3], output="ragged")
    want = rustfx_core.extract(spec, [t.encode() for t in texts])
    for strings in (pa.array(texts, pa.string()), pa.array(texts, pa.large_string()),
                    pa.array(texts, pa.string_view())):
        assert same_rows(rustfx_core.extract(spec, strings), want), strings.type
    polars = pytest.importorskip("polars")
    assert same_rows(rustfx_core.extract(spec, polars.Series(texts)), want)
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"url": texts}), tmp_path / "urls.parquet")
    column = pq.read_table(tmp_path / "urls.parquet").column("url")
    assert same_rows(rustfx_core.extract(spec, column), want)


def test_a_null_document_is_a_failed_one_and_other_types_are_refused():
    spec = rustfx_core.FeatureSpec("byte_histogram")
    rows = rustfx_core.extract(spec, pa.array([b"ab", None, b""]))
    assert pa.array(rows).null_count == 1 and rows.errors == {1: "document 1 is null"}
    with pytest.raises(ValueError, match="binary or string array"):
        rustfx_core.extract(spec, pa.array([1, 2, 3]))


@pytest.mark.parametrize("name,i,params", EXAMPLES[::3], ids=IDS[::3])
def test_rows_pickle_into_the_core_again(name, i, params):
    rows = rustfx_core.extract(rustfx_core.FeatureSpec(name, **params), DOCS)
    back = pickle.loads(pickle.dumps(rows))
    assert type(back) is type(rows) and same_rows(back, rows)


def test_capsules_are_released_once_whatever_the_consumer_does():
    """A capsule nobody consumed frees its struct (the rows too, once the
    last export goes); one pyarrow consumed leaves a released struct that
    its destructor only frees. Run many times: a double release or a leak
    of the core's buffers would show as a crash or growing memory."""
    spec = rustfx_core.FeatureSpec("byte_sequence", max_len=1 << 16, output="ragged")
    docs = [bytes(1 << 16)] * 8
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(200):
            rows = rustfx_core.extract(spec, docs)
            rows.__arrow_c_array__()  # dropped unconsumed
            array = pa.array(rows)
            del rows
            assert len(array) == 8 and len(leaf(array)) == 8 << 16
    gc.collect()
