"""rustfx.files: every extractor reading its files itself gives exactly
what it gives on read_files' contents (the independent reference: the
two-op pipeline, whose reads test_read_files checks against Python's), and
fails or empties each hostile path as read_files does."""

import os
import re
import shutil
import time

import numpy as np
import pytest
import tensorflow as tf

import rustfx
import hostile_files
from hostile_files import (ERROR_CLASS, build, canonical, extractor_specs,
                           make_hostile_paths, short_tmpdir)

SPECS = extractor_specs()
MAX_BYTES = 6000


def assert_same(got, want, what):
    """Bitwise equal outputs of any kind (NaN equal to NaN)."""
    hostile_files.assert_same(canonical(got), canonical(want), what)


@pytest.fixture(scope="module")
def paths(machine_files, tmp_path_factory):
    """Real text and binary files, an empty file, files longer than
    MAX_BYTES, and two that cannot be read."""
    root = tmp_path_factory.mktemp("files_input")
    (root / "empty").write_bytes(b"")
    (root / "long").write_bytes(b"word " * 5000)
    return machine_files + [str(root / "empty"), str(root / "long"),
                            str(root / "missing"), str(root)]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_reading_files_equals_read_files_then_extracting(name, paths):
    extract = build(SPECS[name])
    read = dict(max_bytes=MAX_BYTES, on_error="empty")
    want = extract(rustfx.read_files(paths, **read))
    assert_same(extract(rustfx.files(paths, **read)), want, name)
    # The same inside a graph and in a tf.data map with parallel calls.
    graph = tf.function(lambda p: extract(rustfx.files(p, **read)))
    assert_same(graph(tf.constant(paths)), want, f"{name} in a graph")


def test_tf_data_map_gives_the_same_rows(paths):
    ids = lambda x: rustfx.hashed_ngrams(x, num_buckets=2**20, ngram_widths=[1, 2],  # noqa: E731
                                         output="sequence", max_tokens=512)
    files = tf.data.Dataset.from_tensor_slices(paths).batch(7)
    one_op = files.map(lambda p: ids(rustfx.files(p, on_error="empty")),
                       num_parallel_calls=tf.data.AUTOTUNE)
    two_ops = files.map(lambda p: ids(rustfx.read_files(p, on_error="empty")))
    for a, b in zip(one_op, two_ops, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_shape_of_the_paths_is_kept(paths):
    grid = tf.reshape(tf.constant(paths[:6]), [2, 3])
    got = rustfx.byte_histogram(rustfx.files(grid))
    assert got.shape == (2, 3, 256)
    want = rustfx.byte_histogram(rustfx.read_files(grid))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    ids = rustfx.hashed_ngrams(rustfx.files(grid), num_buckets=100)
    assert ids.shape[:2] == (2, 3)


def core_message(error):
    """The error's message without the eager wrapper that names the op."""
    return re.sub(r"^\{\{.*?\}\} ", "", error.message).split(" [Op:")[0]


@pytest.fixture(scope="module")
def hostile():
    """{name: (path, code, message regex)} of paths that cannot be read."""
    root = short_tmpdir()
    paths, sock = make_hostile_paths(root)
    yield {name: case for name, case in paths.items() if case[1] != 0}
    sock.close()
    shutil.rmtree(root, ignore_errors=True)


def test_each_hostile_path_fails_with_the_error_read_files_gives(hostile):
    for name, (path, code, message) in hostile.items():
        error = getattr(tf.errors, ERROR_CLASS[code])
        start = time.monotonic()
        with pytest.raises(error, match=message) as extractor_error:
            rustfx.string_features(rustfx.files([b"/etc/hostname", path]))
        assert time.monotonic() - start < 5, name
        with pytest.raises(error) as read_error:
            rustfx.read_files([path])
        assert core_message(extractor_error.value) == core_message(read_error.value), name


def test_on_error_empty_makes_a_hostile_path_an_empty_document(hostile):
    paths = [path for path, _, _ in hostile.values()]
    got = rustfx.ember_features(rustfx.files(paths, on_error="empty"))
    want = rustfx.ember_features(tf.constant([b""] * len(paths)))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_the_lowest_failing_element_is_reported(tmp_path):
    paths = ["/etc/hostname"] * 200 + [str(tmp_path / "first_missing"), "/dev/zero"]
    with pytest.raises(tf.errors.NotFoundError, match="first_missing"):
        rustfx.byte_histogram(rustfx.files(paths))


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_bytes=-1), "max_bytes must be in"),
    (dict(max_bytes=2**31), "max_bytes must be in"),
    (dict(on_error="ignore"), "on_error"),
])
def test_bad_read_parameters_fail_at_construction(kwargs, message):
    @tf.function
    def graph(p):
        return rustfx.byte_histogram(rustfx.files(p, **kwargs))
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match=message):
        graph.get_concrete_function(tf.TensorSpec([None], tf.string))


def test_read_parameters_without_paths_are_refused():
    from rustfx._loader import ops
    with pytest.raises(tf.errors.InvalidArgumentError, match="only when the input holds paths"):
        ops.Rustfx_DenseRows(input=[b"abc"], spec=rustfx.FeatureSpec("byte_histogram").to_json(),
                             Tout=tf.float32, read_max_bytes=10)


def test_a_file_larger_than_the_kept_buffer_is_read_whole(tmp_path):
    """Files above the 4 MiB a thread keeps between documents are read in
    full, and the next (small) file is not polluted by the large one."""
    big, small = tmp_path / "big", tmp_path / "small"
    big.write_bytes(os.urandom(9 << 20))
    small.write_bytes(b"tiny")
    paths = [str(big), str(small), str(big)]
    got = rustfx.general_file_info(rustfx.files(paths))
    want = rustfx.general_file_info(rustfx.read_files(paths))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert got.numpy()[1, 0] == 4
