"""Independent numpy reference for rustfx's EMBER byte features and MalConv
byte sequences, for parity tests of the TensorFlow ops.

Written from the definitions (the module docs of crates/rustfx/src/byte_features/mod.rs
and crates/rustfx/src/byte_sequence.rs, which give EMBER's and MalConv's), not from
EMBER's code, which is AGPL. It performs the same kind of numpy operations, in
the same dtypes, as EMBER's features.py, so it reproduces EMBER's float32
results, including NaN for the two histograms of an empty input.

numpy details that decide the last bit (see crates/rustfx/src/byte_features/mod.rs):

* EMBER needs numpy <= 1.23 (it uses ``np.int``), whose value-based casting
  makes ``float32_array / integer`` a float32 result when the integer is below
  65536 and a float64 result above. numpy 2 (NEP 50) decides differently, so
  the dtypes are pinned explicitly here: the result does not depend on the
  installed numpy.
* numpy's float32 ``log2`` is not correctly rounded and depends on the CPU
  (Intel SVML with AVX-512, libm's ``log2f`` otherwise). With ``exact=True``
  (the default) the float32 log2 is the correctly rounded one, computed in
  float64 and rounded, as rustfx does; ``exact=False`` calls ``np.log2`` on
  float32 like EMBER.
* The histograms divide float32 counts by their float32 sum. That is exact up
  to a total of 2**24; ``exact=True`` divides the exact integer total (as
  rustfx does), ``exact=False`` sums in float32 like EMBER.

With ``exact=True`` every function here equals rustfx bit for bit. With
``exact=False`` it is EMBER on this machine; the two differ only when a block's
entropy lands within an ulp or so of a bin boundary, in the last ulp of the
string entropy, or for totals above 2**24.
"""

import re

import numpy as np

EMBER_WINDOW = 2048
EMBER_STEP = 1024
EMBER_MALCONV_MAX_LEN = 2**20
EMBER_MALCONV_PAD = 256
MALCONV2_MAX_LEN = 4_000_000

# Below this divisor numpy 1.x keeps `float32_array / divisor` in float32
# (min_scalar_type is uint8 or uint16); from it on the result is float64.
_NUMPY1_FLOAT32_DIVISOR_LIMIT = 65536

_STRINGS = re.compile(rb"[\x20-\x7f]{5,}")
_PATHS = re.compile(rb"c:\\", re.IGNORECASE)
_URLS = re.compile(rb"https?://", re.IGNORECASE)


def _quotient_dtype(divisor):
    """numpy 1.x's dtype of ``float32_array / divisor`` (a non-negative int)."""
    if divisor < _NUMPY1_FLOAT32_DIVISOR_LIMIT:
        return np.float32
    return np.float64


def _entropy(counts, divisor, exact):
    """Sum of -p*log2(p) over the nonzero counts, p = count / divisor, in
    numpy 1.x's dtype; np.sum keeps numpy's pairwise summation order."""
    nonzero = counts[np.nonzero(counts)[0]]
    dtype = _quotient_dtype(divisor)
    p = nonzero.astype(np.float32).astype(dtype) / dtype(divisor)
    if dtype is np.float32 and exact:
        log2p = np.log2(p.astype(np.float64)).astype(np.float32)
    else:
        log2p = np.log2(p)
    return np.sum(-p * log2p)


def _normalise(counts, exact):
    """counts / counts.sum() as float32; NaN (numpy's 0/0) when all are 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        total = int(counts.sum())
        if total == 0:
            return counts.astype(np.float32) / np.float32(0)
        if exact:
            return (counts.astype(np.float64) / float(total)).astype(np.float32)
        as_float32 = counts.astype(np.float32)
        return as_float32 / as_float32.sum()


def byte_histogram(data: bytes, exact=True) -> np.ndarray:
    """256 float32: the frequency of each byte value."""
    counts = np.bincount(np.frombuffer(data, dtype=np.uint8), minlength=256)
    return _normalise(counts, exact)


def byte_entropy_histogram(data: bytes, window=EMBER_WINDOW, step=EMBER_STEP,
                           exact=True) -> np.ndarray:
    """256 float32: a 16x16 (entropy bin, high nibble) histogram of blocks of
    ``window`` bytes every ``step`` bytes, normalised (row-major)."""
    if window < 1 or step < 1:
        raise ValueError("window and step must be at least 1")
    a = np.frombuffer(data, dtype=np.uint8)
    if len(a) < window:
        blocks = [a]
    else:
        blocks = (a[start:start + window]
                  for start in range(0, len(a) - window + 1, step))
    grid = np.zeros((16, 16), dtype=np.int64)
    for block in blocks:
        nibbles = np.bincount(block >> 4, minlength=16)
        h = _entropy(nibbles, window, exact) * 2
        grid[min(int(h * 2), 15)] += nibbles
    return _normalise(grid.ravel(), exact)


def string_features(data: bytes, exact=True) -> np.ndarray:
    """104 float32: numstrings, avlength, printables, 96 printable-byte
    frequencies, entropy, then counts of c:\\, http(s)://, HKEY_ and MZ in the
    whole input."""
    strings = _STRINGS.findall(data)
    numstrings = len(strings)
    if strings:
        joined = np.frombuffer(b"".join(strings), dtype=np.uint8)
        dist = np.bincount(joined - 0x20, minlength=96)
        printables = int(dist.sum())
        avlength = printables / numstrings
        entropy = float(_entropy(dist, printables, exact))
        frequencies = dist / float(printables)
    else:
        printables, avlength, entropy = 0, 0.0, 0.0
        frequencies = np.zeros(96)
    counts = [
        len(_PATHS.findall(data)),
        len(_URLS.findall(data)),
        data.count(b"HKEY_"),  # non-overlapping, like findall
        data.count(b"MZ"),
    ]
    head = np.array([numstrings, avlength, printables], dtype=np.float64)
    tail = np.array([entropy] + counts, dtype=np.float64)
    return np.concatenate([head, frequencies, tail]).astype(np.float32)


def byte_sequence(data: bytes, max_len, shift=0, pad_value=EMBER_MALCONV_PAD,
                  sampling="head") -> np.ndarray:
    """``max_len`` int32: the kept bytes plus ``shift``, then ``pad_value``.

    ``sampling="head"`` keeps the first ``max_len`` bytes; ``"head_tail"``
    keeps, for longer inputs, the first ceil(max_len/2) and the last
    floor(max_len/2) bytes.
    """
    if max_len < 1:
        raise ValueError("max_len must be at least 1")
    if shift <= pad_value <= shift + 255:
        raise ValueError("pad_value collides with shifted byte values")
    a = np.frombuffer(data, dtype=np.uint8)
    if len(a) > max_len:
        if sampling == "head":
            a = a[:max_len]
        elif sampling == "head_tail":
            head, tail = (max_len + 1) // 2, max_len // 2
            a = np.concatenate([a[:head], a[len(a) - tail:]])
        else:
            raise ValueError("sampling must be 'head' or 'head_tail'")
    out = np.full(max_len, pad_value, dtype=np.int32)
    out[:len(a)] = a.astype(np.int32) + np.int32(shift)
    return out


def ember_malconv(data: bytes) -> np.ndarray:
    """elastic/ember MalConv's input: bytes as-is, pad 256, first 2**20."""
    return byte_sequence(data, EMBER_MALCONV_MAX_LEN, 0, EMBER_MALCONV_PAD)


def malconv2(data: bytes, max_len=MALCONV2_MAX_LEN) -> np.ndarray:
    """MalConv2's input: bytes + 1, pad 0, first ``max_len``."""
    return byte_sequence(data, max_len, 1, 0)
