"""Output kinds: the one place in Python that tells them apart.

A spec's "output" ({"kind", "dtype", "shape"}, as the core completes it)
becomes one of four Rows classes, here and nowhere else (rows_of):

    DenseRows      kind "dense": a row of `width` values per document
    RaggedRows     kind "ragged", numbers: a variable-length row per document
    StringRows     kind "ragged", dtype "string": a row of byte strings
    SparseRows     kind "sparse": a row of `width` columns, few of them set

Each converts the C ABI's buffers of one extraction into numpy (`convert`)
and gives the public form of it (`public`, what rustfx_core.extract
returns: see its doc). Code that does something per kind (the TF ops in
rustfx.spec, Arrow columns in rustfx_core.corpus.arrow, TFRecord features
in rustfx.corpus.tfrecord) implements a RowsVisitor and calls
`rows.accept(visitor, ...)`: every visitor has one method per kind, all
abstract, so a visitor that misses a kind fails when it is made, and a new
kind is one class here plus one method per visitor (the way an exhaustive
`match` on an enum works in Rust: tokenizers' wrapper enums). The two
facts Keras asks for (`ragged`, `sparse`: rustfx.layers, rustfx.sensor)
are attributes each class sets. No other module compares kind or dtype
names.
"""

import abc
from typing import NamedTuple

import numpy as np

from rustfx_core import _abi

# The core's dtype names as numpy's: np.dtype takes each name as it is
# (float32, int64, int32, int16, uint16, uint8), so a new numeric dtype
# needs nothing here; strings have their own Rows (StringRows).
_NUMPY_DTYPES = {name: np.dtype(name) for name in
                 ("float32", "int64", "int32", "int16", "uint16", "uint8")}


class Ragged(NamedTuple):
    """Variable-length rows: row i is values[row_splits[i]:row_splits[i + 1]]
    (row_splits: int64, one more than the rows, from 0)."""
    values: np.ndarray
    row_splits: np.ndarray


class Sparse(NamedTuple):
    """Sparse rows in CSR form: row i has values[row_splits[i]:row_splits[i
    + 1]] at the columns in indices[...] (int64, sorted and distinct in a
    row); dense_shape is (rows, width). Equal to
    scipy.sparse.csr_matrix((values, indices, row_splits), shape=dense_shape)."""
    values: np.ndarray
    indices: np.ndarray
    row_splits: np.ndarray
    dense_shape: tuple


class Strings(NamedTuple):
    """Rows of byte strings as buffers (StringRows.convert): the strings'
    bytes end to end in `data` (uint8), where each ends in it in
    `string_ends` (int64), and row i is strings row_splits[i] to
    row_splits[i + 1] (int64). `to_list()` gives lists of bytes."""
    data: np.ndarray
    string_ends: np.ndarray
    row_splits: np.ndarray

    def to_list(self):
        data, ends = self.data.tobytes(), self.string_ends.tolist()
        strings = [data[start:end] for start, end in zip([0] + ends[:-1], ends)]
        return [strings[a:b] for a, b in zip(self.row_splits[:-1].tolist(),
                                             self.row_splits[1:].tolist())]


class Rows(abc.ABC):
    """How one spec's rows look: its output's dtype (the core's name) and
    width (None for ragged rows). Made by rows_of; immutable."""

    #: The spec's output "kind".
    kind = None
    #: Whether a row's length varies (a tf.RaggedTensor in TF, a Keras
    #: ragged tensor) or a row is sparse (a tf.SparseTensor).
    ragged = sparse = False

    def __init__(self, dtype, width):
        self.dtype = dtype
        self.width = width

    @abc.abstractmethod
    def convert(self, buffers):
        """The rows of an extraction as numpy (`buffers`: _abi.OutputBuffers)."""

    def public(self, result):
        """`result` (convert's) as rustfx_core.extract returns it."""
        return result

    def empty(self):
        """convert's result for no documents."""
        return self.convert(_NoBuffers())

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


class DenseRows(Rows):
    kind = "dense"

    def convert(self, buffers):
        """A 2-D array (documents, width) of the dtype."""
        values = buffers.array(_abi.VALUES, _NUMPY_DTYPES[self.dtype])
        return values.reshape(buffers.documents, self.width)

    def accept(self, visitor, *args, **kwargs):
        return visitor.dense(self, *args, **kwargs)


class RaggedRows(Rows):
    kind = "ragged"
    ragged = True

    def convert(self, buffers):
        """Ragged(values, row_splits)."""
        return Ragged(buffers.array(_abi.VALUES, _NUMPY_DTYPES[self.dtype]),
                      buffers.array(_abi.ROW_SPLITS, np.int64))

    def accept(self, visitor, *args, **kwargs):
        return visitor.ragged(self, *args, **kwargs)


class StringRows(Rows):
    kind = "ragged"
    ragged = True

    def convert(self, buffers):
        """Strings(data, string_ends, row_splits)."""
        return Strings(buffers.array(_abi.VALUES, np.uint8),
                       buffers.array(_abi.STRING_ENDS, np.int64),
                       buffers.array(_abi.ROW_SPLITS, np.int64))

    def public(self, result):
        """A list (a row per document) of lists of bytes."""
        return result.to_list()

    def accept(self, visitor, *args, **kwargs):
        return visitor.strings(self, *args, **kwargs)


class SparseRows(Rows):
    kind = "sparse"
    sparse = True

    def convert(self, buffers):
        """Sparse(values, indices, row_splits, dense_shape)."""
        return Sparse(buffers.array(_abi.VALUES, _NUMPY_DTYPES[self.dtype]),
                      buffers.array(_abi.INDICES, np.int64),
                      buffers.array(_abi.ROW_SPLITS, np.int64),
                      (buffers.documents, self.width))

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


class _NoBuffers:
    """The buffers of an extraction of no documents."""

    documents = 0

    def array(self, which, dtype):
        return np.zeros(1 if which == _abi.ROW_SPLITS else 0, dtype)
