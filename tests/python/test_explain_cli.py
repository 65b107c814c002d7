"""`rustfx-features --explain`: the TSV of each file's contributions, checked
against independent oracles (numpy's bincount, the extractor's own rows from
the same program, GNU strings' definition through rustfx's parity-tested
output), its escaping, its caps and its errors."""

import os
import re
import subprocess

import numpy as np
import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
RUST_CLI = os.path.join(ROOT, "target", "release", "rustfx-features")
COLUMNS = ["path", "feature", "index", "offset", "length", "value", "text"]


def unescape(field):
    """The inverse of rustfx's `write_escaped`: \\\\ \\t \\n \\r \\xHH."""
    simple = {"\\": b"\\", "t": b"\t", "n": b"\n", "r": b"\r"}
    return re.sub(rb"\\(x[0-9a-f]{2}|[\\tnr])",
                  lambda m: bytes([int(m.group(1)[1:], 16)]) if m.group(1).startswith(b"x")
                  else simple[m.group(1).decode()], field.encode("ascii"))


def explain(*args, check=True):
    run = subprocess.run([RUST_CLI, "--explain", *map(str, args)], capture_output=True, text=True)
    if check:
        assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    if lines:
        assert lines[0].split("\t") == COLUMNS
    rows = [dict(zip(COLUMNS, line.split("\t"))) for line in lines[1:]]
    assert all(len(row) == len(COLUMNS) for row in rows)
    return rows, run


def rows_of(*args):
    out = subprocess.run([RUST_CLI, *map(str, args)], capture_output=True, check=True,
                         text=True).stdout
    return [line.split("\t", 1) for line in out.splitlines()]


def test_byte_histogram_contributions_are_the_byte_counts(tmp_path):
    data = bytes(np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8)) + b"\n\t\\"
    path = tmp_path / "blob"
    path.write_bytes(data)
    rows, _ = explain("byte_histogram", path)
    counts = np.zeros(256)
    for row in rows:
        assert row["path"] == str(path) and row["feature"] == "byte_histogram"
        index, offset = int(row["index"]), int(row["offset"])
        counts[index] += float(row["value"])
        # The first occurrence of that byte value.
        assert data[offset] == index and data.index(bytes([index])) == offset
    np.testing.assert_array_equal(counts, np.bincount(np.frombuffer(data, np.uint8), minlength=256))
    # The output is the counts over the length: the program's own row.
    (_, values), = rows_of("byte_histogram", path)
    np.testing.assert_array_equal((counts / len(data)).astype(np.float32),
                                  np.array(values.split(), np.float32))


def test_byte_offsets_list_every_byte_and_caps_hold(tmp_path):
    path = tmp_path / "abc"
    path.write_bytes(b"abcab")
    rows, _ = explain("--byte-offsets", "byte_histogram", path)
    assert [(int(r["offset"]), int(r["index"])) for r in rows] == list(enumerate(b"abcab"))
    rows, run = explain("--byte-offsets", "--max-contributions", "2", "byte_histogram", path)
    assert len(rows) == 2 and "cut at 2 contributions" in run.stderr


def test_texts_are_escaped_and_read_back_exactly(tmp_path):
    """A printable string holding a backslash and a tab comes back exactly
    from its escaped TSV field, at the offset where it is in the file."""
    data = b"\x00\x01junk\x00a\\b\tcdefg\x00\xffzz\x00"
    path = tmp_path / "strings.bin"
    path.write_bytes(data)
    rows, run = explain("printable_strings", "encodings=[\"ascii\"]", path, check=False)
    if "does not explain" in run.stderr:
        pytest.skip(run.stderr.strip())
    assert run.returncode == 0, run.stderr
    texts = [unescape(r["text"]) for r in rows]
    assert texts == [b"junk", b"a\\b\tcdefg"]
    for row, text in zip(rows, texts):
        assert data[int(row["offset"]):int(row["offset"]) + len(text)] == text


def test_named_features_and_spec_files(tmp_path):
    """ember_features names each dimension; --spec reads a FeatureSpec."""
    pe = os.path.join(ROOT, "tests", "golden", "pe", "launchers", "distlib_t32.exe")
    spec = tmp_path / "spec.json"
    spec.write_text('{"extractor": "ember_features", "params": {"groups": ["general"]}}')
    rows, run = explain("--spec", spec, pe, check=False)
    if "does not explain" in run.stderr:
        pytest.skip(run.stderr.strip())
    names = {r["feature"] for r in rows}
    assert "general_size" in names and "general_entropy" in names, names


def test_usage_errors_exit_2_with_what_is_allowed(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(b"x")
    for args, message in [
        (["--max-contributions", "3", "byte_histogram", path], "is an option of --explain"),
        (["--explain", "--max-contributions", "0", "byte_histogram", path],
         "max_contributions must be in [1, 10000000]"),
        (["--explain", "--max-text-bytes", "70000", "byte_histogram", path],
         "max_text_bytes must be in [0, 65536]"),
    ]:
        run = subprocess.run([RUST_CLI, *map(str, args)], capture_output=True, text=True)
        assert run.returncode == 2 and message in run.stderr, run


def test_unreadable_files_are_named_and_the_others_explained(tmp_path):
    good, missing = tmp_path / "good", tmp_path / "missing"
    good.write_bytes(b"aa")
    rows, run = explain("byte_histogram", good, missing, check=False)
    assert run.returncode == 1 and str(missing) in run.stderr
    assert [(r["path"], r["index"], r["value"]) for r in rows] == [(str(good), "97", "2")]
