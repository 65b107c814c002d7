"""rustfx.files(paths, cache=rustfx.FeatureCache(...)) and a layer's
cache=: every extractor function gives what its op gives without the cache,
bit for bit, on every registry example (the oracle: the op itself), first
epoch and cached; in a tf.data map with parallel calls; a changed file is
a miss; the read errors are kept; the cache is not in a layer's config.
The cache's own properties (two writers, kill -9, corruption, the cap) are
tests/python/test_feature_cache.py's."""

import glob
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import rustfx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PE_FILES = sorted(p for p in glob.glob(os.path.join(ROOT, "tests/golden/pe/*/*"))
                  if os.path.isfile(p))[:24]


def raw(t):
    """A tensor's values bit for bit (strings as their bytes)."""
    t = t.numpy()
    return t.tolist() if t.dtype == object else (t.dtype.str, t.shape, t.tobytes())


def as_numpy(x):
    if isinstance(x, tf.SparseTensor):
        return ("sparse", raw(x.indices), raw(x.values), tuple(x.dense_shape.numpy()))
    if isinstance(x, tf.RaggedTensor):
        return ("ragged", raw(x.flat_values), [raw(s) for s in x.nested_row_splits])
    return ("dense", raw(x))


@pytest.fixture
def files(tmp_path):
    text = tmp_path / "text.txt"
    text.write_bytes(b"hello world C:\\Windows http://a.b HKEY_X \xff\xfe w\0i\0d\0e\0")
    (tmp_path / "empty").write_bytes(b"")
    return PE_FILES + [str(text), str(tmp_path / "empty")]


def test_every_registry_example_equals_the_op(tmp_path, files):
    cache = rustfx.FeatureCache(tmp_path / "cache")
    paths = tf.constant(files)
    kinds = set()
    for name, entry in rustfx.registry().items():
        for params in entry["examples"]:
            spec = rustfx.FeatureSpec(name, **params)
            kinds.add((spec.rows.kind, spec.rows.dtype))
            expected = as_numpy(rustfx.extract(spec, rustfx.files(paths)))
            before = cache.stats()
            first = rustfx.extract(spec, rustfx.files(paths, cache=cache))
            second = rustfx.extract(spec, rustfx.files(paths, cache=cache))
            after = cache.stats()
            assert as_numpy(first) == expected, spec.to_json()
            assert as_numpy(second) == expected, spec.to_json()
            assert after["hits"] - before["hits"] == len(files), spec.to_json()
    assert {"dense", "ragged", "sparse"} <= {k for k, _ in kinds}
    assert ("ragged", "string") in kinds


def test_tf_data_parallel_map_and_a_scalar_path(tmp_path, files):
    cache = rustfx.FeatureCache(tmp_path / "cache")

    def pipeline(use_cache):
        return tf.data.Dataset.from_tensor_slices(files).batch(5).map(
            lambda p: rustfx.ember_features(rustfx.files(p, cache=cache if use_cache else None)),
            num_parallel_calls=4, deterministic=True)

    expected = np.concatenate([b.numpy() for b in pipeline(False)])
    for epoch in range(2):
        got = np.concatenate([b.numpy() for b in pipeline(True)])
        assert got.tobytes() == expected.tobytes()
    stats = cache.stats()
    assert stats["misses"] == len(files) and stats["hits"] == len(files)
    one = rustfx.byte_histogram(rustfx.files(tf.constant(files[0]), cache=cache))
    assert one.shape == (256,)
    assert one.numpy().tobytes() == rustfx.byte_histogram(
        rustfx.files(tf.constant(files[0]))).numpy().tobytes()


def test_a_changed_file_is_a_miss(tmp_path):
    cache = rustfx.FeatureCache(tmp_path / "cache")
    path = tmp_path / "doc"
    path.write_bytes(b"one two three")
    p = tf.constant([str(path)])
    first = rustfx.byte_histogram(rustfx.files(p, cache=cache)).numpy()
    path.write_bytes(b"four five")
    second = rustfx.byte_histogram(rustfx.files(p, cache=cache)).numpy()
    assert second.tobytes() == rustfx.byte_histogram(rustfx.files(p)).numpy().tobytes()
    assert first.tobytes() != second.tobytes()
    assert cache.stats()["misses"] == 2


