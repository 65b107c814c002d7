"""The corpus worker's rows and a cache filled from a corpus job, the two
paths that moved to Arrow C Data (docs/arrow.md), each
timed as a whole process so two checkouts compare on the same data:

    .venv/bin/python benches/corpus_arrow.py prepare DIR [--files 3000]
    .venv/bin/python benches/corpus_arrow.py rows DIR     # extract_table of DIR's files
    .venv/bin/python benches/corpus_arrow.py fill DIR     # fill_from_corpus of DIR's job

`prepare` lists --files text and binary files of this machine (Python
sources, headers, shared libraries; up to 1 MiB each) into DIR/paths.txt
and runs the corpus job (local Ray) on them into DIR/out, with a feature
set of a dense (byte_histogram), a ragged (word n-gram ids) and a string
feature (printable_strings). `rows` runs the worker's extraction
(rustfx_core.corpus.extract_table) on the listed files; `fill` fills a new
feature cache from DIR/out. Compare checkouts with the Python path, e.g.
PYTHONPATH=<other checkout>/python (its `make build` done), alternating
the two commands run by run; each prints what it did, to check both did
the same.
"""

import argparse
import glob
import json
import os
import sys
import tempfile
import time

FEATURES = {"features": {
    "byte_histogram": {"extractor": "byte_histogram"},
    "ngram_ids": {"extractor": "hashed_ngrams",
                  "params": {"num_buckets": 1 << 18, "output": "ragged", "tokenizer": "word"}},
    "strings": {"extractor": "printable_strings"},
}}


def machine_files(count):
    found = []
    for pattern in ("/usr/lib/python3*/**/*.py", "/usr/include/**/*.h",
                    "/usr/lib/x86_64-linux-gnu/*.so*"):
        for path in sorted(glob.glob(pattern, recursive=True)):
            if os.path.isfile(path) and not os.path.islink(path) \
                    and 0 < os.path.getsize(path) <= 1 << 20:
                found.append(path)
    step = max(1, len(found) // count)
    return found[::step][:count]


def prepare(directory, count):
    import ray
    from rustfx import corpus
    os.makedirs(directory, exist_ok=True)
    files = machine_files(count)
    with open(os.path.join(directory, "paths.txt"), "w") as f:
        f.write("".join(p + "\n" for p in files))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        corpus.run(FEATURES, os.path.join(directory, "paths.txt"),
                   os.path.join(directory, "out"), fmt="parquet", shard_size=1000)
    finally:
        ray.shutdown()
    print(f"{len(files)} files, {sum(map(os.path.getsize, files)) / 1e6:.1f} MB")


def rows(directory):
    from rustfx_core import corpus
    with open(os.path.join(directory, "paths.txt")) as f:
        paths = f.read().split()
    start = time.perf_counter()
    table = corpus.extract_table(paths, FEATURES)
    took = time.perf_counter() - start
    strings = sum(len(r) for r in table.column("strings").to_pylist() if r)
    print(json.dumps({"rows": len(table), "strings": strings, "seconds": round(took, 3)}))


def fill(directory):
    import rustfx_core
    with tempfile.TemporaryDirectory() as cache_dir:
        cache = rustfx_core.FeatureCache(cache_dir)
        start = time.perf_counter()
        stored = cache.fill_from_corpus(os.path.join(directory, "out"))
        cache.flush()
        stored["seconds"] = round(time.perf_counter() - start, 3)
        print(json.dumps(stored))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["prepare", "rows", "fill"])
    parser.add_argument("directory")
    parser.add_argument("--files", type=int, default=3000)
    args = parser.parse_args()
    if args.what == "prepare":
        prepare(args.directory, args.files)
    else:
        {"rows": rows, "fill": fill}[args.what](args.directory)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
