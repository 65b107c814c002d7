"""A feature cache filled from a corpus job's Parquet shards
(`FeatureCache.fill_from_corpus`; docs/feature_cache.md, "Filling it from a
corpus job"): features extracted on a cluster are what training reads.

Each shard row that was read (status 0) has the content key of the bytes
extracted (`content_key`: their BLAKE3) and, per feature column, the core's
rows for its spec; they are stored under that key and the spec's digest,
the key the cache gives the same bytes in training (the same `max_bytes`: a file truncated
otherwise has another digest, and is a miss, never wrong).

The trust model: a shard is stored only as the corpus job wrote it. Each
row carries a row digest per feature (`<column>_digest`: BLAKE3 of the
spec's digest, the content key and the row's bytes, computed by the job
right after extraction); the fill recomputes every one before it stores
any row of the shard, and refuses the shard if one differs: an edited
value or content key, a truncated or bit-rotted file, is never served.
The rows are also checked whole against the spec in Rust. A digest is not
a signature: whoever can run rustfx can write a shard with matching
digests, as they could write the cache's directory. Needs pyarrow
(rustfx[ray]).
"""

import os

import numpy as np
import pyarrow.compute as pc

from rustfx_core.cache import row_digests
from rustfx_core.corpus.arrow import digest_column
from rustfx_core.corpus.shards import OutputDir, load_feature_set, parquet_tables
from rustfx_core.outputs import _NUMPY_DTYPES, Ragged, RowsVisitor, Sparse, Strings

#: Rows stored per transaction.
CHUNK = 1024


def _row_splits(lists):
    return np.concatenate([[0], np.cumsum(lists.value_lengths().to_numpy(zero_copy_only=False))]
                          ).astype(np.int64)


def _values(array, dtype):
    return np.asarray(array.to_numpy(zero_copy_only=False), _NUMPY_DTYPES[dtype])


class _FromArrow(RowsVisitor):
    """A feature's rows in Rows.convert's form, from its Arrow column(s) of
    rows that were read (no nulls)."""

    def dense(self, rows, table, column):
        lists = table.column(column).combine_chunks()
        return _values(lists.flatten(), rows.dtype).reshape(len(lists), rows.width)

    def ragged(self, rows, table, column):
        lists = table.column(column).combine_chunks()
        return Ragged(_values(lists.flatten(), rows.dtype), _row_splits(lists))

    def strings(self, rows, table, column):
        lists = table.column(column).combine_chunks()
        strings = lists.flatten().to_pylist()
        ends = np.cumsum([len(s) for s in strings], dtype=np.int64)
        return Strings(np.frombuffer(b"".join(strings), np.uint8), ends, _row_splits(lists))

    def sparse(self, rows, table, column):
        indices = table.column(column + "_indices").combine_chunks()
        values = table.column(column + "_values").combine_chunks()
        return Sparse(_values(values.flatten(), rows.dtype),
                      np.asarray(indices.flatten().to_numpy(zero_copy_only=False), np.int64),
                      _row_splits(indices), (len(indices), rows.width))


_FROM_ARROW = _FromArrow()


def fill(cache, output):
    """Stores every read row of OUT's Parquet shards in `cache` (a
    rustfx_core.FeatureCache); returns {"rows", "skipped", "shards"}:
    rows stored (per feature column), rows skipped (not read: no features).
    A shard is checked whole before any of its rows is stored: ValueError
    naming it if any row does not match its row digest (nothing of it is
    stored; the shards before it are)."""
    out_dir = OutputDir(output)
    found, _ = load_feature_set(out_dir)
    stored = skipped = shards = 0
    for name, table in parquet_tables(out_dir, found):
        shards += 1
        where = out_dir.location(name)
        for needed in ["content_key"] + [digest_column(c) for c in found.features]:
            if needed not in table.column_names:
                # Shards of an older rustfx: their sha256 is not the key
                # training looks up, and their rows carry no digests.
                raise ValueError(f"{where}: this shard has no {needed} column (written by an "
                                 f"older rustfx): run the corpus job again to fill a cache "
                                 f"from it")
        ok = pc.equal(table.column("status"), 0)
        skipped += len(table) - pc.sum(ok).as_py() if len(table) else 0
        table = table.filter(ok)
        _check_digests(where, table, found)
        for part, digests, column, spec, rows in _chunks(table, found):
            cache.put_rows(spec, digests, rows)
            stored += len(part)
    return {"rows": stored, "skipped": skipped, "shards": shards}


def _chunks(table, found):
    """(part, content keys, column, spec, rows) of each CHUNK rows of
    `table` and each feature column."""
    for start in range(0, len(table), CHUNK):
        part = table.slice(start, CHUNK)
        keys = part.column("content_key").to_pylist()
        if None in keys:
            raise ValueError("a read row without a content_key")
        digests = b"".join(bytes.fromhex(k) for k in keys)
        for column, spec in found.features.items():
            yield part, digests, column, spec, spec.rows.accept(_FROM_ARROW, part, column)


def _check_digests(where, table, found):
    """ValueError naming the shard (`where`) if any row of `table` does not
    match its row digest (the rows as the cache would store them, under the
    row's content key and the feature's spec)."""
    bad, first = 0, None
    for part, digests, column, spec, rows in _chunks(table, found):
        expected = part.column(digest_column(column)).to_pylist()
        actual = row_digests(spec, digests, rows)
        for i, want in enumerate(expected):
            if want != actual[32 * i:32 * (i + 1)]:
                bad += 1
                first = first or (column, part.column("path")[i].as_py())
    if bad:
        column, path = first
        raise ValueError(
            f"{where}: {bad} row(s) do not match their row digest (first: {column} of "
            f"{os.fsdecode(path)!r}): the shard was changed after the corpus job wrote it; "
            f"nothing of it was stored. Run the corpus job again for its files")


__all__ = ["fill", "CHUNK"]
