"""Short records (lines, domain names, URLs, paths, command lines): rustfx
against TensorFlow's own ops for the same ids, and scikit-learn in
tf.py_function where it applies, in one run (docs/performance.md, "Short
records").

    make bench-records
    .venv/bin/python benches/records.py [--records 200000] [--repeat 5]
        [--pipeline-lines 1000000] [--thread-counts 1 2]

Corpora, built from what the machine has (deterministic, --seed):
- lines: lines of Python, C headers and /etc files (10-200 bytes);
- domains: host names of the URLs in /usr/share/doc and Python's sources;
- urls: those URLs;
- paths: paths of files under /usr;
- cmdlines: synthetic command lines (a program of /usr/bin, flags, paths,
  URLs).

1. Each job: one eager call on a batch of --records records (the input
   tensor built once, outside the timing), best of --repeat, in a fresh
   process per intra-op thread count (TF fixes its pools at start-up).
   Every rustfx output is checked equal to the TF ops' (and scikit-learn's)
   before it is timed. The output floor: fresh tensors of rustfx's output
   shapes (tf.fill), nothing computed.
2. The core with no TF (benches/records.rs): batches of 1024 records, and
   one call per record, one thread; for ragged ids, two floors: one scan
   of the records for their tokens, and hashing their n-grams found
   beforehand.
3. A tf.data pipeline: TextLineDataset over --pipeline-lines lines,
   batch(1024), the extractor in map (AUTOTUNE), against the same pipeline
   with TF's ops and with no extractor (the floor).
"""

import argparse
import glob
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUCKETS = 1 << 20


# ---- Corpora -----------------------------------------------------------------

def _files(roots, limit, seed, suffixes=None, per_root=50000):
    """Up to `limit` regular files under `roots` (at most `per_root` looked
    at in each), shuffled. os.walk, not glob's `**`, which follows
    symbolic links into loops (/usr/bin/X11 -> .)."""
    found = []
    for root in roots:
        seen = 0
        for directory, _, names in os.walk(root):
            for name in sorted(names):
                path = os.path.join(directory, name)
                if (suffixes is None or name.endswith(suffixes)) and os.path.isfile(path) \
                        and not os.path.islink(path):
                    found.append(path)
                    seen += 1
            if seen >= per_root:
                break
    random.Random(seed).shuffle(found)
    return found[:limit]


def _read(path, limit=1 << 20):
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError:
        return b""


