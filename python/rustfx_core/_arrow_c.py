"""The Arrow C Data Interface from Python (arrow.apache.org/docs/format/
CDataInterface.html): the structs, the PyCapsules of exported rows
(RowsHandle.capsules), the exports this package reads for numpy views
(ExportedRows), and rows as plain data for pickling (exported_tree,
rows_from_tree). Through the core's C ABI only (rustfx_core._library)."""

import ctypes

import numpy as np

from rustfx_core._library import lib, taken_message

# The spec's structs, read here for numpy views of exported rows and
# filled here for Documents.of's buffers.
class ArrowSchema(ctypes.Structure):
    pass


class ArrowArray(ctypes.Structure):
    pass


ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowSchema))),
    ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p)]
ArrowArray._fields_ = [
    ("length", ctypes.c_int64), ("null_count", ctypes.c_int64), ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64), ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowArray))),
    ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p)]

def binary_structs(data, offsets):
    """An ArrowSchema and ArrowArray of large_binary over `data` (bytes)
    and `offsets` (int64, N+1): the core moves the array in and calls its
    release, which does nothing (the caller keeps both buffers)."""
    library = lib()
    schema = ArrowSchema(format=b"Z", name=b"", flags=2)
    # Release callbacks that only mark the struct released: the caller
    # keeps the buffers.
    schema.release = ctypes.cast(library.rustfx_arrow_release_borrowed_schema, ctypes.c_void_p)
    buffers = (ctypes.c_void_p * 3)(None, offsets.ctypes.data,
                                    ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p))
    array = ArrowArray(length=len(offsets) - 1, null_count=0, offset=0, n_buffers=3,
                       n_children=0, buffers=buffers)
    array.release = ctypes.cast(library.rustfx_arrow_release_borrowed_array, ctypes.c_void_p)
    # The buffer pointers must outlive the call: kept on the struct.
    array._buffers = buffers
    return schema, array


_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def capsule_pointer(capsule, name):
    """The struct in a PyCapsule of `name` (ValueError from CPython if it
    is not one)."""
    return _PyCapsule_GetPointer(capsule, name)


class RowsHandle:
    """One extraction's rows in the core (crates/rustfx-capi, rows.rs),
    freed when the last Python reference goes; every export holds its own
    share of the buffers, so capsules and arrays outlive it."""

    def __init__(self, handle):
        self._handle = handle
        self._free = lib().rustfx_rows_free
        self.length = lib().rustfx_rows_len(handle)

    @classmethod
    def taken(cls, handle, message):
        """The handle an entry point returned, or RuntimeError with its
        message."""
        if not handle:
            raise RuntimeError(taken_message(message))
        return cls(handle)

    def __del__(self):
        if getattr(self, "_handle", None):
            self._free(self._handle)
            self._handle = None

    def export(self):
        """(ArrowSchema pointer, ArrowArray pointer): a new export, each to
        be freed by rustfx_arrow_*_free or owned by a capsule."""
        schema, array, message = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        if not lib().rustfx_rows_export(self._handle, ctypes.byref(schema), ctypes.byref(array),
                                        ctypes.byref(message)):
            raise RuntimeError(taken_message(message))
        return schema.value, array.value

    def capsules(self):
        """(schema capsule, array capsule) of a new export, by the PyCapsule
        interface's rules: each destructor releases its struct unless a
        consumer moved it out, then frees it."""
        library = lib()
        schema, array = self.export()
        return (_PyCapsule_New(schema, library.rustfx_arrow_capsule_name(0),
                               ctypes.cast(library.rustfx_arrow_schema_capsule_free,
                                           ctypes.c_void_p)),
                _PyCapsule_New(array, library.rustfx_arrow_capsule_name(1),
                               ctypes.cast(library.rustfx_arrow_array_capsule_free,
                                           ctypes.c_void_p)))

    def digests(self, keys):
        """The row digest of each row (32 bytes each, end to end, as bytes)
        under the documents' content keys (`keys`: 32 bytes each)."""
        out = ctypes.create_string_buffer(32 * self.length)
        message = ctypes.c_void_p()
        if not lib().rustfx_rows_digests(self._handle, keys, out, ctypes.byref(message)):
            raise ValueError(taken_message(message))
        return out.raw


