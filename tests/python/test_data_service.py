"""FX on a tf.data service worker in another process: the worker loads rustfx
via `python -m rustfx.service`, and its results equal local extraction."""

import os
import subprocess
import sys
import time

import numpy as np
import tensorflow as tf

import rustfx


def test_remote_worker_runs_rustfx_ops(machine_files):
    dispatcher = tf.data.experimental.service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    worker = subprocess.Popen(
        [sys.executable, "-m", "rustfx.service", "--dispatcher", address],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    try:
        deadline = time.monotonic() + 120
        for line in worker.stdout:
            if "worker started" in line or time.monotonic() > deadline:
                break
        assert worker.poll() is None, "worker exited"

        def fx(path):
            contents = rustfx.read_files(path)
            return (rustfx.byte_histogram(contents),
                    rustfx.hashed_ngrams(contents, num_buckets=1 << 16,
                                         tokenizer="word", output="counts"))
        local = tf.data.Dataset.from_tensor_slices(machine_files).batch(4).map(fx)
        remote = local.apply(tf.data.experimental.service.distribute(
            processing_mode="parallel_epochs", service=dispatcher.target,
            job_name="rustfx-test"))
        got = list(remote.as_numpy_iterator())
        want = list(local.as_numpy_iterator())
        assert len(got) == len(want)
        for (gh, gc), (wh, wc) in zip(got, want):
            np.testing.assert_array_equal(gh, wh)
            np.testing.assert_array_equal(gc, wc)
    finally:
        worker.kill()
        worker.wait()