def _cycle(records, n, seed):
    """`n` records drawn from `records` (repeated when there are fewer)."""
    records = list(records)
    random.Random(seed).shuffle(records)
    return (records * (n // max(1, len(records)) + 1))[:n]


URL = re.compile(rb"https?://[A-Za-z0-9.-]+\.[A-Za-z]{2,}(?:/[A-Za-z0-9._~%/?=&+#-]*)?")


def corpora(n, seed=0):
    lines = []
    for path in _files(glob.glob("/usr/lib/python3*") + ["/usr/include", "/etc"], 3000, seed,
                       suffixes=(".py", ".h", ".conf", ".cfg", ".ini")):
        lines += [line for line in _read(path).split(b"\n") if 10 <= len(line) <= 200]
    urls = set()
    for path in _files(["/usr/share/doc"] + glob.glob("/usr/lib/python3*"), 8000, seed,
                       suffixes=(".py", ".txt", ".md", ".rst", ".html", "copyright", "README")):
        urls.update(m for m in URL.findall(_read(path, 1 << 18)) if len(m) <= 200)
    urls = sorted(urls)
    domains = sorted({u.split(b"/")[2].lower() for u in urls})
    paths = [p.encode() for p in _files(["/usr"], 200000, seed, per_root=200000)]
    programs = [os.path.basename(p).encode() for p in _files(["/usr/bin"], 2000, seed)]
    rng = random.Random(seed)
    flags = [b"-v", b"-q", b"-r", b"-f", b"--force", b"--output", b"-o", b"--user=root",
             b"-c", b"-e", b"--config", b"-n", b"--no-check-certificate", b"-x", b"/c",
             b"-EncodedCommand", b"-NoProfile", b"--", b"2>&1", b"|", b"&&"]
    cmdlines = []
    for _ in range(min(n, 200000)):
        words = [rng.choice(programs)]
        for _ in range(rng.randint(0, 8)):
            kind = rng.random()
            words.append(rng.choice(flags) if kind < 0.5 else rng.choice(paths) if kind < 0.8
                         else rng.choice(urls) if kind < 0.9 else b"%x" % rng.getrandbits(64))
        cmdlines.append(b" ".join(words)[:200])
    return {name: _cycle(records, n, seed) for name, records in
            [("lines", lines), ("domains", domains), ("urls", urls), ("paths", paths),
             ("cmdlines", cmdlines)]}


def describe(records):
    return {"records": len(records), "distinct": len(set(records)),
            "mean_bytes": sum(map(len, records)) / max(1, len(records))}


# ---- Jobs --------------------------------------------------------------------

WS12 = dict(num_buckets=BUCKETS, ngram_widths=(1, 2))
WORD12 = dict(num_buckets=BUCKETS, ngram_widths=(1, 2), tokenizer="word", lowercase=True)
SEQ32 = dict(WS12, output="sequence", max_tokens=32)
BYTE3 = dict(num_buckets=BUCKETS, ngram_widths=(3,), tokenizer="byte")
CHAR3 = dict(num_buckets=BUCKETS, ngram_widths=(3,), tokenizer="char")
CHAR_WB = dict(num_buckets=1 << 18, ngram_widths=(3, 4, 5), tokenizer="sklearn_char_wb",
               lowercase=True, hash="murmur3", alternate_sign=True, norm="l2",
               output="sparse")

# (job, corpora, rustfx hashed_ngrams kwargs or "byte_histogram")
JOBS = [
    ("whitespace 1-2 ids", ["lines", "cmdlines"], WS12),
    ("word 1-2 ids (lowercase)", ["lines", "urls"], WORD12),
    ("whitespace 1-2 sequence 32", ["lines", "cmdlines"], SEQ32),
    ("byte 3-grams", ["domains", "urls", "paths"], BYTE3),
    ("char 3-grams", ["domains", "urls"], CHAR3),
    ("HashingVectorizer char_wb 3-5", ["urls", "domains"], CHAR_WB),
    ("byte_histogram", ["lines", "domains", "cmdlines"], "byte_histogram"),
]


def rustfx_fn(params):
    import rustfx
    if params == "byte_histogram":
        return rustfx.byte_histogram
    return lambda x: rustfx.hashed_ngrams(x, **params)


def tf_fn(params):
    """TF's own ops giving the same ids as `params` (None: none do)."""
    import tensorflow as tf

    if params is WS12:
        return lambda x: tf.strings.to_hash_bucket_fast(
            tf.strings.ngrams(tf.strings.split(x), [1, 2], separator=" "), BUCKETS)
    if params is WORD12:
        return lambda x: tf.strings.to_hash_bucket_fast(tf.strings.ngrams(tf.strings.split(
            tf.strings.regex_replace(tf.strings.lower(x), "[^a-z0-9_]+", " ")), [1, 2],
            separator=" "), BUCKETS)
    if params is SEQ32:
        return lambda x: tf.strings.to_hash_bucket_fast(
            tf.strings.ngrams(tf.strings.split(x), [1, 2], separator=" "), BUCKETS).to_tensor(
                default_value=-1, shape=[None, 32])
    if params is BYTE3:
        return lambda x: tf.strings.to_hash_bucket_fast(
            tf.strings.ngrams(tf.strings.bytes_split(x), 3, separator=""), BUCKETS)
    if params is CHAR3:
        return lambda x: tf.strings.to_hash_bucket_fast(tf.strings.ngrams(
            tf.strings.unicode_split(x, "UTF-8", errors="replace"), 3, separator=""), BUCKETS)
    return None


def sklearn_fn(params):
    """scikit-learn's HashingVectorizer in tf.py_function, and the same
    vectorizer (for the parity check and the no-TF figure)."""
    if params is not CHAR_WB:
        return None, None
    import numpy as np
    import tensorflow as tf
    from sklearn.feature_extraction.text import HashingVectorizer
    vectorizer = HashingVectorizer(analyzer="char_wb", ngram_range=(3, 5),
                                   n_features=1 << 18, lowercase=True)

    def transform(batch):
        m = vectorizer.transform([d.decode("utf-8", "replace") for d in batch.numpy()])
        return m.data.astype(np.float32)
    return (lambda x: tf.py_function(transform, [x], tf.float32)), vectorizer


def output_floor(out):
    """Fresh tensors of `out`'s shapes and dtypes, nothing computed: what
    a kernel's outputs cost before a value is written in them."""
    import tensorflow as tf

    def fill(t):
        return tf.fill(tf.shape(t), tf.zeros([], t.dtype))
    if isinstance(out, tf.RaggedTensor):
        parts = [out.flat_values] + list(out.nested_row_splits)
    elif isinstance(out, tf.SparseTensor):
        parts = [out.indices, out.values]
    else:
        parts = [out]
    return lambda x: [fill(t) for t in parts]


def same(a, b):
    import numpy as np
    import tensorflow as tf
    flat = [t.flat_values if isinstance(t, tf.RaggedTensor) else
            t.values if isinstance(t, tf.SparseTensor) else t for t in (a, b)]
    return np.array_equal(np.asarray(flat[0]), np.asarray(flat[1]))


def best_seconds(fn, x, repeat):
    import gc
    fn(x)
    gc.disable()
    try:
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            fn(x)
            best = min(best, time.perf_counter() - start)
    finally:
        gc.enable()
    return best


def measure(threads, n, repeat, seed):
    """Every job on every corpus of its, at `threads` intra-op threads."""
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    data = corpora(n, seed)
    results = []
    for job, names, params in JOBS:
        rust, tf_ops = rustfx_fn(params), tf_fn(params)
        sk_py, vectorizer = sklearn_fn(params)
        for name in names:
            x = tf.constant(data[name])
            row = {"job": job, "corpus": name, "threads": threads, **describe(data[name])}
            out = rust(x)
            if tf_ops is not None:
                assert same(out, tf_ops(x)), f"{job} on {name}: rustfx and TF ops differ"
                row["tf_seconds"] = best_seconds(tf_ops, x, repeat)
            if vectorizer is not None:
                want = vectorizer.transform([d.decode("utf-8", "replace") for d in data[name]])
                got = tf.sparse.reorder(out)
                assert (got.indices.numpy()[:, 1] == want.indices).all() and \
                    (abs(got.values.numpy() - want.data) < 1e-6).all(), \
                    f"{job} on {name}: rustfx and scikit-learn differ"
                row["sklearn_py_function_seconds"] = best_seconds(sk_py, x, max(1, repeat // 3))
            row["rustfx_seconds"] = best_seconds(rust, x, repeat)
            row["output_floor_seconds"] = best_seconds(output_floor(out), x, repeat)
            results.append(row)
    return results


# ---- The core, no TF ---------------------------------------------------------

def core(n, repeat, seed):
    """benches/records.rs on each job's first corpus: records/s batched and
    per record."""
    import rustfx
    data = corpora(n, seed)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for job, names, params in JOBS:
            spec = (rustfx.FeatureSpec("byte_histogram") if params == "byte_histogram" else
                    rustfx.FeatureSpec("hashed_ngrams", **dict(
                        params, ngram_widths=list(params["ngram_widths"]))))
            records = os.path.join(tmp, "records.txt")
            with open(records, "wb") as f:
                f.write(b"\n".join(r.replace(b"\n", b" ") for r in data[names[0]]))
            specs = os.path.join(tmp, "specs.jsonl")
            with open(specs, "w") as f:
                f.write(spec.to_json() + "\n")
            out = subprocess.run(["cargo", "bench", "--quiet", "--bench", "records", "--",
                                  records, specs, str(repeat)],
                                 cwd=ROOT, check=True, capture_output=True, text=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append({"job": job, "corpus": names[0],
                         "mb_s": result["bytes"] / result["batched_seconds"] / 1e6,
                         **{k: v for k, v in result.items() if k not in ("spec", "digest")}})
    return rows


# ---- tf.data pipeline --------------------------------------------------------

def pipeline(lines, repeat, seed):
    """TextLineDataset -> batch(1024) -> map(FX): lines/s of each FX and of
    no FX, best of `repeat`."""
    import tensorflow as tf
    data = corpora(200000, seed)["lines"]
    data = (data * (lines // len(data) + 1))[:lines]
    fd, path = tempfile.mkstemp(suffix=".txt")
    with os.fdopen(fd, "wb") as f:
        f.write(b"\n".join(data) + b"\n")
    try:
        jobs = [("no FX (the floor)", None)]
        for job, params in [("whitespace 1-2 ids", WS12), ("byte 3-grams", BYTE3),
                            ("byte_histogram", "byte_histogram")]:
            jobs.append((f"rustfx {job}", rustfx_fn(params)))
            if tf_fn(params) is not None:
                jobs.append((f"TF ops {job}", tf_fn(params)))
        rows = []
        for name, fn in jobs:
            def run(fn=fn):
                ds = tf.data.TextLineDataset(path).batch(1024)
                if fn is not None:
                    ds = ds.map(fn, num_parallel_calls=tf.data.AUTOTUNE)
                ds = ds.prefetch(tf.data.AUTOTUNE)
                start = time.perf_counter()
                for _ in ds:
                    pass
                return time.perf_counter() - start
            run()
            rows.append({"pipeline": name, "lines_per_s": lines / min(run() for _ in range(repeat))})
        return rows
    finally:
        os.unlink(path)


# ---- Files that are not UTF-8 -----------------------------------------------

CLIFF_JOBS = [
    ("sklearn_word 1-2 sparse (HashingVectorizer)",
     dict(num_buckets=1 << 18, ngram_widths=(1, 2), tokenizer="sklearn_word", lowercase=True,
          hash="murmur3", alternate_sign=True, norm="l2", output="sparse")),
    ("word 1-2 ids", dict(num_buckets=BUCKETS, ngram_widths=(1, 2), tokenizer="word")),
    ("whitespace 1-2 ids", WS12),
    ("char 3-grams", CHAR3),
    ("sklearn_char_wb 3-5 sparse", CHAR_WB),
]


def cliff(repeat, seed):
    """MB/s of the Unicode-aware tokenizers on small files, by class: text,
    and .gz files (not UTF-8), one thread; through the op, and the core
    alone (benches/records.rs) on the same files."""
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    import rustfx  # after the threads are set: loading the ops fixes them
    paths = _files(["/usr/share/doc", "/usr/share/perl5", "/etc"], 100000, seed)
    paths = [p for p in paths if 0 < os.path.getsize(p) <= 64 << 10]
    gz = [p for p in paths if p.endswith(".gz")][:1000]
    text = [p for p in paths if not p.endswith(".gz")][:2000]
    lists = {"text": text, ".gz": gz}
    classes = {name: [_read(p) for p in found] for name, found in lists.items()}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for job, params in CLIFF_JOBS:
            fn = rustfx_fn(params)
            row = {"job": job}
            spec = rustfx.FeatureSpec("hashed_ngrams", **dict(
                params, ngram_widths=list(params["ngram_widths"])))
            specs = os.path.join(tmp, "spec.jsonl")
            with open(specs, "w") as f:
                f.write(spec.to_json() + "\n")
            for name, docs in classes.items():
                x = tf.constant(docs)
                row[name] = sum(map(len, docs)) / best_seconds(fn, x, repeat) / 1e6
                # The core alone on the same files (whole files, as _read
                # gives them: none is over 64 KiB).
                listing = os.path.join(tmp, "files.txt")
                with open(listing, "w") as f:
                    f.write("\n".join(lists[name]) + "\n")
                out = subprocess.run(["cargo", "bench", "--quiet", "--bench", "records", "--",
                                      "@" + listing, specs, str(repeat)],
                                     cwd=ROOT, check=True, capture_output=True, text=True)
                result = json.loads(out.stdout.strip().splitlines()[-1])
                row["core " + name] = result["bytes"] / result["batched_seconds"] / 1e6
            rows.append(row)
    return rows


# ---- Report ------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pipeline-lines", type=int, default=1000000)
    parser.add_argument("--thread-counts", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--part", choices=["ops", "core", "pipeline", "cliff"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part:
        result = {"ops": lambda: measure(args.threads, args.records, args.repeat, args.seed),
                  "core": lambda: core(args.records, args.repeat, args.seed),
                  "pipeline": lambda: pipeline(args.pipeline_lines, 3, args.seed),
                  "cliff": lambda: cliff(args.repeat, args.seed)}[args.part]()
        print(json.dumps(result))
        return

    def child(part, threads=1):
        command = [sys.executable, __file__, "--part", part, "--threads", str(threads),
                   "--records", str(args.records), "--repeat", str(args.repeat),
                   "--pipeline-lines", str(args.pipeline_lines), "--seed", str(args.seed)]
        out = subprocess.run(command, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{' '.join(command)} failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])

    def per_s(r, key):
        return f"{r['records'] / r[key] / 1e6:.2f}" if key in r else "—"

    print(f"Short records: one eager call on {args.records:,} records, best of {args.repeat}; "
          "M records/s (MB/s); rustfx's output checked equal to the alternative's first.\n")
    print("| job | corpus (mean B) | threads | rustfx | TF ops | rustfx / TF | "
          "sklearn in py_function | output floor, M/s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for threads in args.thread_counts:
        for r in child("ops", threads):
            n, mb = r["records"], r["records"] * r["mean_bytes"] / 1e6

            def rate(key, r=r, n=n, mb=mb):
                return f"{n / r[key] / 1e6:.2f} M/s ({mb / r[key]:.0f} MB/s)" if key in r else "—"
            ratio = f"{r['tf_seconds'] / r['rustfx_seconds']:.1f}x" if "tf_seconds" in r else "—"
            print(f"| {r['job']} | {r['corpus']} ({r['mean_bytes']:.0f}) | {threads} | "
                  f"{rate('rustfx_seconds')} | {rate('tf_seconds')} | {ratio} | "
                  f"{rate('sklearn_py_function_seconds')} | {per_s(r, 'output_floor_seconds')} |")
    print("\nThe core with no TF (cargo bench --bench records), one thread, M records/s:\n")
    print("| job | corpus | batches of 1024 | one call per record | MB/s | "
          "floor: one scan | floor: hashing |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in child("core"):
        print(f"| {r['job']} | {r['corpus']} | {per_s(r, 'batched_seconds')} | "
              f"{per_s(r, 'per_record_seconds')} | {r['mb_s']:.0f} | "
              f"{per_s(r, 'scan_seconds')} | {per_s(r, 'hash_seconds')} |")
    print("\nFiles that are not UTF-8: small files of /usr/share/doc, /usr/share/perl5 and /etc, "
          "one thread, MB/s:\n")
    print("| job | text | .gz | text / .gz | core alone: text | .gz | text / .gz |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in child("cliff"):
        print(f"| {r['job']} | {r['text']:.0f} | {r['.gz']:.0f} | {r['text'] / r['.gz']:.2f}x | "
              f"{r['core text']:.0f} | {r['core .gz']:.0f} | "
              f"{r['core text'] / r['core .gz']:.2f}x |")
    print(f"\ntf.data: TextLineDataset ({args.pipeline_lines:,} lines) -> batch(1024) -> "
          "map(FX, AUTOTUNE), 2 cores, best of 3:\n")
    print("| pipeline | lines/s | of the floor |")
    print("|---|---:|---:|")
    rows = child("pipeline", 2)
    floor = rows[0]["lines_per_s"]
    for r in rows:
        print(f"| {r['pipeline']} | {r['lines_per_s'] / 1e6:.2f} M | "
              f"{100 * r['lines_per_s'] / floor:.0f}% |")


if __name__ == "__main__":
    main()
