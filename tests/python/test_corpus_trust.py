"""What a corpus shard is trusted with (docs/feature_cache.md, "What is trusted"):
the feature cache stores a shard's rows only if each matches the row
digest the corpus job wrote beside it, and refuses the whole shard
otherwise; and lists have 64-bit offsets, so a shard of long ragged rows
past 2^31 values does not wrap (docs/corpus.md, "Output")."""

import glob
import os
import shutil

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray[data]==2.60.*')")
pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
pq = pytest.importorskip("pyarrow.parquet")

import tensorflow as tf  # noqa: E402

import rustfx  # noqa: E402
import rustfx_core  # noqa: E402
from rustfx import corpus  # noqa: E402
from rustfx_core.digests import row_digests  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A dense, a ragged and a strings column: the digests of each layout.
FEATURES = {"features": {
    "byte_histogram": {"extractor": "byte_histogram"},
    "ngram_ids": {"extractor": "hashed_ngrams",
                  "params": {"num_buckets": 4096, "output": "ragged", "tokenizer": "word"}},
    "strings": {"extractor": "printable_strings"},
}}


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """A corpus job's Parquet output (2 shards of 20 files) and its files."""
    root = tmp_path_factory.mktemp("trust")
    files = sorted(glob.glob(os.path.join(ROOT, "python/**/*.py"), recursive=True))[:40]
    assert len(files) == 40
    listing = root / "paths.txt"
    listing.write_text("".join(f + "\n" for f in files))
    out = str(root / "out")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        corpus.run(FEATURES, str(listing), out, fmt="parquet", shard_size=20)
    finally:
        ray.shutdown()
    return out, files


def _tampered(out, tmp_path, change):
    """A copy of `out` whose first shard is `change(table)`, written back
    with its schema (and so its metadata)."""
    copy = tmp_path / "tampered"
    shutil.copytree(out, copy)
    shard = sorted(glob.glob(str(copy / "**" / "*.parquet"), recursive=True))[0]
    table = pq.read_table(shard)
    pq.write_table(change(table).cast(table.schema), shard)
    return str(copy)


def _served(cache_dir, files, spec):
    """The rows rustfx.files(cache=) gives in training, and the cache's
    stats in this process."""
    cache = rustfx.FeatureCache(str(cache_dir))
    rows = rustfx.byte_histogram(rustfx.files(tf.constant(files), cache=cache))
    return rows.numpy(), cache.stats()


def test_a_job_s_shards_fill_and_every_row_matches_its_digest(shards, tmp_path):
    out, files = shards
    cache = rustfx_core.FeatureCache(tmp_path / "cache")
    assert cache.fill_from_corpus(out) == {"rows": 3 * len(files), "skipped": 0, "shards": 2}
    want = rustfx_core.extract(FEATURES["features"]["byte_histogram"],
                               rustfx_core.read_files(files))
    got, stats = _served(tmp_path / "cache", files, FEATURES["features"]["byte_histogram"])
    assert stats["hits"] == len(files) and stats["misses"] == 0
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


def test_a_changed_feature_value_refuses_the_shard(shards, tmp_path):
    out, files = shards

    def flip(table):
        rows = table.column("byte_histogram").to_pylist()
        rows[3] = [v + 0.25 if j == 7 else v for j, v in enumerate(rows[3])]
        return table.set_column(table.column_names.index("byte_histogram"), "byte_histogram",
                                pa.array(rows, table.schema.field("byte_histogram").type))

    bad = _tampered(out, tmp_path, flip)
    cache = rustfx_core.FeatureCache(tmp_path / "cache")
    with pytest.raises(ValueError, match=r"part-00000.*1 row\(s\) do not match their row "
                                         r"digest \(first: byte_histogram of .*nothing of it"):
        cache.fill_from_corpus(bad)
    assert cache.stats()["entries"] == 0  # the first shard: nothing stored
    # Training extracts what the shard lied about: the core's rows.
    want = rustfx_core.extract(FEATURES["features"]["byte_histogram"],
                               rustfx_core.read_files(files))
    got, stats = _served(tmp_path / "cache", files, FEATURES["features"]["byte_histogram"])
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes() and stats["hits"] == 0


def test_content_keys_swapped_between_rows_refuse_the_shard(shards, tmp_path):
    out, _ = shards

    def swap(table):
        keys = table.column("content_key").to_pylist()
        keys[0], keys[1] = keys[1], keys[0]
        return table.set_column(table.column_names.index("content_key"), "content_key",
                                pa.array(keys, pa.string()))

    cache = rustfx_core.FeatureCache(tmp_path / "cache")
    # Both rows of each of the three features.
    with pytest.raises(ValueError, match=r"6 row\(s\) do not match"):
        cache.fill_from_corpus(_tampered(out, tmp_path, swap))
    assert cache.stats()["entries"] == 0


