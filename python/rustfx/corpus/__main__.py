"""`python -m rustfx.corpus` (the `rustfx-extract` script): corpus
extraction on Ray, from the command line (docs/corpus.md)."""

import argparse
import sys

from rustfx.corpus.formats import SHARD_FORMATS
from rustfx_core.corpus.features import NAMED_FEATURE_SETS
from rustfx_core.corpus.inputs import DEFAULT_READ_BATCH_BYTES, MAX_READ_BATCH_FILES
from rustfx_core.corpus.shards import DEFAULT_SHARD_SIZE


def main(argv=None, prog=None):
    """The CLI; `prog` names it in messages (default: the script's name,
    rustfx-extract)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Extract features from every file of INPUT on Ray Data, into "
                    "shards of OUTPUT, exactly once and resumable (docs/corpus.md).")
    parser.add_argument("--spec", required=True,
                        help="a FeatureSpec or feature-set JSON file, or a ready-made name: "
                             + ", ".join(NAMED_FEATURE_SETS))
    parser.add_argument("--input", required=True,
                        help="a directory (recursive), a glob, a file with one path per "
                             "line, or a URI (file://, s3://, gs://)")
    parser.add_argument("--output", required=True,
                        help="the output directory: a path, or a URI (s3://bucket/prefix, "
                             "gs://, file://; pyarrow's query parameters pass through, e.g. "
                             "s3://b/p?endpoint_override=HOST:PORT&scheme=http)")
    parser.add_argument("--format", default="parquet", choices=tuple(SHARD_FORMATS))
    parser.add_argument("--address", help="a Ray cluster to join (default: a local Ray "
                                          "on all cores)")
    parser.add_argument("--max-bytes", type=int, default=None,
                        help="read at most this many bytes of each file (default 64 MiB)")
    parser.add_argument("--on-error", default="record", choices=("record", "raise"))
    parser.add_argument("--shard-size", type=int, default=DEFAULT_SHARD_SIZE,
                        help=f"files per shard (default {DEFAULT_SHARD_SIZE})")
    parser.add_argument("--workers", type=int, default=None,
                        help="actors (default: the cluster's CPUs)")
    parser.add_argument("--read-batch-bytes", type=int, default=DEFAULT_READ_BATCH_BYTES,
                        help="a worker reads files in batches of at most this many bytes "
                             f"(by their sizes, each at most MAX_BYTES) and {MAX_READ_BATCH_FILES} "
                             "files, so it holds at most max(READ_BATCH_BYTES, MAX_BYTES) bytes "
                             f"of contents (default {DEFAULT_READ_BATCH_BYTES >> 20} MiB)")
    args = parser.parse_args(argv)
    if args.shard_size < 1:
        parser.error("--shard-size must be at least 1")
    try:
        # Here, not at the top: Ray is the optional extra rustfx[ray], and
        # --help and argument errors need none.
        from rustfx.corpus.job import run
    except ImportError as e:
        print(f"{parser.prog}: error: corpus extraction runs on Ray ({e}): "
              "pip install 'rustfx[ray]'", file=sys.stderr)
        return 2
    try:
        run(args.spec, args.input, args.output, fmt=args.format, address=args.address,
            max_bytes=args.max_bytes, on_error=args.on_error, shard_size=args.shard_size,
            workers=args.workers, read_batch_bytes=args.read_batch_bytes)
    except (ValueError, OSError) as e:  # a bad spec is a ValueError with the core's message
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(prog="python -m rustfx.corpus"))
