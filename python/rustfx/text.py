"""Hashed n-grams: TensorFlow / Keras and scikit-learn parity."""

from rustfx._common import no_autograph
from rustfx.spec import FeatureSpec
from rustfx.spec import extract_spec as extract

__all__ = ["hashed_ngrams"]


@no_autograph
def hashed_ngrams(contents, *, num_buckets, ngram_widths=(1,),
                  tokenizer="whitespace", lowercase=False, hash="fingerprint64",
                  output="ragged", max_tokens=None, pad_value=-1,
                  binary=False, alternate_sign=False, norm=None, name=None):
    """Hashes the n-grams of each string of `contents` into `num_buckets`.

    Args:
      contents: tf.string tensor of any rank (documents or file contents),
        or rustfx.files(paths) for the op to read the files itself.
      num_buckets: number of buckets, >= 1; ids are in [0, num_buckets).
      ngram_widths: n-gram widths, each in [1, 64]; output is grouped by
        width in this order (like `tf.strings.ngrams`).
      tokenizer: "whitespace" (`tf.strings.split`), "word" (runs of ASCII
        letters, digits, '_'), "char" (Unicode code points; invalid UTF-8 ->
        U+FFFD), "byte" (raw bytes), or "sklearn_word" / "sklearn_char" /
        "sklearn_char_wb" (scikit-learn's analyzers, Python string rules).
      lowercase: ASCII lowercasing (`tf.strings.lower`) before tokenizing;
        Python's `str.lower` for the sklearn_* tokenizers.
      hash: "fingerprint64" (`tf.strings.to_hash_bucket_fast`, Keras
        `Hashing`) or "murmur3" (scikit-learn `FeatureHasher`).
      output: "ragged" (int64 ids, RaggedTensor of shape contents.shape +
        [None]; a rank-0 input gives a 1-D tensor), "sequence" (int64
        contents.shape + [max_tokens], truncated, padded with `pad_value`),
        "counts" (float32 contents.shape + [num_buckets], bag of n-grams) or
        "sparse" (the same as a tf.SparseTensor).
      max_tokens: length of the "sequence" output, in [1, 2**24].
      pad_value: pad id of "sequence"; must be < 0 or >= num_buckets so it
        never collides with a real id. For a Keras Embedding use
        pad_value=num_buckets and input_dim=num_buckets + 1.
      binary, alternate_sign, norm: "counts"/"sparse" weighting as in
        scikit-learn: binary sets every non-zero count to 1; alternate_sign
        (murmur3 only) adds the sign of each hash; norm is None, "l1" or "l2".

    Returns:
      The ids or counts, as described for `output`.
    """
    spec = FeatureSpec(
        "hashed_ngrams", num_buckets=num_buckets, ngram_widths=_list(ngram_widths),
        tokenizer=tokenizer, lowercase=lowercase, hash=hash, output=output,
        max_tokens=max_tokens, pad_value=pad_value, binary=binary,
        alternate_sign=alternate_sign, norm=norm)
    return extract(spec, contents, name=name)


def _list(widths):
    """ngram_widths as a list (a tuple, a range or a numpy array);
    anything else goes to the core as it is, which says what is allowed."""
    try:
        return [int(w) for w in widths]
    except (TypeError, ValueError):
        return widths
