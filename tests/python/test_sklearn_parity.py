"""hashed_ngrams in scikit-learn mode against scikit-learn itself."""

import numpy as np
import pytest
import tensorflow as tf
from sklearn.feature_extraction import FeatureHasher
from sklearn.feature_extraction.text import HashingVectorizer

import rustfx

UNICODE_TEXT = [
    "The quick brown fox — jumps over the lazy dog. ΑΣ ΟΔΟΣ σοφός",
    "İstanbul'da ÇAĞDAŞ x² ½ Ⅻ e\u0301té naïve café\tcafé\u00a0CAFÉ",
    "snake_case CamelCase 123 4 a b _ __ ٣٤ 日本語のテキスト",
    "\x1c\x1d tabs\t\tand\n\nnewlines \u2003\u3000 wide",
    "", " ", "a", "ab", "x\u2028y\u0085z",
]


def sklearn_docs(documents):
    """Random documents decoded like rustfx does (invalid UTF-8 -> U+FFFD)."""
    return UNICODE_TEXT + [d.decode("utf-8", errors="replace")
                           for d in documents[:600]]


def rustfx_hashing_vectorizer(docs, analyzer, ngram_range, n_features,
                              lowercase, alternate_sign, norm, binary):
    got = rustfx.hashed_ngrams(
        [d.encode("utf-8") for d in docs], num_buckets=n_features,
        ngram_widths=tuple(range(ngram_range[0], ngram_range[1] + 1)),
        tokenizer="sklearn_" + analyzer, lowercase=lowercase, hash="murmur3",
        output="sparse", binary=binary, alternate_sign=alternate_sign,
        norm=norm)
    return tf.sparse.to_dense(got).numpy()


CASES = [
    ("word", (1, 1), True, True, "l2", False),
    ("word", (1, 3), True, True, "l2", False),
    ("word", (2, 2), False, False, None, False),
    ("word", (1, 2), True, True, "l1", True),
    ("char", (1, 3), True, True, "l2", False),
    ("char", (2, 5), False, True, None, False),
    ("char_wb", (1, 4), True, True, "l2", False),
    ("char_wb", (3, 3), False, False, "l1", True),
    ("char_wb", (2, 6), True, True, None, False),
]


@pytest.mark.parametrize("analyzer,ngram_range,lowercase,alternate_sign,norm,binary",
                         CASES)
def test_equals_hashing_vectorizer(documents, analyzer, ngram_range, lowercase,
                                   alternate_sign, norm, binary):
    docs = sklearn_docs(documents)
    n_features = 2 ** 12
    want = HashingVectorizer(
        analyzer=analyzer, ngram_range=ngram_range, n_features=n_features,
        lowercase=lowercase, alternate_sign=alternate_sign, norm=norm,
        binary=binary).transform(docs).toarray().astype(np.float32)
    got = rustfx_hashing_vectorizer(docs, analyzer, ngram_range, n_features,
                                    lowercase, alternate_sign, norm, binary)
    np.testing.assert_array_equal(got, want)


def test_real_text_files_equal_hashing_vectorizer(machine_files):
    texts = []
    for p in machine_files:
        data = open(p, "rb").read()
        if b"\0" not in data[:4096]:
            texts.append(data.decode("utf-8", errors="replace"))
    assert len(texts) >= 10
    want = HashingVectorizer(ngram_range=(1, 2), n_features=2**18).transform(
        texts).astype(np.float32)
    got = rustfx.hashed_ngrams([t.encode() for t in texts], num_buckets=2**18,
                               ngram_widths=(1, 2), tokenizer="sklearn_word",
                               lowercase=True, hash="murmur3", output="sparse",
                               alternate_sign=True, norm="l2")
    want = want.tocoo()
    order = np.lexsort((want.col, want.row))
    np.testing.assert_array_equal(got.indices.numpy(),
                                  np.stack([want.row, want.col], 1)[order])
    np.testing.assert_array_equal(got.values.numpy(), want.data[order])


@pytest.mark.parametrize("widths", [(1,), (2,), (4,), (1, 2, 3)])
def test_byte_ngrams_equal_feature_hasher(documents, machine_files, widths):
    docs = documents[:300] + [open(p, "rb").read()[:20000] for p in machine_files]
    tokens = [[d[i:i + n] for n in widths for i in range(len(d) - n + 1)]
              for d in docs]
    want = FeatureHasher(n_features=2**16, input_type="string").transform(
        tokens).toarray().astype(np.float32)
    got = rustfx.hashed_ngrams(docs, num_buckets=2**16, ngram_widths=widths,
                               tokenizer="byte", hash="murmur3",
                               output="counts", alternate_sign=True)
    np.testing.assert_array_equal(got.numpy(), want)
