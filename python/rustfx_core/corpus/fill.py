"""A feature cache filled from a corpus job's Parquet shards
(`FeatureCache.fill_from_corpus`; docs/stalls.md, "Filling it from a
corpus job"): features extracted on a cluster are what training reads.

Each shard row that was read (status 0) has the content key of the bytes
extracted (`content_key`: their BLAKE3) and, per feature column, the core's
rows for its spec; they are stored under that key and the spec's digest,
the key the cache gives the same bytes in training (the same `max_bytes`: a file truncated
otherwise has another digest, and is a miss, never wrong). The rows are
checked whole against the spec in Rust before they are stored. Needs
pyarrow (rustfx[ray]).
"""

import numpy as np
import pyarrow.compute as pc

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
    rows stored (per feature column), rows skipped (not read: no features)."""
    out_dir = OutputDir(output)
    found, _ = load_feature_set(out_dir)
    stored = skipped = shards = 0
    for name, table in parquet_tables(out_dir, found):
        shards += 1
        if "content_key" not in table.column_names:
            # Shards of a rustfx before the cache's BLAKE3 keys: their
            # sha256 is not the key training looks up.
            raise ValueError(f"{out_dir.location(name)}: this shard has no content_key column (written by an "
                             f"older rustfx): run the corpus job again to fill a cache from it")
        ok = pc.equal(table.column("status"), 0)
        skipped += len(table) - pc.sum(ok).as_py() if len(table) else 0
        table = table.filter(ok)
        for start in range(0, len(table), CHUNK):
            part = table.slice(start, CHUNK)
            digests = b"".join(bytes.fromhex(h) for h in part.column("content_key").to_pylist())
            for column, spec in found.features.items():
                cache.put_rows(spec, digests, spec.rows.accept(_FROM_ARROW, part, column))
                stored += len(part)
    return {"rows": stored, "skipped": skipped, "shards": shards}


__all__ = ["fill", "CHUNK"]
