"""Byte features against the independent EMBER reference (ember_reference.py,
written from the definitions) and against the pure-Rust program; eager,
tf.function and tf.data agree."""

import os
import random
import re
import subprocess

import numpy as np
import pytest
import tensorflow as tf

import ember_reference as ref
import rustfx

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
RUST_CLI = os.path.join(ROOT, "target", "release", "rustfx-features")


def random_blobs(seed=0, count=120):
    rng = random.Random(seed)
    blobs = [b"", b"\0", b"MZ", b"x" * 2047, b"x" * 2048, b"x" * 3073,
             b"http://a.b C:\\Windows HKEY_LOCAL hello world " * 40]
    for _ in range(count):
        n = rng.choice([rng.randrange(0, 64), rng.randrange(0, 5000),
                        rng.randrange(5000, 70000)])
        alphabet = rng.choice([range(256), range(32, 128), range(0, 16)])
        blobs.append(bytes(rng.choice(alphabet) for _ in range(n)))
    return blobs


@pytest.fixture(scope="module")
def binaries():
    """ELF binaries and shared libraries under /usr, plus text."""
    paths = []
    for d, limit in (("/usr/bin", 12), ("/usr/lib/x86_64-linux-gnu", 8)):
        found = sorted(os.path.join(d, f) for f in os.listdir(d))
        found = [p for p in found if os.path.isfile(p) and not os.path.islink(p)
                 and 0 < os.path.getsize(p) < 8 << 20]
        paths += random.Random(d).sample(found, min(limit, len(found)))
    return paths


def reference_rows(fn, blobs):
    return np.stack([fn(b) for b in blobs])


@pytest.mark.parametrize("name,op,reference", [
    ("byte_histogram", rustfx.byte_histogram, ref.byte_histogram),
    ("byte_entropy_histogram", rustfx.byte_entropy_histogram,
     ref.byte_entropy_histogram),
    ("string_features", rustfx.string_features, ref.string_features),
])
def test_equal_reference_on_random_and_real_files(name, op, reference,
                                                  binaries, machine_files):
    blobs = random_blobs() + [open(p, "rb").read() for p in binaries + machine_files]
    nonempty = [b for b in blobs if b]
    got = op(nonempty).numpy()
    np.testing.assert_array_equal(got, reference_rows(reference, nonempty))


@pytest.mark.parametrize("window,step", [(1, 1), (7, 3), (256, 256), (512, 1024),
                                         (4096, 512)])
def test_entropy_histogram_parameters(window, step):
    blobs = [b for b in random_blobs(1, 40) if b]
    got = rustfx.byte_entropy_histogram(blobs, window=window, step=step).numpy()
    want = reference_rows(lambda b: ref.byte_entropy_histogram(b, window, step), blobs)
    np.testing.assert_array_equal(got, want)


def test_empty_input_zeros_by_default_or_nan_like_ember():
    for op in (rustfx.byte_histogram, rustfx.byte_entropy_histogram):
        assert not op([b""]).numpy().any()
        nan = op([b""], empty="nan").numpy()
        assert np.isnan(nan).all()
        assert np.isnan(ref.byte_histogram(b"")).all()
    np.testing.assert_array_equal(rustfx.string_features([b""]).numpy()[0],
                                  ref.string_features(b""))


def test_shapes_follow_input():
    x = tf.constant([[b"ab", b"c"], [b"", b"MZ"]])
    assert rustfx.byte_histogram(x).shape == (2, 2, 256)
    assert rustfx.string_features(b"hello world").shape == (104,)
    assert rustfx.byte_sequence(x, 8).shape == (2, 2, 8)


@pytest.mark.parametrize("preset,max_len,sampling", [
    ("ember", 4096, "head"), ("malconv2", 4096, "head"),
    ("malconv2", 4097, "head_tail"), ("ember", 1, "head_tail")])
