"""Concurrency stress: many Compute calls at once give exactly the
single-threaded results, for read_files and every extractor.

The reference is eager and one element at a time. It is compared, element
by element and bit for bit, with: tf.data maps with num_parallel_calls 8 and
16 (deterministic), a batched map (so each Compute is also sharded over the
intra-op pool), four pipelines iterated at once from Python threads, and one
tf.function called from several Python threads at once. The inputs are real
files under /usr (the `machine_files` fixture), the random `documents`
fixture written to files, and two failing paths.
"""

import faulthandler
import os
import random
import sys
import threading

import numpy as np
import pytest
import tensorflow as tf

import hostile_files as hf
import rustfx

MAX_BYTES = 24 << 10          # truncates most real files
SPECS = hf.extractor_specs(widths=(1, 2))
FNS = {name: hf.build(spec) for name, spec in SPECS.items()}
TEST_TIMEOUT = 300            # seconds; a deadlock dumps stacks and exits
THREAD_TIMEOUT = 240


@pytest.fixture(autouse=True)
def deadline():
    """A hang (a deadlock in TF or in a kernel) must fail CI, not stall it:
    faulthandler dumps every thread's stack and exits the process."""
    faulthandler.dump_traceback_later(TEST_TIMEOUT, exit=True, file=sys.stderr)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="module")
def paths(machine_files, documents, tmp_path_factory):
    root = tmp_path_factory.mktemp("docs")
    written = []
    for i, doc in enumerate(documents[:200]):
        path = root / f"doc{i}"
        path.write_bytes(doc)
        written.append(str(path))
    failing = [str(root / "missing"), str(root)]
    mixed = machine_files + written + failing
    random.Random(1).shuffle(mixed)
    return mixed


def read_features(path):
    """read_files(on_error="empty") then every extractor, on one path or a
    batch of paths."""
    contents, status = rustfx.read_files(path, max_bytes=MAX_BYTES,
                                         on_error="empty", with_status=True)
    out = {"contents": contents, "code": status.codes,
           "message": status.messages}
    out.update({name: fn(contents) for name, fn in FNS.items()})
    return out


@pytest.fixture(scope="module")
def reference(paths):
    """Eager, one element at a time, in this thread."""
    rows = []
    for path in paths:
        row = {k: hf.canonical(v) for k, v in read_features(tf.constant(path)).items()}
        rows.append(row)
    # Sanity: the reads are Python's reads, failures are flagged.
    for path, row in zip(paths, rows):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                assert row["contents"] == f.read(MAX_BYTES), path
            assert row["code"] == 0
        else:
            assert row["code"] in (3, 5) and path.encode() in row["message"]
    return rows


def split_batch(name, value, n):
    """A batched result as n per-element canonical results, in the form a
    scalar input gives."""
    if isinstance(value, tf.SparseTensor):
        indices, values = value.indices.numpy(), value.values.numpy()
        rows = []
        for i in range(n):
            mask = indices[:, 0] == i
            rows.append(("sparse", indices[mask][:, 1:], values[mask],
                         value.dense_shape.numpy()[1:]))
        return rows
    if isinstance(value, tf.RaggedTensor):
        dtype = object if value.dtype == tf.string else value.dtype.as_numpy_dtype
        return [np.asarray(r, dtype=dtype) for r in value.numpy()]
    array = value.numpy()
    if array.dtype == object:
        return list(array)
    return [array[i] for i in range(n)]


