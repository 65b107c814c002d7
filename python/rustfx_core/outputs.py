"""Output kinds, and the rows of one extraction in the core's buffers.

A spec's "output" ({"kind", "dtype", "shape"}, as the core completes it)
becomes one of four Rows classes, here and nowhere else (rows_of):

    DenseRows      kind "dense": a row of `width` values per document
    RaggedRows     kind "ragged", numbers: a variable-length row per document
    StringRows     kind "ragged", dtype "string": a row of byte strings
    SparseRows     kind "sparse": a row of `width` columns, few of them set

An extraction's rows are a Batch of the spec's kind (DenseBatch,
RaggedBatch, StringBatch, SparseBatch): the core's own buffers, exported
as Arrow C Data (the Arrow PyCapsule interface: `__arrow_c_schema__`,
`__arrow_c_array__`), so pyarrow.array(rows), polars.Series(rows) and
pyarrow.table({"x": rows}) (then duckdb) read them with no copy, one
element per document, a document that failed being null:

    dense    FixedSizeList<dtype>[width]
    ragged   LargeList<dtype>; strings LargeList<LargeBinary>
    sparse   LargeList<Struct<index: int64, value: dtype>>

numpy views of the same buffers: numpy.asarray(dense rows) is the 2-D
array; ragged rows' .values and .row_splits; sparse rows' .values,
.indices, .row_splits (CSR). Code that does something per kind (the TF ops
in rustfx.spec, TFRecord features in rustfx.corpus.tfrecord) implements a
RowsVisitor and calls `rows.accept(visitor, ...)`: every visitor has one
method per kind, all abstract, so a visitor that misses a kind fails when
it is made (the way an exhaustive `match` works in Rust). The two facts
Keras asks for (`ragged`, `sparse`) are attributes each Rows class sets.
No other module compares kind or dtype names.
"""

import abc
import json
import warnings

import numpy as np

from rustfx_core import _abi

# The core's dtype names as numpy's: np.dtype takes each name as it is
# (float32, int64, int32, int16, uint16, uint8), so a new numeric dtype
# needs nothing here; strings have their own Rows (StringRows).
NUMPY_DTYPES = {name: np.dtype(name) for name in
                ("float32", "int64", "int32", "int16", "uint16", "uint8")}


class Rows(abc.ABC):
    """How one spec's rows look: its output's dtype (the core's name) and
    width (None for ragged rows). Made by rows_of; immutable."""

    #: The spec's output "kind".
    kind = None
    #: Whether a row's length varies (a tf.RaggedTensor in TF, a Keras
    #: ragged tensor) or a row is sparse (a tf.SparseTensor).
    ragged = sparse = False
    #: The Batch class of this kind's extracted rows.
    batch_class = None

    def __init__(self, dtype, width):
        self.dtype = dtype
        self.width = width

    def batch(self, handle):
        """The Batch of an extraction's rows (an _abi.RowsHandle)."""
        return self.batch_class(self, handle)

    @abc.abstractmethod
    def accept(self, visitor, *args, **kwargs):
        """visitor.<this kind's method>(self, *args, **kwargs)."""

    def __eq__(self, other):
        return type(other) is type(self) and (other.dtype, other.width) == (self.dtype,
                                                                             self.width)

    def __hash__(self):
        return hash((type(self), self.dtype, self.width))

    def __repr__(self):
        return f"{type(self).__name__}({self.dtype!r}, width={self.width})"


