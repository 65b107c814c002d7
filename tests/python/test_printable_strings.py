"""printable_strings through the op: GNU binutils `strings` parity (golden
vectors made by tests/golden/generate_strings.py from committed inputs, and
the live tool when installed), shapes, bounds, files, errors."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import rustfx

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def golden_strings():
    rows = []
    with open(os.path.join(ROOT, "tests", "golden", "strings.tsv")) as f:
        for line in f:
            if line.startswith("#"):
                continue
            path, encoding, min_len, count, hexes = line.rstrip("\n").split("\t")
            strings = [bytes.fromhex(h) for h in hexes.split(" ") if h]
            assert len(strings) == int(count)
            rows.append((os.path.join(ROOT, path), encoding, int(min_len), strings))
    return rows


def test_printable_strings_op_matches_gnu_strings_golden():
    rows = golden_strings()
    assert len(rows) > 50
    for encoding in ("ascii", "utf16le"):
        for min_len in (1, 4, 8):
            cases = [r for r in rows if r[1] == encoding and r[2] == min_len]
            paths = [r[0] for r in cases]
            want = [r[3] for r in cases]
            got = rustfx.printable_strings(rustfx.files(paths), min_len=min_len,
                                           encodings=[encoding]).to_list()
            assert got == want, (encoding, min_len)
    # Both encodings: ascii's strings, then utf16le's.
    by_key = {(r[0], r[1], r[2]): r[3] for r in rows}
    paths = sorted({r[0] for r in rows})
    got = rustfx.printable_strings(rustfx.files(paths)).to_list()
    assert got == [by_key[(p, "ascii", 4)] + by_key[(p, "utf16le", 4)] for p in paths]


def test_printable_strings_live_against_the_system_strings(tmp_path):
    import shutil
    if shutil.which("strings") is None:
        pytest.skip("GNU strings is not installed (the golden test covers it)")
    rng = np.random.default_rng(7)
    blob = tmp_path / "random.bin"
    blob.write_bytes(rng.integers(0, 256, 70_000, dtype=np.uint8).tobytes()
                     + b"plain ascii text here" + "wide".encode("utf-16-le"))
    for path in [sys.executable, "/bin/ls", str(blob)]:
        for flag, encoding in (("s", "ascii"), ("l", "utf16le")):
            out = subprocess.run(["strings", "-a", "-n", "5", "-e", flag, path],
                                 capture_output=True, check=True).stdout
            want = out.split(b"\n")[:-1]
            got = rustfx.printable_strings(rustfx.files([path]), min_len=5,
                                           encodings=[encoding]).to_list()[0]
            assert got == want, (path, encoding)


def test_printable_strings_shapes_bounds_and_tokens():
    docs = tf.constant([[b"hello world\0abc\0longer string", b""], [b"x", b"wide"]])
    strings = rustfx.printable_strings(docs, encodings=["ascii"])
    assert strings.shape.as_list() == [2, 2, None]
    assert strings.to_list() == [[[b"hello world", b"longer string"], []], [[], [b"wide"]]]
    assert rustfx.printable_strings(tf.constant(b"hello"), encodings=["ascii"]).numpy().tolist() \
        == [b"hello"]
    bounded = rustfx.printable_strings([b"aaaa\0bbbb\0cccc"], max_strings=2).to_list()
    assert bounded == [[b"aaaa", b"bbbb"]]
    assert rustfx.printable_strings([b"aaaa\0bbbb"], max_bytes=6).to_list() == [[b"aaaa", b"bb"]]
    # strings | tokenize: hashed n-grams of a binary's strings.
    s = rustfx.printable_strings(rustfx.files([sys.executable]))
    ids = rustfx.hashed_ngrams(s.flat_values, num_buckets=1 << 20, tokenizer="word")
    assert ids.flat_values.shape[0] > 100
    ds = tf.data.Dataset.from_tensor_slices([sys.executable]).map(
        lambda p: rustfx.printable_strings(rustfx.files(p)))
    assert next(iter(ds)).numpy().tolist() == s.to_list()[0]
    for kwargs, message in [
        (dict(min_len=0), "min_len must be in 1..="),
        (dict(encodings=["ebcdic"]), "string encoding must be one of ascii, utf16le"),
        (dict(encodings=[]), "at least one of ascii, utf16le"),
        (dict(max_strings=0), "max_strings must be at least 1"),
        (dict(encodings="ascii"), "encodings must be a list of string"),
    ]:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            rustfx.printable_strings([b"a"], **kwargs)
