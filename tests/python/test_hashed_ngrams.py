"""hashed_ngrams against TensorFlow's own ops (and Keras Hashing)."""

import re

import numpy as np
import pytest
import tensorflow as tf

import rustfx

BUCKETS = 1_000_003


def tf_composite(docs, widths, num_buckets, lowercase=False):
    """The definition: to_hash_bucket_fast(ngrams(split(x), widths))."""
    x = tf.constant(docs)
    if lowercase:
        x = tf.strings.lower(x)
    grams = tf.strings.ngrams(tf.strings.split(x), list(widths), separator=" ")
    return tf.strings.to_hash_bucket_fast(grams, num_buckets)


def as_lists(ragged):
    return [list(row) for row in ragged.to_list()]


@pytest.mark.parametrize("widths", [(1,), (2,), (1, 2), (3, 1), (1, 2, 3, 4)])
@pytest.mark.parametrize("lowercase", [False, True])
def test_whitespace_equals_tf_composite(documents, widths, lowercase):
    got = rustfx.hashed_ngrams(documents, num_buckets=BUCKETS,
                               ngram_widths=widths, lowercase=lowercase)
    want = tf_composite(documents, widths, BUCKETS, lowercase)
    assert as_lists(got) == as_lists(want)


def test_equals_keras_hashing(documents):
    grams = tf.strings.ngrams(tf.strings.split(tf.constant(documents)), [1, 2],
                              separator=" ")
    keras = tf.keras.layers.Hashing(num_bins=4096)(grams)
    got = rustfx.hashed_ngrams(documents, num_buckets=4096, ngram_widths=(1, 2))
    assert as_lists(got) == as_lists(keras)


def test_real_files_equal_tf_composite(machine_files):
    docs = [open(p, "rb").read() for p in machine_files]
    got = rustfx.hashed_ngrams(docs, num_buckets=2**63 - 1, ngram_widths=(1, 3))
    want = tf_composite(docs, (1, 3), 2**63 - 1)
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(got.row_splits.numpy(), want.row_splits.numpy())


def test_ranks_match_tf_split():
    docs = [[b"a b", b""], [b"c d e", b"f"]]
    got = rustfx.hashed_ngrams(docs, num_buckets=97, ngram_widths=(1, 2))
    want = tf.strings.to_hash_bucket_fast(
        tf.strings.ngrams(tf.strings.split(tf.constant(docs)), [1, 2],
                          separator=" "), 97)
    assert got.shape.rank == 3
    assert got.to_list() == want.to_list()
    scalar = rustfx.hashed_ngrams(b"x y", num_buckets=97)
    assert scalar.numpy().tolist() == tf.strings.to_hash_bucket_fast(
        tf.strings.split(b"x y"), 97).numpy().tolist()


def word_tokens(doc):
    return re.findall(rb"[A-Za-z0-9_]+", doc)


def test_word_tokenizer_definition(documents):
    docs = documents[:300]
    tokens = tf.ragged.constant([word_tokens(d) for d in docs], dtype=tf.string,
                                ragged_rank=1)
    want = tf.strings.to_hash_bucket_fast(
        tf.strings.ngrams(tokens, [1, 2], separator=" "), BUCKETS)
    got = rustfx.hashed_ngrams(docs, num_buckets=BUCKETS, ngram_widths=(1, 2),
                               tokenizer="word")
    assert as_lists(got) == as_lists(want)


def test_byte_and_char_tokenizers(documents):
    docs = documents[:200]
    for tokenizer, units in [
            ("byte", lambda d: [bytes([b]) for b in d]),
            ("char", lambda d: [c.encode() for c in
                                d.decode("utf-8", errors="replace")])]:
        rows = []
        for d in docs:
            u = units(d)
            rows.append([b"".join(u[i:i + n]) for n in (1, 3)
                         for i in range(len(u) - n + 1)])
        want = tf.strings.to_hash_bucket_fast(
            tf.ragged.constant(rows, dtype=tf.string, ragged_rank=1), BUCKETS)
        got = rustfx.hashed_ngrams(docs, num_buckets=BUCKETS,
                                   ngram_widths=(1, 3), tokenizer=tokenizer)
        assert as_lists(got) == as_lists(want), tokenizer


def unit_ngram_ids(docs, widths, lowercase=False, tokenizer="byte"):
    """Byte (or character) n-grams' ids from their definition, hashed by
    TF's op."""
    def units(d):
        d = d.lower() if lowercase else d
        if tokenizer == "byte":
            return [bytes([b]) for b in d]
        return [c.encode() for c in d.decode("utf-8", errors="replace")]
    rows = [[b"".join(u[i:i + n]) for n in widths for i in range(len(u) - n + 1)]
            for u in map(units, docs)]
    flat = [g for row in rows for g in row]
    ids = tf.strings.to_hash_bucket_fast(tf.constant(flat, dtype=tf.string), BUCKETS).numpy()
    out, at = [], 0
    for row in rows:
        out.append(ids[at:at + len(row)].tolist())
        at += len(row)
    return out


