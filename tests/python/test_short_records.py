"""Batches of many short records, which the kernels cut into chunks of
documents, one Rust call each (cpp/rustfx_kernel.h): every extractor of the
registry gives each record the output it gives that record alone, whatever
the chunk boundaries, for every output kind; and the n-gram ids of short
records equal TF's own ops."""

import random

import numpy as np
import pytest
import tensorflow as tf

import rustfx


def short_records(count=20000, seed=0):
    """Lines, names, empty strings, binary and non-UTF-8 records, 0-200
    bytes, from this machine's files (deterministic)."""
    rng = random.Random(seed)
    pool = []
    for path in ["/etc/services", "/etc/passwd", "/usr/include/stdio.h", "/bin/ls"]:
        try:
            with open(path, "rb") as f:
                pool += f.read(1 << 20).split(b"\n")
        except OSError:
            pass
    pool += [b"", b"x", b"www.example.com", b"\xff\xfe\x00a\xc3", "Straße ΣΑΣ".encode()]
    return [rng.choice(pool)[:200] for _ in range(count)]


RECORDS = short_records()


def examples():
    return [pytest.param(rustfx.FeatureSpec(name, **params), id=f"{name}-{i}")
            for name, entry in rustfx.registry().items()
            for i, params in enumerate(entry["examples"])]


def rows(out):
    """One comparable value per record, whatever the output kind."""
    if isinstance(out, tf.RaggedTensor):
        return [tuple(r) for r in out.to_list()]
    if isinstance(out, tf.SparseTensor):
        dense_rows = [[] for _ in range(out.dense_shape[0])]
        for (row, col), value in zip(out.indices.numpy(), out.values.numpy()):
            dense_rows[row].append((col, value.tobytes()))
        return [tuple(r) for r in dense_rows]
    return [r.tobytes() for r in out.numpy()]


@pytest.mark.parametrize("spec", examples())
def test_a_record_gets_the_same_output_in_any_batch(spec):
    whole = rows(rustfx.extract(spec, tf.constant(RECORDS)))
    assert len(whole) == len(RECORDS)
    # Other batches, so other chunk boundaries.
    cuts = sorted(random.Random(1).sample(range(1, len(RECORDS)), 6))
    pieces = []
    for start, end in zip([0] + cuts, cuts + [len(RECORDS)]):
        pieces += rows(rustfx.extract(spec, tf.constant(RECORDS[start:end])))
    assert pieces == whole
    for i in random.Random(2).sample(range(len(RECORDS)), 40):
        assert rows(rustfx.extract(spec, tf.constant([RECORDS[i]]))) == [whole[i]], i


def test_short_record_ids_equal_tf_ops():
    records = tf.constant(RECORDS)
    got = rustfx.hashed_ngrams(records, num_buckets=1 << 20, ngram_widths=(1, 2))
    want = tf.strings.to_hash_bucket_fast(
        tf.strings.ngrams(tf.strings.split(records), [1, 2], separator=" "), 1 << 20)
    assert got.to_list() == want.to_list()
    got = rustfx.hashed_ngrams(records, num_buckets=1 << 20, ngram_widths=(3,),
                               tokenizer="byte")
    want = tf.strings.to_hash_bucket_fast(
        tf.strings.ngrams(tf.strings.bytes_split(records), 3, separator=""), 1 << 20)
    assert got.to_list() == want.to_list()
    sequence = rustfx.hashed_ngrams(records, num_buckets=1 << 20, ngram_widths=(1, 2),
                                    output="sequence", max_tokens=32)
    np.testing.assert_array_equal(
        sequence.numpy(),
        rustfx.hashed_ngrams(records, num_buckets=1 << 20, ngram_widths=(1, 2))
        .to_tensor(default_value=-1, shape=[len(RECORDS), 32]).numpy())


def test_short_records_in_a_tf_data_pipeline():
    spec = rustfx.FeatureSpec("hashed_ngrams", num_buckets=1 << 16, ngram_widths=[1, 2])
    want = rows(rustfx.extract(spec, tf.constant(RECORDS)))
    ds = (tf.data.Dataset.from_tensor_slices(RECORDS).batch(1024)
          .map(lambda x: rustfx.extract(spec, x), num_parallel_calls=tf.data.AUTOTUNE))
    got = [r for batch in ds for r in rows(batch)]
    assert got == want


ONE_THREAD_SCRIPT = r"""
import sys
import tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(1)
import rustfx
# Chunks of 64 KB run in order on one thread, each copied into the output
# as it is made: the first chunks' records have one token, the later ones
# 150, so the output outgrows its estimate (and is copied to a larger one).
few = [b"w%d" % i for i in range(40000)]
many = [b" ".join(b"t%d" % j for j in range(i % 7, i % 7 + 150)) for i in range(3000)]
for records in [few + many, many + few, [], [b""], few[:3]]:
    x = tf.constant(records, dtype=tf.string)
    got = rustfx.hashed_ngrams(x, num_buckets=1 << 20, ngram_widths=(1, 2))
    want = tf.strings.to_hash_bucket_fast(
        tf.strings.ngrams(tf.strings.split(x), [1, 2], separator=" "), 1 << 20)
    assert got.row_splits.numpy().tolist() == want.row_splits.numpy().tolist()
    assert got.values.numpy().tolist() == want.values.numpy().tolist()
# Character n-grams of batches holding binaries, whose characters are not
# counted up front: the output starts at room for a window per byte (and
# is copied to its size when that was more than twice too much: 3-byte
# characters).
import random
rng = random.Random(0)
binaries = [bytes(rng.randrange(256) for _ in range(rng.randrange(3000))) for _ in range(40)]
cjk = ["日本語のテキスト %d" % i for i in range(6000)]
cjk = [(t * (1 + i % 9)).encode() for i, t in enumerate(cjk)]
for records in [binaries + cjk, cjk + binaries, binaries, binaries[:1] + [b""]]:
    x = tf.constant(records, dtype=tf.string)
    got = rustfx.hashed_ngrams(x, num_buckets=1 << 20, ngram_widths=(1, 3), tokenizer="char")
    chars = [[c.encode() for c in r.decode("utf-8", errors="replace")] for r in records]
    grams = [[b"".join(u[i:i + n]) for n in (1, 3) for i in range(len(u) - n + 1)]
             for u in chars]
    # The same ragged tensor as tf.ragged.constant(grams), which takes ~20 s
    # per 850,000 strings: one flat constant and the row lengths.
    grams = tf.RaggedTensor.from_row_lengths(
        tf.constant([g for row in grams for g in row], dtype=tf.string),
        [len(row) for row in grams])
    want = tf.strings.to_hash_bucket_fast(grams, 1 << 20)
    assert got.row_splits.numpy().tolist() == want.row_splits.numpy().tolist()
    assert got.values.numpy().tolist() == want.values.numpy().tolist()
print("same ids")
"""


def test_chunks_in_order_on_one_thread_equal_tf_ops():
    """On one thread each chunk's ids go into the output as they are made
    (cpp/extract_ops.cc, ComputeInOrder): in a process of its own, whose
    intra-op pool has one thread."""
    import subprocess
    import sys
    result = subprocess.run([sys.executable, "-c", ONE_THREAD_SCRIPT], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "same ids" in result.stdout
