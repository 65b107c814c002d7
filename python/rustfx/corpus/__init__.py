"""Corpus extraction on Ray Data: one row per file, in shards, exactly once.

    python -m rustfx.corpus --spec ember2024 --input DIR --output OUT

lists INPUT, sorts the paths, cuts the sorted list into shards of
`shard_size` paths (shard i = paths[i*S:(i+1)*S]) and has Ray actors
extract each shard and commit it as OUT/part-<i>.parquet (or .tfrecord),
so that a shard is either absent or complete; a rerun skips the shards
already committed, so after a crash, a Ctrl-C or a lost node every path
ends up in exactly one committed row. docs/corpus.md is the reference.

This package is the driver side, with TensorFlow and Ray: the job (job),
TFRecord shards (tfrecord), reading OUT back (readers), the CLI
(__main__). What the workers run is rustfx_core.corpus, which imports
neither, so a Parquet job's workers never load TensorFlow. Everything
public of both is importable from here.
"""

try:
    import pyarrow  # noqa: F401
except ImportError as e:  # the extra is not installed
    raise ImportError("rustfx.corpus (python -m rustfx.corpus, rustfx-extract) needs the extra "
                      "rustfx[ray] (ray[data] and pyarrow): pip install 'rustfx[ray]'") from e

from rustfx.corpus.formats import SHARD_FORMATS
from rustfx.corpus.readers import load_feature_set, read_parquet
from rustfx.corpus.tfrecord import TFRecordShards, parse_schema, read_tfrecord
from rustfx_core.corpus import *  # noqa: F401,F403
from rustfx_core.corpus import __all__ as _core_all



def __getattr__(name):
    """`run` and `extract_dataset`, from the Ray job when first used: Ray is
    the optional extra rustfx[ray], so `import rustfx.corpus` (the readers,
    the CLI's --help) works without it."""
    if name in ("run", "extract_dataset"):
        from rustfx.corpus import job
        return getattr(job, name)
    raise AttributeError(f"module 'rustfx.corpus' has no attribute {name!r}")


__all__ = ["run", "extract_dataset", "SHARD_FORMATS", "load_feature_set", "read_parquet",
           "read_tfrecord", "parse_schema", "TFRecordShards", *_core_all]