def test_read_errors_are_kept(tmp_path):
    cache = rustfx.FeatureCache(tmp_path / "cache")
    missing = tf.constant([str(tmp_path / "missing")])
    with pytest.raises(Exception, match="missing"):
        rustfx.byte_histogram(rustfx.files(missing, cache=cache))
    empty = rustfx.byte_histogram(rustfx.files(missing, on_error="empty", cache=cache))
    assert empty.numpy().tobytes() == rustfx.byte_histogram(
        tf.constant([b""])).numpy().tobytes()
    assert cache.stats()["entries"] == 0  # an unreadable file is never stored
    # Any rank, as the op: the lookups are the op's.
    grid = tf.constant([[PE_FILES[0], PE_FILES[1]], [PE_FILES[2], PE_FILES[0]]])
    assert rustfx.byte_histogram(rustfx.files(grid, cache=cache)).numpy().tobytes() == \
        rustfx.byte_histogram(rustfx.files(grid)).numpy().tobytes()
    with pytest.raises(TypeError, match="rustfx.FeatureCache"):
        rustfx.files(missing, cache=str(tmp_path))


def test_keras_layer_with_cache(tmp_path, files):
    cache = rustfx.FeatureCache(tmp_path / "cache")
    layer = rustfx.layers.ByteHistogram(files={}, cache=cache)
    plain = rustfx.layers.ByteHistogram(files={})
    paths = tf.constant(files)
    for _ in range(2):
        assert layer(paths).numpy().tobytes() == plain(paths).numpy().tobytes()
    assert cache.stats()["hits"] == len(files)
    config = layer.get_config()
    assert "cache" not in config and config["files"] == {}
    assert rustfx.layers.ByteHistogram.from_config(config).cache is None
    with pytest.raises(TypeError, match="give files= too"):
        rustfx.layers.ByteHistogram(cache=cache)
    model = keras.Sequential([keras.Input((), dtype="string"), layer])
    assert model.predict(paths, verbose=0).tobytes() == plain(paths).numpy().tobytes()


def test_content_key_is_blake3():
    # The BLAKE3 reference's vectors (BLAKE3-team/BLAKE3, test_vectors):
    # the empty input, and "abc" (b3sum's).
    got = rustfx.content_key(tf.constant([b"", b"abc"])).numpy()
    assert [g.decode() for g in got] == [
        "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
        "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"]
    assert rustfx.content_key(tf.constant([[b"a"], [b"b"]])).shape == (2, 1)


def test_a_saved_model_serves_without_the_cache_directory(tmp_path, files):
    directory = tmp_path / "cache"
    cache = rustfx.FeatureCache(directory, key="stat")

    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def features(self, paths):
            return rustfx.ember_features(rustfx.files(paths, cache=cache))

    model = Model()
    paths = tf.constant(files)
    expected = rustfx.ember_features(rustfx.files(paths)).numpy().tobytes()
    assert model.features(paths).numpy().tobytes() == expected
    assert model.features(paths).numpy().tobytes() == expected
    assert cache.stats()["hits"] == len(files)
    tf.saved_model.save(model, str(tmp_path / "model"))
    # Served where the directory is gone: extracted, never created again.
    import shutil
    shutil.rmtree(directory)
    code = ("import sys, tensorflow as tf, rustfx\n"
            "m = tf.saved_model.load(sys.argv[1])\n"
            "paths = tf.constant(sys.argv[2:])\n"
            "got = m.features(paths).numpy().tobytes()\n"
            "want = rustfx.ember_features(rustfx.files(paths)).numpy().tobytes()\n"
            "assert got == want\n"
            "print('served')\n")
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-c", code, str(tmp_path / "model"), *files],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "served" in run.stdout, run.stderr[-3000:]
    assert "extracting without the feature cache" in run.stderr
    assert not directory.exists()


def test_a_full_disk_never_stops_extraction(tmp_path, files):
    # A cache on a 256 KiB tmpfs: its writes fail (database or disk is
    # full); extraction goes on with exact rows, and the failures are
    # counted. Needs root to mount (skipped otherwise).
    import subprocess
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        cache = rustfx.FeatureCache(mount / "cache")
        paths = tf.constant(files)
        expected = rustfx.ember_features(rustfx.files(paths)).numpy().tobytes()
        for _ in range(3):
            got = rustfx.ember_features(rustfx.files(paths, cache=cache))
            assert got.numpy().tobytes() == expected
        stats = cache.stats()
        assert stats["errors"] >= 1, stats
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)
