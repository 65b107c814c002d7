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

import pyarrow as pa
import pyarrow.compute as pc

from rustfx_core.corpus.arrow import digest_column
from rustfx_core.corpus.shards import OutputDir, load_feature_set, parquet_tables
from rustfx_core.digests import row_digests

#: Rows stored per transaction.
CHUNK = 1024


def _rows(part, column, spec):
    """Feature `column`'s rows of `part` as one Arrow array in the layout
    the core exports (rustfx_core.outputs), which the core reads with no
    Python pass per row: the shard's column as it is, or for sparse rows
    the two columns joined back into large_list<struct<index, value>> (no
    copy: the struct's fields under the indices' offsets)."""
    if not spec.rows.sparse:
        return part.column(column).combine_chunks()
    indices = part.column(column + "_indices").combine_chunks()
    values = part.column(column + "_values").combine_chunks()
    entries = pa.StructArray.from_arrays([indices.values, values.values],
                                         names=["index", "value"])
    return pa.LargeListArray.from_arrays(indices.offsets, entries)


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
        # One pass builds each chunk's rows (views of the shard's columns):
        # checked whole first, then stored.
        chunks = list(_chunks(table.filter(ok), found))
        _check_digests(where, chunks)
        for part, digests, column, spec, rows in chunks:
            cache.put_rows(spec, digests, rows)
            stored += len(part)
    return {"rows": stored, "skipped": skipped, "shards": shards}


def _chunks(table, found):
    """(part, content keys, column, spec, rows) of each CHUNK rows of
    `table` and each feature column."""
    for start in range(0, len(table), CHUNK):
        part = table.slice(start, CHUNK)
        keys = part.column("content_key")
        if keys.null_count:
            raise ValueError("a read row without a content_key")
        digests = bytes.fromhex("".join(keys.to_pylist()))
        for column, spec in found.features.items():
            yield part, digests, column, spec, _rows(part, column, spec)


def _check_digests(where, chunks):
    """ValueError naming the shard (`where`) if any row of its `chunks`
    (_chunks') does not match its row digest (the rows as the cache would
    store them, under the row's content key and the feature's spec)."""
    bad, first = 0, None
    for part, digests, column, spec, rows in chunks:
        expected = part.column(digest_column(column)).combine_chunks()
        actual = pa.Array.from_buffers(pa.binary(32), len(part),
                                       [None, pa.py_buffer(row_digests(spec, digests, rows))])
        differ = pc.invert(pc.fill_null(pc.equal(expected, actual), False))
        count = pc.sum(differ).as_py() or 0
        if count:
            bad += count
            i = pc.index(differ, True).as_py()
            first = first or (column, part.column("path")[i].as_py())
    if bad:
        column, path = first
        raise ValueError(
            f"{where}: {bad} row(s) do not match their row digest (first: {column} of "
            f"{os.fsdecode(path)!r}): the shard was changed after the corpus job wrote it; "
            f"nothing of it was stored. Run the corpus job again for its files")


__all__ = ["fill", "CHUNK"]