class Batch:
    """One extraction's rows (a row per document) in the core's buffers,
    as Arrow C Data; see the module doc. `len(rows)` is the number of
    documents; `errors` maps each failed document's index to its status
    message (its row is null in Arrow); `spec_json` is the spec (also in
    the Arrow schema's metadata, key "rustfx.spec")."""

    def __init__(self, rows, handle):
        self.rows = rows
        self._handle = handle
        self._exported = _abi.ExportedRows(handle)
        metadata = self._exported.metadata()
        self.spec_json = metadata.get("rustfx.spec")
        self._errors_json = metadata.get("rustfx.errors", "")
        self.errors = {i: message for i, _, message in json.loads(self._errors_json or "[]")}

    @property
    def handle(self):
        """The core's rows (an _abi.RowsHandle): row digests, new exports."""
        return self._handle

    def buffers(self):
        """The exported rows as plain data (format, name, flags, length,
        null count, each buffer's bytes, children): what a pickle holds,
        and a bit-for-bit comparison of two batches."""
        return _abi.exported_tree(self._exported.schema, self._exported.array)

    def __reduce__(self):
        """Pickled as the exported buffers; unpickled into the core again
        (copied, checked whole), so a Batch crosses processes (Ray,
        multiprocessing) as a Batch."""
        return _unpickle_batch, (self.rows, self.spec_json, self._errors_json, self.buffers())

    def __len__(self):
        return self._handle.length

    def __arrow_c_schema__(self):
        schema, array = self._handle.capsules()
        del array
        return schema

    def __arrow_c_array__(self, requested_schema=None):
        """(schema, array) PyCapsules over the core's buffers. A requested
        schema is not honoured (the PyCapsule interface lets a producer
        ignore it); the consumer casts if it must."""
        return self._handle.capsules()

    def _view(self, path, buffer, dtype, count):
        """A numpy view of an exported buffer, made once per batch (rows
        are immutable): indexing a row at a time reads no struct again."""
        key = (path, buffer, np.dtype(dtype), count)
        views = self.__dict__.setdefault("_views", {})
        if key not in views:
            views[key] = self._exported.view(path, buffer, dtype, count)
        return views[key]

    def _row_splits(self):
        return self._view((), 1, np.int64, len(self) + 1)

    def __repr__(self):
        return f"<{type(self).__name__} of {len(self)} documents, {self.rows!r}>"


class _TupleFields:
    """Iteration and indexing as the NamedTuple this batch replaces
    (Ragged, Sparse), with a DeprecationWarning that says what to use."""

    _fields = ()

    def _warn(self):
        names = ", ".join(f".{f}" for f in self._fields)
        warnings.warn(f"{type(self).__name__} is no longer a tuple: use {names} (numpy views), "
                      f"or pyarrow.array(rows) for one element per document",
                      DeprecationWarning, stacklevel=3)

    def __iter__(self):
        self._warn()
        return iter([getattr(self, f) for f in self._fields])

    def __getitem__(self, i):
        self._warn()
        return getattr(self, self._fields[i])


class DenseBatch(Batch):
    """Dense rows: numpy.asarray(rows) is a (documents, width) array over
    the core's buffer. Indexing, iteration, `shape` and `dtype` are the
    array's; other numpy attributes reach it with a DeprecationWarning."""

    def __array__(self, dtype=None, copy=None):
        values = self._view((0,), 1, NUMPY_DTYPES[self.rows.dtype], len(self) * self.rows.width)
        array = values.reshape(len(self), self.rows.width)
        if dtype is not None and np.dtype(dtype) != array.dtype:
            return array.astype(dtype)
        return array.copy() if copy else array

    @property
    def shape(self):
        return (len(self), self.rows.width)

    @property
    def dtype(self):
        return NUMPY_DTYPES[self.rows.dtype]

    def __getitem__(self, key):
        return self.__array__()[key]

    def __iter__(self):
        return iter(self.__array__())

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        array = self.__array__()
        if not hasattr(array, name):
            raise AttributeError(name)
        warnings.warn(f"dense rows are no longer a numpy array: use numpy.asarray(rows)"
                      f".{name} (a view of the same buffer)", DeprecationWarning, stacklevel=2)
        return getattr(array, name)


class RaggedBatch(_TupleFields, Batch):
    """Ragged rows: row i is values[row_splits[i]:row_splits[i + 1]]
    (row_splits int64, one more than the documents, from 0)."""

    _fields = ("values", "row_splits")

    @property
    def row_splits(self):
        return self._row_splits()

    @property
    def values(self):
        return self._view((0,), 1, NUMPY_DTYPES[self.rows.dtype], int(self.row_splits[-1]))