def assert_rows_equal(got, want, what):
    assert len(got) == len(want), (what, len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.keys() == w.keys()
        for name in w:
            hf.assert_same(g[name], w[name], f"{what}: element {i}, {name}")


def run_pipeline(paths, parallel, batch=None, deterministic=True):
    ds = tf.data.Dataset.from_tensor_slices(
        (tf.range(len(paths), dtype=tf.int64), tf.constant(paths)))
    if batch:
        ds = ds.batch(batch)
    ds = ds.map(lambda i, p: (i, read_features(p)), num_parallel_calls=parallel,
                deterministic=deterministic)
    rows = {}
    for index, element in ds:
        index = index.numpy()
        if batch:
            n = len(index)
            split = {k: split_batch(k, v, n) for k, v in element.items()}
            for j, i in enumerate(index):
                rows[int(i)] = {k: split[k][j] for k in split}
        else:
            rows[int(index)] = {k: hf.canonical(v) for k, v in element.items()}
    order = list(rows)
    if deterministic:
        assert order == sorted(order), "deterministic=True reordered elements"
    return [rows[i] for i in range(len(paths))]


@pytest.mark.parametrize("parallel,batch", [(8, None), (16, None), (16, 7)])
def test_tf_data_parallel_map_equals_single_threaded(paths, reference,
                                                     parallel, batch):
    got = run_pipeline(paths, parallel, batch)
    assert_rows_equal(got, reference, f"num_parallel_calls={parallel} batch={batch}")


def run_threads(targets):
    """Runs the callables in threads started together; returns their
    results, re-raising the first exception; fails on a hang."""
    barrier = threading.Barrier(len(targets))
    results, errors = [None] * len(targets), []

    def run(k, target):
        try:
            barrier.wait(THREAD_TIMEOUT)
            results[k] = target()
        except BaseException as e:  # noqa: BLE001 (re-raised below)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k, t), daemon=True)
               for k, t in enumerate(targets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(THREAD_TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    return results


def test_four_pipelines_iterated_at_once_from_threads(paths, reference):
    configs = [dict(parallel=8), dict(parallel=tf.data.AUTOTUNE),
               dict(parallel=16, batch=5),
               dict(parallel=4, deterministic=False)]   # re-sorted by index
    results = run_threads([lambda c=c: run_pipeline(paths, **c) for c in configs])
    for config, got in zip(configs, results):
        assert_rows_equal(got, reference, f"threaded pipeline {config}")


def test_tf_function_called_from_threads_at_once(paths, reference):
    features = tf.function(read_features,
                           input_signature=[tf.TensorSpec([None], tf.string)])
    features.get_concrete_function()   # trace once, before the threads

    def worker(seed):
        rng = random.Random(seed)
        rows = {}
        for _ in range(6):
            size = rng.randrange(1, 40)
            start = rng.randrange(0, len(paths) - size + 1)
            out = features(tf.constant(paths[start:start + size]))
            split = {k: split_batch(k, v, size) for k, v in out.items()}
            for j in range(size):
                got = {k: split[k][j] for k in split}
                assert_rows_equal([got], [reference[start + j]],
                                  f"tf.function thread {seed}, element {start + j}")
                rows[start + j] = True
        return len(rows)

    covered = run_threads([lambda s=s: worker(s) for s in range(6)])
    assert all(c > 0 for c in covered)


def test_one_batch_sharded_over_the_intra_op_pool(paths, reference):
    """One Compute over every element: Shard splits it across threads."""
    out = read_features(tf.constant(paths))
    n = len(paths)
    split = {k: split_batch(k, v, n) for k, v in out.items()}
    got = [{k: split[k][i] for k in split} for i in range(n)]
    assert_rows_equal(got, reference, "one sharded batch")


def _rows(value, n):
    """Per-element rows of a batch result (dense, ragged or sparse)."""
    if isinstance(value, tf.SparseTensor):
        indices, values = value.indices.numpy(), value.values.numpy()
        return [("sparse", indices[indices[:, 0] == r, 1], values[indices[:, 0] == r])
                for r in range(n)]
    if isinstance(value, tf.RaggedTensor):
        return [row for row in value.numpy()]
    return list(value.numpy())


@pytest.mark.parametrize("name", sorted(SPECS))
def test_byte_balanced_sharding_with_one_huge_document(name):
    """Kernels split a batch between threads by bytes: a 3 MiB document
    among many small and empty ones, at the start, middle and end, gives
    each element the row it gets alone."""
    rng = random.Random(name)
    huge = bytes(rng.randrange(256) for _ in range(1 << 12)) * 768
    small = [bytes(rng.randrange(32, 127) for _ in range(rng.randrange(0, 300)))
             for _ in range(150)] + [b""] * 10
    fn = FNS[name]
    alone = {}
    for doc in [huge] + small:
        if doc not in alone:
            alone[doc] = _rows(fn(tf.constant([doc])), 1)[0]
    for position in (0, len(small) // 2, len(small)):
        batch = small[:position] + [huge] + small[position:]
        got = _rows(fn(tf.constant(batch)), len(batch))
        for i, doc in enumerate(batch):
            hf.assert_same(got[i], alone[doc], f"{name} element {i} (huge at {position})")