class ExportedRows:
    """An export of a RowsHandle that Python keeps for itself, to read its
    buffers as numpy arrays (views of the core's memory, which each view
    keeps alive through this object). Released when the last view goes."""

    def __init__(self, handle):
        self._schema_address, self._array_address = handle.export()
        self.schema = ArrowSchema.from_address(self._schema_address)
        self.array = ArrowArray.from_address(self._array_address)
        self._free_schema = lib().rustfx_arrow_schema_free
        self._free_array = lib().rustfx_arrow_array_free

    def __del__(self):
        if getattr(self, "_array_address", None):
            self._free_array(self._array_address)
            self._free_schema(self._schema_address)
            self._array_address = None

    def metadata(self):
        """The top-level schema's metadata, {str: str}."""
        pointer = self.schema.metadata
        if not pointer:
            return {}
        raw = ctypes.string_at(pointer, 4)
        count = int.from_bytes(raw, "little" if np.little_endian else "big", signed=True)
        at, pairs = pointer + 4, {}
        for _ in range(count):
            key, at = _metadata_text(at)
            value, at = _metadata_text(at)
            pairs[key] = value
        return pairs

    def view(self, path, buffer, dtype, count):
        """Buffer `buffer` of the array at `path` (child indices from the
        top) as a 1-D numpy array of `count` values of `dtype`, over the
        core's memory."""
        array = self.array
        for child in path:
            array = array.children[child].contents
        address = array.buffers[buffer]
        nbytes = count * np.dtype(dtype).itemsize
        if not nbytes:
            return np.zeros(0, dtype)
        memory = (ctypes.c_char * nbytes).from_address(address)
        memory.keep = self
        return np.frombuffer(memory, dtype)


# Bytes per value of each primitive Arrow format the export uses.
_ITEM_BYTES = {b"f": 4, b"l": 8, b"i": 4, b"s": 2, b"S": 2, b"C": 1}


def exported_tree(schema, array):
    """The exported rows (an ArrowSchema and ArrowArray, offset 0 as the
    export makes them) as plain data: (format, name, flags, length,
    null_count, [buffers as bytes or None], [children]), for pickling."""
    format, length = schema.format, array.length
    sizes = [(length + 7) // 8]
    if format == b"+L":
        sizes.append(8 * (length + 1))
    elif format == b"Z":
        end = ctypes.c_int64.from_address(array.buffers[1] + 8 * length).value
        sizes += [8 * (length + 1), end]
    elif format in _ITEM_BYTES:
        sizes.append(_ITEM_BYTES[format] * length)
    buffers = [ctypes.string_at(array.buffers[i], size) if array.buffers[i] else None
               for i, size in enumerate(sizes)]
    children = [exported_tree(schema.children[i].contents, array.children[i].contents)
                for i in range(array.n_children)]
    return (format, schema.name, schema.flags, length, array.null_count, buffers, children)


def _structs(tree, keep):
    """ArrowSchema and ArrowArray over `tree` (exported_tree's), whose
    objects go to `keep` (alive while the core reads them)."""
    format, name, flags, length, null_count, buffers, children = tree
    library = lib()
    built = [_structs(child, keep) for child in children]
    schema_children = (ctypes.POINTER(ArrowSchema) * len(built))(
        *[ctypes.pointer(s) for s, _ in built])
    array_children = (ctypes.POINTER(ArrowArray) * len(built))(
        *[ctypes.pointer(a) for _, a in built])
    raw = (ctypes.c_void_p * len(buffers))(*[
        ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p).value if b is not None else None
        for b in buffers])
    schema = ArrowSchema(format=format, name=name, flags=flags, n_children=len(built),
                         children=schema_children)
    schema.release = ctypes.cast(library.rustfx_arrow_release_borrowed_schema, ctypes.c_void_p)
    array = ArrowArray(length=length, null_count=null_count, offset=0, n_buffers=len(buffers),
                       n_children=len(built), buffers=raw, children=array_children)
    array.release = ctypes.cast(library.rustfx_arrow_release_borrowed_array, ctypes.c_void_p)
    keep.extend([built, schema_children, array_children, raw, buffers])
    return schema, array


def rows_from_tree(spec_json, errors_json, tree):
    """A RowsHandle of rows copied into the core from exported_tree's data
    (an unpickled Batch), checked whole by the core."""
    keep = []
    schema, array = _structs(tree, keep)
    spec, errors = spec_json.encode(), errors_json.encode()
    message = ctypes.c_void_p()
    handle = lib().rustfx_rows_from_arrow(spec, len(spec), errors, len(errors),
                                          ctypes.byref(schema), ctypes.byref(array),
                                          ctypes.byref(message))
    return RowsHandle.taken(handle, message)


def _metadata_text(at):
    length = int.from_bytes(ctypes.string_at(at, 4), "little" if np.little_endian else "big",
                            signed=True)
    return ctypes.string_at(at + 4, length).decode("utf-8"), at + 4 + length