def test_byte_sequence_equals_reference(preset, max_len, sampling, binaries):
    blobs = random_blobs(2, 30) + [open(p, "rb").read() for p in binaries[:5]]
    params = dict(rustfx.BYTE_SEQUENCE_PRESETS[preset], max_len=max_len)
    got = rustfx.byte_sequence(blobs, max_len, preset=preset,
                               sampling=sampling).numpy()
    want = np.stack([ref.byte_sequence(b, params["max_len"], params["shift"],
                                       params["pad_value"], sampling)
                     for b in blobs])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["int16", "uint16", "int32", "int64"])
@pytest.mark.parametrize("sampling", ["head", "head_tail"])
def test_malconv2_ragged_rows_are_the_reference_unpadded(dtype, sampling, binaries, tmp_path):
    """MalConv2 as its authors feed it: each file's kept bytes only, in a
    narrow dtype, and a batch padded to its longest file (to_tensor); the
    same through rustfx.files, and dense rows of the dtype are the
    reference's row as it is."""
    blobs = random_blobs(2, 30) + [b""] + [open(p, "rb").read() for p in binaries[:4]]
    max_len = 5000
    rows = rustfx.byte_sequence(blobs, max_len, preset="malconv2", sampling=sampling,
                                dtype=dtype, output="ragged")
    assert isinstance(rows, tf.RaggedTensor) and rows.dtype == tf.as_dtype(dtype)
    want = [ref.byte_sequence(b, max_len, 1, 0, sampling) for b in blobs]
    lengths = [min(len(b), max_len) for b in blobs]
    assert rows.row_lengths().numpy().tolist() == lengths
    for got, w, n in zip(rows.to_list(), want, lengths):
        assert got == w[:n].tolist()
    padded = rows.to_tensor().numpy()
    assert padded.shape == (len(blobs), max(lengths)) and padded.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(padded, np.stack([w[:max(lengths)] for w in want]))
    paths = []
    for i, b in enumerate(blobs):
        paths.append(str(tmp_path / f"f{i}"))
        open(paths[-1], "wb").write(b)
    from_files = rustfx.byte_sequence(rustfx.files(paths), max_len, preset="malconv2",
                                      sampling=sampling, dtype=dtype, output="ragged")
    assert from_files.to_list() == rows.to_list()
    dense = rustfx.byte_sequence(blobs, max_len, preset="malconv2", sampling=sampling,
                                 dtype=dtype).numpy()
    assert dense.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(dense, np.stack(want))


def test_byte_sequence_refuses_a_dtype_too_narrow():
    with pytest.raises(tf.errors.InvalidArgumentError, match="uint8 cannot hold"):
        rustfx.byte_sequence([b"a"], 4, preset="malconv2", dtype="uint8")
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be one of int32"):
        rustfx.byte_sequence([b"a"], 4, dtype="float32")
    # uint8 holds bytes as they are when the pad fits too.
    got = rustfx.byte_sequence([b"\x00\xff"], 3, shift=0, pad_value=-1, dtype="int16")
    assert got.numpy().tolist() == [[0, 255, -1]]


def test_byte_sequence_presets():
    ember = rustfx.byte_sequence([b"\x00\xff"]).numpy()
    assert ember.shape == (1, 1 << 20)
    assert ember[0, :3].tolist() == [0, 255, 256]
    m2 = rustfx.byte_sequence([b"\x00\xff"], 4, preset="malconv2").numpy()
    assert m2.tolist() == [[1, 256, 0, 0]]


def run_cli(*args):
    out = subprocess.run([RUST_CLI, *map(str, args)], capture_output=True,
                         check=True, text=True).stdout
    # One line per file: its path, a tab, the values.
    return [line.split("\t", 1)[1].split() for line in out.splitlines()]