def test_a_shard_without_row_digests_is_refused(shards, tmp_path):
    out, _ = shards
    bad = _tampered(out, tmp_path, lambda t: t.drop(["strings_digest"]).append_column(
        "strings_digest", pa.nulls(len(t), pa.binary(32))))
    with pytest.raises(ValueError, match="do not match"):
        rustfx_core.FeatureCache(tmp_path / "cache").fill_from_corpus(bad)
    old = tmp_path / "old"
    shutil.copytree(out, old)
    shard = sorted(glob.glob(str(old / "**" / "*.parquet"), recursive=True))[0]
    pq.write_table(pq.read_table(shard).drop(["ngram_ids_digest"]), shard)
    with pytest.raises(ValueError, match="no ngram_ids_digest column"):
        rustfx_core.FeatureCache(tmp_path / "cache-old").fill_from_corpus(str(old))


def test_a_row_digest_binds_the_spec_the_key_and_every_value():
    spec = rustfx_core.FeatureSpec.from_json(FEATURES["features"]["ngram_ids"])
    docs = [b"a b c d", b"", b"x y"]
    documents = rustfx_core.Documents.of(docs)
    keys = b"".join(bytes.fromhex(k) for k in documents.content_keys())
    values = np.array([5, 6, 7, 8, 9, 10], np.int64)

    def Ragged(values, row_splits):  # noqa: N802 (rows in the core's Arrow layout)
        return pa.LargeListArray.from_arrays(pa.array(row_splits), pa.array(values))

    ragged = Ragged(values, np.array([0, 4, 4, 6], np.int64))
    base = row_digests(spec, keys, ragged)
    assert len(base) == 96 and len({base[i:i + 32] for i in (0, 32, 64)}) == 3
    assert row_digests(spec, keys, ragged) == base  # deterministic
    other_value = Ragged(np.array([5, 6, 7, 8, 9, 11], np.int64), [0, 4, 4, 6])
    assert _changed(base, row_digests(spec, keys, other_value)) == [2]
    moved = Ragged(values, np.array([0, 3, 4, 6], np.int64))  # a value moved across rows
    assert _changed(base, row_digests(spec, keys, moved)) == [0, 1]
    other_keys = keys[:32] + keys[64:] + keys[32:64]
    assert _changed(base, row_digests(spec, other_keys, ragged)) == [1, 2]
    other_spec = rustfx_core.FeatureSpec.from_json({
        "extractor": "hashed_ngrams",
        "params": {"num_buckets": 4097, "output": "ragged", "tokenizer": "word"}})
    assert _changed(base, row_digests(other_spec, keys, ragged)) == [0, 1, 2]


def _changed(a, b):
    return [i for i in range(len(a) // 32) if a[32 * i:32 * (i + 1)] != b[32 * i:32 * (i + 1)]]


def test_ragged_offsets_past_2_31_values_do_not_wrap(tmp_path):
    # 2^31 + 10 uint8 values in a sparse file (no memory, no disk until
    # read), as a ragged column in the core's Arrow layout (large_list):
    # a row of 2^31 - 5 values, then one of the last 5; the core reads
    # the second row past offset 2^31 (a slice: no 2 GB copy).
    total = 2**31 + 10
    path = tmp_path / "values"
    with open(path, "wb") as f:
        f.seek(total - 5)
        f.write(bytes([1, 2, 3, 4, 5]))
    values = np.memmap(path, np.uint8, mode="r", shape=(total,))
    spec = rustfx_core.FeatureSpec.from_json({
        "extractor": "byte_sequence",
        "params": {"max_len": 16, "dtype": "uint8", "output": "ragged"}})
    column = pa.LargeListArray.from_arrays(pa.array([0, total - 5, total], pa.int64()),
                                           pa.array(values))
    assert pa.types.is_large_list(column.type)
    assert column.value_lengths().to_pylist() == [total - 5, 5]
    assert column.offsets.to_pylist() == [0, total - 5, total]
    assert column[1].values.to_pylist() == [1, 2, 3, 4, 5]
    # The column type is the shard schema's.
    schema = corpus.FeatureSet.load({"features": {"bytes": spec.to_dict()}}).arrow_schema()
    assert schema.field("bytes").type == column.type
    # The core reads the row past 2^31 as the same row on its own.
    key = b"\7" * 32
    alone = pa.LargeListArray.from_arrays(pa.array([0, 5], pa.int64()),
                                          pa.array(np.arange(1, 6, dtype=np.uint8)))
    assert row_digests(spec, key, column.slice(1, 1)) == row_digests(spec, key, alone)
