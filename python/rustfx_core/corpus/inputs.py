"""A corpus job's inputs: listing INPUT, reading URIs, cutting read batches.

Local paths are read by the core (rustfx_core.Documents, read_files'
rules) where the rows are made (rustfx_core.corpus.rows); URIs of other
filesystems are read here, through pyarrow.
"""

import glob
import os
import stat

import numpy as np
from pyarrow import fs as pafs

from rustfx_core._abi import STATUS_CODES

#: A worker reads a shard's files in read batches of at most
#: DEFAULT_READ_BATCH_BYTES of expected contents and MAX_READ_BATCH_FILES
#: files (read_batches).
DEFAULT_READ_BATCH_BYTES = 256 << 20
MAX_READ_BATCH_FILES = 256

# The status of a file read through pyarrow, by its exception (the core's
# codes: the read_files op's for the same failure).
_STATUS_OF = ((FileNotFoundError, STATUS_CODES["NOT_FOUND"]),
              (PermissionError, STATUS_CODES["PERMISSION_DENIED"]),
              (IsADirectoryError, STATUS_CODES["INVALID_ARGUMENT"]),
              (Exception, STATUS_CODES["UNKNOWN"]))


def is_uri(path):
    """Whether `path` (str or bytes) is a URI (`scheme://...`)."""
    return (b"://" if isinstance(path, bytes) else "://") in path


def list_inputs(spec):
    """The sorted, de-duplicated paths INPUT names: a directory (every
    non-directory entry below it, links not followed), a glob, a text file
    with one path per line (taken as they are: a listed directory becomes
    an error row), or a URI (`file://`, `s3://`, ...) of a directory or
    file, listed through pyarrow's filesystems. Relative local
    paths are made absolute (not normalised). Paths are str as os.listdir
    gives them: a name that is not UTF-8 holds its bytes as surrogates
    (os.fsencode gives them back), a list file's lines too."""
    if is_uri(spec):
        return _list_uri(spec)
    if os.path.isdir(spec):
        found = []
        for root, dirs, names in os.walk(spec):
            dirs.sort()
            found.extend(os.path.join(root, n) for n in names)
        paths = found
    elif any(c in spec for c in "*?["):
        paths = [p for p in glob.glob(spec, recursive=True) if not os.path.isdir(p)]
    elif os.path.isfile(spec):
        with open(spec, "rb") as f:  # a path is bytes, UTF-8 or not
            paths = [os.fsdecode(line.rstrip(b"\n")) for line in f if line.strip()]
    else:
        raise FileNotFoundError(f"--input {spec!r}: no such directory or list file, "
                                f"and no glob matches")
    # Made absolute for the workers, but not normalised: 'file/' is not 'file'.
    cwd = os.getcwd()
    return sorted({p if os.path.isabs(p) else os.path.join(cwd, p) for p in paths})


def _list_uri(uri):
    filesystem, base = pafs.FileSystem.from_uri(uri)
    scheme = uri.split("://", 1)[0]
    info = filesystem.get_file_info(base)
    if info.type == pafs.FileType.Directory:
        infos = filesystem.get_file_info(pafs.FileSelector(base, recursive=True))
        found = [i.path for i in infos if i.type != pafs.FileType.Directory]
    elif info.type == pafs.FileType.File:
        found = [base]
    else:
        raise FileNotFoundError(f"--input {uri!r} does not exist")
    return sorted({f"{scheme}://{p}" for p in found})


def read_uris(uris, max_bytes):
    """(contents, codes, messages) of URIs read through pyarrow (remote
    storage): at most max_bytes of each; a failure is b"" with its status
    code (NOT_FOUND, PERMISSION_DENIED, INVALID_ARGUMENT for what is not a
    regular file, else UNKNOWN) and message."""
    contents, codes, messages = [], [], []
    for uri in uris:
        try:
            filesystem, path = pafs.FileSystem.from_uri(uri)
            info = filesystem.get_file_info(path)
            if info.type == pafs.FileType.NotFound:
                raise FileNotFoundError(f"{uri}: no such file")
            if info.type != pafs.FileType.File:
                raise IsADirectoryError(f"{uri}: not a regular file")
            with filesystem.open_input_stream(path) as f:
                data = f.read(max_bytes)
            contents.append(data)
            codes.append(STATUS_CODES["OK"])
            messages.append("")
        except Exception as e:  # noqa: BLE001 - any failure is this file's error row
            contents.append(b"")
            codes.append(next(code for kind, code in _STATUS_OF if isinstance(e, kind)))
            messages.append(str(e) or type(e).__name__)
    return contents, np.array(codes, np.int32), messages


def read_batches(paths, max_bytes, read_batch_bytes=None):
    """Cuts `paths` into read batches, in order. A file is expected to give
    min(its size, max_bytes) bytes (max_bytes if it is not a local regular
    file: a URI, a device, a /proc file, a path that stat cannot see); a
    batch holds at most MAX_READ_BATCH_FILES files whose expected bytes add
    up to at most read_batch_bytes (or one file). So a worker, which holds
    one batch of contents at a time, holds at most read_batch_bytes of
    them, and never more than MAX_READ_BATCH_FILES * max_bytes even if
    files grow between this stat and their read (read_files never reads
    more than max_bytes of a file)."""
    budget = DEFAULT_READ_BATCH_BYTES if read_batch_bytes is None else read_batch_bytes
    batch, held = [], 0
    for path in paths:
        expected = max_bytes
        if not is_uri(path):
            try:
                info = os.stat(path)
                if stat.S_ISREG(info.st_mode):
                    expected = min(info.st_size, max_bytes)
            except (OSError, ValueError):
                pass
        if batch and (held + expected > budget or len(batch) == MAX_READ_BATCH_FILES):
            yield batch
            batch, held = [], 0
        batch.append(path)
        held += expected
    if batch:
        yield batch