class SparseBatch(_TupleFields, Batch):
    """Sparse rows in CSR form: row i has values[row_splits[i]:row_splits[i
    + 1]] at the columns in indices[...] (int64, sorted and distinct in a
    row); dense_shape is (rows, width). Equal to
    scipy.sparse.csr_matrix((values, indices, row_splits), shape=dense_shape)."""

    _fields = ("values", "indices", "row_splits", "dense_shape")

    @property
    def row_splits(self):
        return self._row_splits()

    @property
    def values(self):
        return self._view((0, 1), 1, NUMPY_DTYPES[self.rows.dtype], int(self.row_splits[-1]))

    @property
    def indices(self):
        return self._view((0, 0), 1, np.int64, int(self.row_splits[-1]))

    @property
    def dense_shape(self):
        return (len(self), self.rows.width)


class StringBatch(Batch):
    """Rows of byte strings: a row per document, each a list of bytes
    (iteration, indexing, to_list() and == with lists are the list's)."""

    def to_list(self):
        """A new list (a row per document) of lists of bytes."""
        return [list(row) for row in self._rows_list()]

    def _rows_list(self):
        """The rows as lists of bytes, made once per batch."""
        if "_list" not in self.__dict__:
            self._list = self._make_list()
        return self._list

    def _make_list(self):
        splits = self._row_splits()
        count = int(splits[-1])
        ends = self._view((0,), 1, np.int64, count + 1)
        data = self._view((0,), 2, np.uint8, int(ends[-1])).tobytes()
        ends = ends.tolist()
        strings = [data[a:b] for a, b in zip(ends[:-1], ends[1:])]
        splits = splits.tolist()
        return [strings[a:b] for a, b in zip(splits[:-1], splits[1:])]

    def __iter__(self):
        return iter(self.to_list())

    def __getitem__(self, i):
        row = self._rows_list()[i]
        return [list(r) for r in row] if isinstance(i, slice) else list(row)

    def __eq__(self, other):
        if isinstance(other, StringBatch):
            other = other._rows_list()
        return self._rows_list() == other

    __hash__ = None


class DenseRows(Rows):
    kind = "dense"
    batch_class = DenseBatch

    def accept(self, visitor, *args, **kwargs):
        return visitor.dense(self, *args, **kwargs)


class RaggedRows(Rows):
    kind = "ragged"
    ragged = True
    batch_class = RaggedBatch

    def accept(self, visitor, *args, **kwargs):
        return visitor.ragged(self, *args, **kwargs)


class StringRows(Rows):
    kind = "ragged"
    ragged = True
    batch_class = StringBatch

    def accept(self, visitor, *args, **kwargs):
        return visitor.strings(self, *args, **kwargs)


class SparseRows(Rows):
    kind = "sparse"
    sparse = True
    batch_class = SparseBatch

    def accept(self, visitor, *args, **kwargs):
        return visitor.sparse(self, *args, **kwargs)


def rows_of(output):
    """The Rows of a spec's "output" dict (as the core completes it)."""
    kind, dtype, (width,) = output["kind"], output["dtype"], output["shape"]
    if kind == "dense":
        return DenseRows(dtype, width)
    if kind == "sparse":
        return SparseRows(dtype, width)
    if kind == "ragged":
        return StringRows(dtype, None) if dtype == "string" else RaggedRows(dtype, None)
    raise ValueError(f"an output kind this rustfx_core does not know: {kind!r} "
                     "(a newer core library than this Python package?)")


class RowsVisitor(abc.ABC):
    """Something done per output kind: Rows.accept(visitor, *args) calls the
    method of the rows' kind with the Rows first. Every method is abstract:
    a subclass that misses one cannot be instantiated."""

    @abc.abstractmethod
    def dense(self, rows, *args, **kwargs):
        """DenseRows."""

    @abc.abstractmethod
    def ragged(self, rows, *args, **kwargs):
        """RaggedRows (numbers)."""

    @abc.abstractmethod
    def strings(self, rows, *args, **kwargs):
        """StringRows."""

    @abc.abstractmethod
    def sparse(self, rows, *args, **kwargs):
        """SparseRows."""


def _unpickle_batch(rows, spec_json, errors_json, tree):
    return rows.batch(_abi.rows_from_tree(spec_json, errors_json, tree))


#: The old names of ragged and sparse rows (NamedTuples before the Arrow
#: form): isinstance checks keep working.
Ragged = RaggedBatch
Sparse = SparseBatch
