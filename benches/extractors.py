"""Each extractor through its TF op, on one large batch, with TF's intra-op
pool at 1 and at 2 threads: MB/s per core, and how it scales.

One eager call per repetition on the whole batch (the kernel splits it
between the pool's threads by bytes), best of N, in a fresh process per
thread count (TF fixes its pools at start-up). Byte features run on every
file of a mix of text and binaries; n-gram extractors on text files (Python,
C headers, Perl).

    make bench                    # runs this too
    .venv/bin/python benches/extractors.py --files 600 --repeat 5
    # n-gram ids and sparse counts only, on Python source, one thread:
    .venv/bin/python benches/extractors.py --only ids --only sparse \
        --texts '/usr/lib/python3.11/**/*.py' --files 150 --thread-counts 1
"""

import argparse
import glob
import json
import os
import random
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

WIDTHS = (1, 2)
# hashed_ngrams settings, timed on text files: the README's figures.
HASHED_NGRAMS = [
    # (name, kwargs)
    ("whitespace 1-2 ids (ragged)", dict(num_buckets=1 << 20, ngram_widths=WIDTHS)),
    ("whitespace 1-2 sequence 1024",
     dict(num_buckets=1 << 20, ngram_widths=WIDTHS, output="sequence", max_tokens=1024)),
    ("whitespace 1-2 counts (dense 2^18)",
     dict(num_buckets=1 << 18, ngram_widths=WIDTHS, output="counts")),
    ("whitespace 1-2 sparse", dict(num_buckets=1 << 20, ngram_widths=WIDTHS, output="sparse")),
    ("word 1-2 ids (lowercase)",
     dict(num_buckets=1 << 20, ngram_widths=WIDTHS, tokenizer="word", lowercase=True)),
    ("word 1-2 sparse (lowercase)",
     dict(num_buckets=1 << 20, ngram_widths=WIDTHS, tokenizer="word", lowercase=True,
          output="sparse")),
    ("sklearn_word 1-2 sparse l2 (HashingVectorizer)",
     dict(num_buckets=1 << 18, ngram_widths=WIDTHS, tokenizer="sklearn_word",
          lowercase=True, hash="murmur3", alternate_sign=True, norm="l2", output="sparse")),
    ("byte 3-grams ids (ragged)",
     dict(num_buckets=1 << 20, ngram_widths=(3,), tokenizer="byte")),
    ("char 3-grams ids (ragged)",
     dict(num_buckets=1 << 20, ngram_widths=(3,), tokenizer="char")),
    ("byte 4-grams murmur3 sparse",
     dict(num_buckets=1 << 20, ngram_widths=(4,), tokenizer="byte", hash="murmur3",
          output="sparse")),
]


def extractors():
    """(name, text only, function name, kwargs): every other extractor of
    the core's registry on each of its examples (all files), then the
    hashed_ngrams settings (text files). Imports rustfx."""
    import rustfx
    rows = []
    for name, entry in rustfx.registry().items():
        if name == "hashed_ngrams":
            continue
        for params in entry["examples"]:
            label = name + (" " + json.dumps(params, sort_keys=True) if params else "")
            rows.append((label, False, name, params))
    return rows + [(label, True, "hashed_ngrams", kwargs) for label, kwargs in HASHED_NGRAMS]


def sample(patterns, count, seed=0, text=False):
    """`count` files matching `patterns` (1 byte to 4 MiB), spread evenly over
    the patterns; `text` keeps only files without NUL in their first 4 KiB."""
    paths = []
    for pattern in patterns:
        found = sorted(p for p in glob.glob(pattern, recursive=True)
                       if os.path.isfile(p) and 0 < os.path.getsize(p) <= 4 << 20)
        random.Random(seed).shuffle(found)
        if text:
            found = [p for p in found if b"\0" not in open(p, "rb").read(4096)]
        paths += found[:count // len(patterns)]
    return paths


def measure(threads, files, repeat, only, texts_glob):
    """In this process: MB/s of the extractors whose name contains one of
    `only` (all if empty) with `threads` intra-op threads; text files from
    `texts_glob` if given."""
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import rustfx
    from bench_ops import best_call_seconds

    contents = [open(p, "rb").read() for p in sample(
        ["/usr/lib/python3*/**/*.py", "/usr/include/**/*.h", "/usr/bin/*",
         "/usr/lib/x86_64-linux-gnu/*.so*"], files)]
    texts = [open(p, "rb").read() for p in sample(
        texts_glob or ["/usr/lib/python3*/**/*.py", "/usr/include/**/*.h",
                       "/usr/share/perl/**/*.pm"],
        files if texts_glob else files * 4, text=True)]
    batches = {False: tf.constant(contents), True: tf.constant(texts)}
    megabytes = {False: sum(map(len, contents)) / 1e6, True: sum(map(len, texts)) / 1e6}
    results = {}
    for name, text_only, fn, kwargs in selected(only):
        batch = batches[text_only]
        call = getattr(rustfx, fn)
        call(batch[:2], **kwargs)  # builds the kernel once

        def run(call=call, batch=batch, kwargs=kwargs):
            out = call(batch, **kwargs)
            _ = out.values if hasattr(out, "values") else out
        results[name] = megabytes[text_only] / best_call_seconds(run, repeat, warm_up=False)
    return dict(results=results, files=len(contents), texts=len(texts),
                mb=megabytes[False], text_mb=megabytes[True])


def selected(only):
    """The extractors whose name contains one of `only` (all if empty)."""
    return [e for e in extractors() if not only or any(o in e[0] for o in only)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="only extractors whose name contains TEXT (repeatable)")
    parser.add_argument("--texts", action="append", default=[], metavar="GLOB",
                        help="text files for the n-gram extractors (repeatable; "
                             "default: Python, C headers and Perl, 4x --files)")
    parser.add_argument("--thread-counts", type=int, nargs="+", default=[1, 2],
                        metavar="N", help="intra-op thread counts to run (default: 1 2)")
    parser.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads:
        print(json.dumps(measure(args.threads, args.files, args.repeat, args.only,
                                 args.texts)))
        return
    runs = {}
    for threads in args.thread_counts:
        command = [sys.executable, __file__, "--threads", str(threads),
                   "--files", str(args.files), "--repeat", str(args.repeat)]
        command += [f"--only={o}" for o in args.only] + [f"--texts={t}" for t in args.texts]
        out = subprocess.run(command, check=True, capture_output=True, text=True)
        runs[threads] = json.loads(out.stdout.strip().splitlines()[-1])
    first = runs[args.thread_counts[0]]
    print(f"corpus: {first['files']} files, {first['mb']:.1f} MB ({first['texts']} text "
          f"files, {first['text_mb']:.1f} MB); one eager call on the whole batch, best of "
          f"{args.repeat}; {os.cpu_count()} cores")
    counts = args.thread_counts
    ratio = len(counts) == 2
    print("\n| extractor (op) | " + " | ".join(
        f"{t} thread{'s' * (t > 1)} MB/s" for t in counts)
        + (f" | {counts[1]} / {counts[0]} |" if ratio else " |"))
    print("|---|" + "---:|" * (len(counts) + ratio))
    for name, *_ in selected(args.only):
        mbs = [runs[t]["results"][name] for t in counts]
        cells = [f"{m:,.0f}" for m in mbs] + ([f"{mbs[1] / mbs[0]:.2f}x"] if ratio else [])
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