def test_pure_rust_program_reports_unreadable_files_and_goes_on(tmp_path):
    """rustfx-features treats a file it cannot read as rustfx-predict and
    rustfx-sensor do: named on stderr, the others printed by path, exit 1;
    files past --max-bytes are truncated as read_files truncates them."""
    good, missing = tmp_path / "good\tname", tmp_path / "missing"
    good.write_bytes(b"aab" * 10)
    run = subprocess.run([RUST_CLI, "--max-bytes", "3", "byte_histogram", good, missing, good],
                         capture_output=True, text=True)
    assert run.returncode == 1, run
    assert str(missing) in run.stderr and "1 of 3 files failed" in run.stderr, run.stderr
    lines = run.stdout.splitlines()
    want = rustfx.byte_histogram(rustfx.read_files([str(good)], max_bytes=3)).numpy()[0]
    assert len(lines) == 2
    for line in lines:
        path, values = line.split("\t", 1)
        assert path == str(good).replace("\t", "\\t")  # escaped: one line per file
        np.testing.assert_array_equal(np.array(values.split(), np.float32), want)
    usage = subprocess.run([RUST_CLI, "--max-bytes", "-1", "byte_histogram", good],
                           capture_output=True, text=True)
    assert usage.returncode == 2 and "max_bytes must be in" in usage.stderr, usage


def test_pure_rust_program_eager_and_tf_data_agree(binaries, machine_files):
    """The same bytes give the same features in a Rust program with no TF,
    in an eager op and inside a tf.data map."""
    paths = binaries[:6] + machine_files[:6]
    contents = [open(p, "rb").read() for p in paths]
    cases = [
        (["byte_histogram"], rustfx.byte_histogram, np.float32),
        (["byte_entropy_histogram", "window=2048", "step=1024"], rustfx.byte_entropy_histogram,
         np.float32),
        (["string_features"], rustfx.string_features, np.float32),
        (["byte_sequence", "max_len=1000", "preset=malconv2", "sampling=head_tail"],
         lambda x: rustfx.byte_sequence(x, 1000, preset="malconv2",
                                        sampling="head_tail"), np.int32),
    ]
    for cli_args, op, dtype in cases:
        rust = np.array(run_cli(*cli_args, *paths), dtype=dtype)
        eager = op(contents).numpy()
        ds = (tf.data.Dataset.from_tensor_slices(contents)
              .map(op, num_parallel_calls=tf.data.AUTOTUNE))
        mapped = np.stack([row.numpy() for row in ds])
        np.testing.assert_array_equal(rust, eager, err_msg=cli_args[0])
        np.testing.assert_array_equal(eager, mapped, err_msg=cli_args[0])
    rust = run_cli("hashed_ngrams", "tokenizer=word", "hash=fingerprint64",
                   f"num_buckets={2**20}", "ngram_widths=[1,2]", "lowercase=true",
                   *paths)
    eager = rustfx.hashed_ngrams(contents, num_buckets=2**20, ngram_widths=(1, 2),
                                 tokenizer="word", lowercase=True)
    assert [[int(v) for v in row] for row in rust] == eager.to_list()


BAD = [
    (lambda: rustfx.byte_entropy_histogram([b"a"], window=0), "window"),
    (lambda: rustfx.byte_entropy_histogram([b"a"], step=0), "step"),
    (lambda: rustfx.byte_entropy_histogram([b"a"], window=2**24 + 1), "window"),
    (lambda: rustfx.byte_histogram([b"a"], empty="inf"), "empty"),
    (lambda: rustfx.byte_sequence([b"a"], 0), "max_len"),
    (lambda: rustfx.byte_sequence([b"a"], 2**26 + 1), "max_len"),
    (lambda: rustfx.byte_sequence([b"a"], 8, pad_value=7), "pad_value"),
    (lambda: rustfx.byte_sequence([b"a"], 8, shift=2**31), "shift"),
    (lambda: rustfx.byte_sequence([b"a"], 8, sampling="middle"), "sampling"),
    (lambda: rustfx.byte_sequence([b"a"], 8, preset="malconv3"), "preset"),
    (lambda: rustfx.byte_histogram([1.0]), "tf.string"),
]


@pytest.mark.parametrize("make,word", BAD)
def test_bad_parameters_fail_with_what_is_allowed(make, word):
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError, TypeError),
                       match=re.escape(word)):
        make()
