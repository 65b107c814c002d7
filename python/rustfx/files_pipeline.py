"""A rustfx input pipeline whose parts are kept: `from_files(paths, fx,
batch_size)` is `from_tensor_slices(paths).batch(batch_size).map(lambda p:
fx(rustfx.files(p)))` as a `FilesPipeline`, which knows its paths, its FX
and its batching. Two modules take one: rustfx.pipeline.profile times each
stage alone on its files, and rustfx.offload splits its files between the
trainer and tf.data service workers. Also exported as
rustfx.pipeline.FilesPipeline and rustfx.pipeline.from_files."""

import os

import tensorflow as tf

from rustfx import io

__all__ = ["FilesPipeline", "from_files"]


class FilesPipeline:
    """The rustfx pipeline `from_tensor_slices(paths).batch(batch_size)
    .map(lambda p: fx(rustfx.files(p, max_bytes=...)))` with its parts
    kept, so `profile` can time each stage alone. `fx` takes what any rustfx
    extractor takes (a `rustfx.files(...)` or a tf.string tensor of
    contents) and returns the features. `cache`: a rustfx.FeatureCache the
    files' features are looked up in (rustfx.files(..., cache=)); its
    options are attrs of the ops in the graph, so rustfx.offload's workers
    use the same cache directory (docs/scale.md, "Launchers")."""

    def __init__(self, paths, fx, batch_size=32, *, max_bytes=io.DEFAULT_MAX_BYTES,
                 num_parallel_calls=tf.data.AUTOTUNE, prefetch=tf.data.AUTOTUNE, cache=None):
        # Bytes, as everywhere in rustfx: a name that is not UTF-8 keeps them.
        self.paths = [bytes(os.fsencode(p)) for p in paths]
        self.fx, self.batch_size, self.max_bytes = fx, int(batch_size), max_bytes
        self.num_parallel_calls, self.prefetch = num_parallel_calls, prefetch
        self.cache = cache

    def files(self, paths):
        """rustfx.files of `paths` with this pipeline's max_bytes and cache."""
        return io.files(paths, max_bytes=self.max_bytes, cache=self.cache)

    def batches(self, paths=None):
        """`paths` (default all) batched, nothing else."""
        return tf.data.Dataset.from_tensor_slices(
            tf.constant(self.paths if paths is None else paths, tf.string)).batch(self.batch_size)

    def dataset(self, paths=None):
        """The pipeline as a tf.data.Dataset (of `paths`, default all)."""
        fx = self.fx
        return self.batches(paths).map(lambda p: fx(self.files(p)),
                                       num_parallel_calls=self.num_parallel_calls
                                       ).prefetch(self.prefetch)


def from_files(paths, fx, batch_size=32, **kwargs):
    """A FilesPipeline (see there): `fx(rustfx.files(batch of paths))` per
    batch; `.dataset()` is what to train on, `profile(...)` times its parts."""
    return FilesPipeline(paths, fx, batch_size, **kwargs)