@pytest.mark.parametrize("tokenizer", ["byte", "char"])
def test_ngrams_counted_up_front(documents, tokenizer):
    """Byte and character n-grams' ids are written straight into an output
    sized up front from each document's bytes or characters (the kernel's
    in-place path): the edges of that sizing against the definition, on
    text that is not UTF-8 too."""
    def check(docs, widths, lowercase=False):
        got = rustfx.hashed_ngrams(docs, num_buckets=BUCKETS, ngram_widths=widths,
                                   tokenizer=tokenizer, lowercase=lowercase)
        want = unit_ngram_ids(docs, widths, lowercase, tokenizer)
        assert as_lists(got) == want, (widths, lowercase)

    short = [b"", b"a", b"ab", b"abc", b"abcd", b"", b"abcdefgh"]
    check(short, (3,))
    check(short, (1, 3, 5))
    check(short, (9,))  # no document has an id
    check([b"MiXeD CaSe", b"x"], (2, 1), lowercase=True)
    check([b"ABC\xc3\x89def", b"MiXeD CaSe", b"\xff\xfe", b"\xe2\x82x\xf0\x9f\x98\x80"],
          (2, 1), lowercase=True)
    # Many chunks, on TF's threads: all ASCII (characters are bytes), then
    # not.
    ascii_docs = [d for d in documents if d.isascii()]
    assert len(ascii_docs) > 100
    check(ascii_docs * 4, (2, 4))
    check(documents * 4, (2, 4))
    empty = rustfx.hashed_ngrams(tf.constant([], dtype=tf.string), num_buckets=BUCKETS,
                                 ngram_widths=(3,), tokenizer=tokenizer)
    assert empty.shape[0] == 0 and empty.flat_values.shape[0] == 0
    grid = rustfx.hashed_ngrams(tf.constant([[b"abc", b"de"], [b"", b"xyzw"]]),
                                num_buckets=BUCKETS, ngram_widths=(2,), tokenizer=tokenizer)
    assert grid.to_list() == [unit_ngram_ids([b"abc", b"de"], (2,), tokenizer=tokenizer),
                              unit_ngram_ids([b"", b"xyzw"], (2,), tokenizer=tokenizer)]


def test_sequence_is_truncated_padded_ragged(documents):
    ragged = rustfx.hashed_ngrams(documents, num_buckets=BUCKETS,
                                  ngram_widths=(1, 2))
    want = ragged.to_tensor(default_value=-1, shape=[len(documents), 16])
    got = rustfx.hashed_ngrams(documents, num_buckets=BUCKETS,
                               ngram_widths=(1, 2), output="sequence",
                               max_tokens=16)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    padded = rustfx.hashed_ngrams([[b"a b c"]], num_buckets=10,
                                  output="sequence", max_tokens=5,
                                  pad_value=10)
    assert padded.shape == (1, 1, 5)
    assert padded.numpy()[0, 0, 3:].tolist() == [10, 10]


def test_counts_are_bincount_of_ids(documents):
    docs = documents[:500]
    ids = rustfx.hashed_ngrams(docs, num_buckets=64, ngram_widths=(1, 2))
    want = np.stack([np.bincount(np.asarray(r, dtype=np.int64), minlength=64)
                     for r in ids.to_list()]).astype(np.float32)
    dense = rustfx.hashed_ngrams(docs, num_buckets=64, ngram_widths=(1, 2),
                                 output="counts")
    np.testing.assert_array_equal(dense.numpy(), want)
    sparse = rustfx.hashed_ngrams(docs, num_buckets=64, ngram_widths=(1, 2),
                                  output="sparse")
    np.testing.assert_array_equal(tf.sparse.to_dense(sparse).numpy(), want)


def test_eager_function_and_tf_data_agree(documents):
    kwargs = dict(num_buckets=BUCKETS, ngram_widths=(1, 2), tokenizer="word")
    eager = rustfx.hashed_ngrams(documents, **kwargs)
    graph = tf.function(lambda x: rustfx.hashed_ngrams(x, **kwargs))(
        tf.constant(documents))
    ds = (tf.data.Dataset.from_tensor_slices(documents)
          .map(lambda x: rustfx.hashed_ngrams(x, **kwargs),
               num_parallel_calls=tf.data.AUTOTUNE, deterministic=True))
    mapped = [row.numpy().tolist() for row in ds]
    assert as_lists(eager) == as_lists(graph) == mapped


BAD_ATTRS = [
    (dict(num_buckets=0), "num_buckets must be in [1"),
    (dict(num_buckets=-5), "num_buckets must be in [1"),
    (dict(num_buckets=10, ngram_widths=()), "ngram_widths must list"),
    (dict(num_buckets=10, ngram_widths=(0,)), "width must be in [1, 64]"),
    (dict(num_buckets=10, ngram_widths=(65,)), "width must be in [1, 64]"),
    (dict(num_buckets=10, tokenizer="bogus"), "tokenizer must be one of"),
    (dict(num_buckets=10, hash="md5"), "hash must be one of"),
    (dict(num_buckets=10, output="sequence", max_tokens=0), "max_tokens must be"),
    (dict(num_buckets=10, output="sequence", max_tokens=4, pad_value=3),
     "pad_value must not be a bucket id"),
    (dict(num_buckets=10, output="counts", norm="l3"), "norm must be one of"),
    (dict(num_buckets=10, output="counts", alternate_sign=True),
     "alternate_sign=True needs hash='murmur3'"),
    (dict(num_buckets=2**21, output="counts"), "use output='sparse'"),
    (dict(num_buckets=2**31, hash="murmur3"), "with hash murmur3"),
    (dict(num_buckets=10, output="tensor"), "output must be one of"),
]


@pytest.mark.parametrize("attrs,message", BAD_ATTRS)
def test_bad_attrs_fail_eagerly_and_at_graph_construction(attrs, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(message)):
        rustfx.hashed_ngrams([b"a b"], **attrs)
    # In a graph the shape function rejects the op when it is added; TF
    # reports shape-function errors at graph construction as ValueError.
    with tf.Graph().as_default():
        with pytest.raises((tf.errors.InvalidArgumentError, ValueError),
                           match=re.escape(message)):
            rustfx.hashed_ngrams(tf.constant([b"a b"]), **attrs)


def test_wrong_dtype_is_rejected():
    with pytest.raises(tf.errors.InvalidArgumentError, match="tf.string"):
        rustfx.hashed_ngrams([1, 2], num_buckets=10)
