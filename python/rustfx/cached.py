"""rustfx.FeatureCache: `rustfx.files(paths, cache=cache)` (docs/feature_cache.md).

    cache = rustfx.FeatureCache("/data/fx-cache", max_bytes=20 << 30)
    ds = ds.map(lambda p: rustfx.ember_features(rustfx.files(p, cache=cache)),
                num_parallel_calls=tf.data.AUTOTUNE)

Every extractor function, `rustfx.extract` and the Keras layers given such
files give what they give without the cache, bit for bit: each file is
looked up under its key (its content's BLAKE3, or key="stat": its path and
metadata) and the spec's digest, and the misses are extracted and stored
while the epoch streams, so later epochs and later runs read instead of
extracting.

The lookups run in the extractor ops' kernels: the op gets the cache's
directory and options as attrs (`cache_dir`, `cache_key`,
`cache_max_bytes`) and uses the process's one handle of that cache (Rust,
src/cache_ops.rs), so tf.data's parallel map threads look up at once, with
no Python and no GIL per batch. Misses are stored by that handle's writer
thread in batched transactions (never waiting; a full queue drops rows), and
hits write nothing. A cache that fails (a full disk, a lock held too long, a
damaged file) is a miss: extraction goes on, the failure is counted
(stats()["errors"]) and printed once.

A graph with a cached extraction can be saved: the SavedModel holds the
directory and options as attrs and never depends on them to serve (where
the directory is missing or does not open as a cache, the op extracts
uncached and says so once). A layer's cache is not part of its config.
"""

import os
import re

import tensorflow as tf

from rustfx._common import ops
from rustfx_core.cache import figures_dict

__all__ = ["FeatureCache"]


class FeatureCache:
    """A feature cache in `directory` (created if missing) for the
    extractor ops: at most `max_bytes` of entries (None: the core's
    default, 10 GiB; the least recently used are evicted down to 90% of it
    after a put that passes it), keyed by "content" (default) or "stat"
    (rustfx_core.FeatureCache says what each risks). read_only=True: hits
    are served, misses extracted and never stored, nothing written (a cache
    filled once and shared by many trainers); a cache that cannot be
    written (read-only storage) is read so without it, said once. Bad
    options fail here with the core's message
    (tf.errors.InvalidArgumentError), and nothing else does: a cache that
    cannot be opened (damaged and not set aside, not a directory) is not
    used (the ops extract uncached), its failure in stats()["errors"], said
    once. Pass it as rustfx.files(paths, cache=...) or a layer's cache=.
    Objects with the same directory and options share one cache, its
    writer and its figures in a process."""

    def __init__(self, directory, max_bytes=None, key="content", read_only=False):
        self.directory, self.max_bytes, self.key = directory, max_bytes, key
        self.read_only = bool(read_only)
        self._attrs = dict(cache_dir=os.fsencode(directory), cache_key=str(key),
                           cache_max_bytes=-1 if max_bytes is None else int(max_bytes),
                           cache_read_only=self.read_only)
        self.stats()  # opened here, so bad options fail at construction

    def attrs(self):
        """The extractor ops' attrs of this cache."""
        return dict(self._attrs)

    def stats(self):
        """What this process's handle of the cache did, its queued rows
        committed first: {"hits", "misses", "corrupt", "evicted",
        "dropped" (rows not stored, the writer's queue full), "errors"
        (lookups and writes that failed: each a miss, or a row not
        stored)}; and what the cache holds, every process's: {"entries",
        "bytes"}; "read_only": whether misses go unstored."""
        with tf.init_scope():
            try:
                figures = ops.Rustfx_FeatureCacheStats(**self._attrs).numpy()
            except tf.errors.InvalidArgumentError as refused:
                # Bad options: the core's message, without the internal
                # op's name that eager execution wraps around it.
                raise tf.errors.InvalidArgumentError(
                    refused.node_def, refused.op, _core_message(refused.message)) from None
        return figures_dict(figures)

    def __repr__(self):
        read_only = ", read_only=True" if self.read_only else ""
        return f"rustfx.FeatureCache({self.directory!r}, max_bytes={self.max_bytes}, " \
               f"key={self.key!r}{read_only})"


def _core_message(message):
    """`message` without eager execution's "{{function_node ...}} " before
    it and " [Op:...]" after it."""
    message = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", message)
    return re.sub(r"\s*\[Op:[^\]]*\](\s*name:.*)?$", "", message, flags=re.S)


def check(cache):
    if not isinstance(cache, FeatureCache):
        raise TypeError(f"cache must be a rustfx.FeatureCache, got {type(cache).__name__}")
    return cache
