"""Corpus extraction: rustfx on Ray (`python -m rustfx.corpus`) against a
local tf.data pipeline, and EMBER2024 vectors against thrember.

Not a test: a benchmark, run by hand; its figures are in docs/corpus.md.

1. Files of this machine (/usr/lib/python3*, /usr/share, /usr/include,
   /usr/bin, /usr/lib/x86_64-linux-gnu: regular files of 1 byte to 4 MiB, a
   fixed sample of --files), page cache warm (read once before timing).
   The same feature set (--spec, default ember2024) on the same files, into
   the same Parquet rows (path, size, sha256, status, message, features):
     Ray       corpus.run(...) in a fresh process with --workers 1 and 2
               (local Ray on all cores; its time includes starting Ray
               and the actors: the job as a user runs it)
     tf.data   one process: paths -> batch(64) -> map(read_files + sha256
               + the extractors, AUTOTUNE) -> pyarrow -> one ParquetWriter
   Both outputs are checked equal row by row (keyed by path).
2. EMBER2024 on PE files (tests/golden/pe and the Windows launchers in
   Python installs): Ray with --spec ember2024 (1 and 2 workers) against
   thrember's PEFeatureExtractor under multiprocessing.Pool(ncores), if
   --thrember-python names a Python that imports thrember
   (../shared/oracles/thrember/README.md); skipped otherwise.

    .venv/bin/python benches/corpus.py                         # 20,000 files
    .venv/bin/python benches/corpus.py --files 2000 --thrember-python /path/to/python
    .venv/bin/python benches/corpus.py --parts machine --copies 10   # 200,000 paths

--copies K lists each sampled file K times (the first by its own path, the
others by symlinks under a temporary directory): K times the work with the
same start-up, for the start-up-free comparison this machine's 312 MB of
such files cannot give on their own. Every path is a distinct input row.
"""

import argparse
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THREMBER_DIR = os.path.join(ROOT, "..", "shared", "oracles", "thrember")
PATTERNS = ["/usr/lib/python3*/**/*", "/usr/share/**/*", "/usr/include/**/*", "/usr/bin/*",
            "/usr/lib/x86_64-linux-gnu/*"]
MAX_SIZE = 4 << 20

# Ray: one job in a fresh process (Ray started and stopped by it).
RAY_JOB = """
import json, sys, time
start = time.monotonic()
from rustfx import corpus
summary = corpus.run(sys.argv[1], sys.argv[2], sys.argv[3], workers=int(sys.argv[4]),
                     shard_size=int(sys.argv[5]), log=lambda *a: None)
summary["wall"] = time.monotonic() - start
print(json.dumps(summary))
"""

# tf.data: the same rows with no Ray, in one process on all cores.
TF_DATA_JOB = """
import json, os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
start = time.monotonic()
import numpy as np, pyarrow as pa, pyarrow.parquet as pq, tensorflow as tf
import rustfx
from rustfx import corpus
feature_set = corpus.FeatureSet.load(sys.argv[1])
paths = corpus.list_inputs(sys.argv[2])
schema = feature_set.arrow_schema()
assert all(s.output["kind"] == "dense" for s in feature_set.features.values()), \\
    "the tf.data side of this bench writes dense features only"

def extract(batch):
    contents, status = rustfx.read_files(batch, on_error="empty", with_status=True)
    out = {"path": batch, "size": tf.strings.length(contents, unit="BYTE"),
           "sha256": rustfx.sha256(contents), "status": status.codes,
           "message": status.messages}
    for column, spec in feature_set.features.items():
        out[column] = rustfx.extract(spec, contents)
    return out

ds = (tf.data.Dataset.from_tensor_slices(tf.constant(paths)).batch(64)
      .map(extract, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))
files = nbytes = 0
with pq.ParquetWriter(sys.argv[3], schema, **corpus.PARQUET_OPTIONS) as writer:
    for b in ds.as_numpy_iterator():
        failed = b["status"] != 0
        cols = {"path": pa.array(list(b["path"]), pa.binary()),
                "size": pa.array(b["size"].astype(np.int64)),
                "sha256": pa.array([None if bad else h.decode()
                                    for h, bad in zip(b["sha256"], failed)], pa.string()),
                "status": pa.array(b["status"], pa.int32()),
                "message": pa.array([m.decode() for m in b["message"]], pa.string())}
        for column, spec in feature_set.features.items():
            cols[column] = pa.FixedSizeListArray.from_arrays(
                pa.array(b[column].reshape(-1)), spec.output["shape"][0], mask=pa.array(failed))
        writer.write_table(pa.Table.from_pydict(cols, schema=schema))
        files += len(b["path"])
        nbytes += int(b["size"].sum())
print(json.dumps({"files": files, "bytes": nbytes, "wall": time.monotonic() - start}))
"""

# thrember under multiprocessing.Pool(ncores), in the Python that imports it.
THREMBER_JOB = """
import contextlib, io, json, multiprocessing, os, sys, time
sys.path.insert(0, sys.argv[1])
files = json.loads(open(sys.argv[2]).read())
procs = int(sys.argv[3])

def init():
    global fx
    import features
    fx = features.PEFeatureExtractor()

def one(path):
    data = open(path, "rb").read()
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            fx.feature_vector(data)
            return len(data), 1
        except Exception:  # the empty file; pefile's uncaught errors
            return len(data), 0

if __name__ == "__main__":
    start = time.monotonic()
    with multiprocessing.Pool(procs, initializer=init) as pool:
        done = pool.map(one, files, chunksize=4)
    print(json.dumps({"files": len(done), "bytes": sum(d[0] for d in done),
                      "ok": sum(d[1] for d in done), "wall": time.monotonic() - start}))
"""


def machine_files(count, seed=0):
    """`count` regular files of this machine (1 byte to 4 MiB, no links), a
    fixed pseudo-random sample, sorted."""
    found = set()
    for pattern in PATTERNS:
        for p in glob.iglob(pattern, recursive=True):
            try:
                if (not os.path.islink(p) and os.path.isfile(p)
                        and 0 < os.path.getsize(p) <= MAX_SIZE and os.access(p, os.R_OK)):
                    found.add(p)
            except OSError:
                pass
    found = sorted(found)
    random.Random(seed).shuffle(found)
    return sorted(found[:count])


def pe_files(extra_dirs=()):
    """The PE test corpus, the Windows launchers shipped in Python installs,
    and the files of --pe-dir (e.g. the DLLs of Windows wheels:
    benches/pe_from_wheels.py)."""
    found = {p for p in glob.glob(os.path.join(ROOT, "tests", "golden", "pe", "**", "*"),
                                  recursive=True) if os.path.isfile(p)}
    for d in extra_dirs:
        found |= {os.path.join(d, n) for n in os.listdir(d)
                  if os.path.isfile(os.path.join(d, n))}
    for pattern in ("/usr/lib/python3*/**/*.exe", os.path.expanduser("~/.pyenv/versions/**/*.exe"),
                    os.path.join(ROOT, ".venv", "lib", "**", "*.exe")):
        found |= {p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p)}
    return sorted(found)


def warm(files):
    for p in files:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass


def with_copies(files, copies, directory):
    """`files`, then each of them again `copies - 1` times by a symlink of its
    own (COPY/INDEX): distinct paths, the same contents."""
    listed = list(files)
    for k in range(1, copies):
        os.makedirs(os.path.join(directory, str(k)))
        for i, p in enumerate(files):
            link = os.path.join(directory, str(k), str(i))
            os.symlink(p, link)
            listed.append(link)
    return listed


def python_job(code, args, python=sys.executable):
    out = subprocess.run([python, "-c", code, *map(str, args)], check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])


def same_rows(ray_dir, tf_file):
    """The Ray job's rows equal the tf.data pipeline's, keyed by path."""
    import pyarrow.parquet as pq
    from rustfx import corpus
    ours = corpus.read_parquet(ray_dir).sort_by("path")
    theirs = pq.read_table(tf_file).sort_by("path")
    return ours.equals(theirs.cast(ours.schema))


HEADER = ("| pipeline | seconds | fixed cost (a run on a file per worker) | files/s | MB/s "
          "| files/s, fixed cost excluded | MB/s, fixed cost excluded |\n"
          "|---|---:|---:|---:|---:|---:|---:|")


def row(label, result, fixed, files, total):
    """One table row: the whole run (a fresh process: imports, Ray and its
    actors included), and the same with the fixed cost taken off."""
    seconds = result["wall"]
    steady = seconds - fixed
    if steady < 1.0:  # within the noise of the fixed cost
        rates = "- | -"
    else:
        rates = f"{files / steady:,.0f} | {total / 1e6 / steady:,.1f}"
    print(f"| {label} | {seconds:,.1f} | {fixed:,.1f} | {files / seconds:,.0f} | "
          f"{total / 1e6 / seconds:,.1f} | {rates} |", flush=True)


def fixed_cost(job, args, work):
    """The time of the same job (args: spec, listing, output, and for Ray
    workers, shard size) on small files: imports, starting Ray and its
    actors. A Ray job gets one 1-file shard per worker, so that it starts
    as many actors as the real run (one file would start one)."""
    workers = int(args[3]) if len(args) > 3 else 1
    small = ["README.md", "Makefile", "Cargo.toml", "BUILD_NOTES.md"]
    listing = os.path.join(work, "small.txt")
    with open(listing, "w") as f:
        f.writelines(os.path.join(ROOT, small[i % len(small)]) + "\n" for i in range(workers))
    out = os.path.join(work, f"small-{uuid.uuid4().hex}")
    rest = [args[3], 1] if len(args) > 3 else []
    return python_job(job, [args[0], listing, out, *rest])["wall"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--spec", default="ember2024")
    parser.add_argument("--shard-size", type=int, default=1000)
    parser.add_argument("--thrember-python", default=os.environ.get("THREMBER_PYTHON"))
    parser.add_argument("--thrember-dir", default=THREMBER_DIR)
    parser.add_argument("--pe-dir", action="append", default=[],
                        help="more PE files for the EMBER2024 part (repeatable)")
    parser.add_argument("--copies", type=int, default=1,
                        help="list each machine file this many times (symlinks)")
    parser.add_argument("--parts", default="machine,pe",
                        help="which parts to run: machine (Ray vs tf.data), pe (vs thrember)")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    cores = os.cpu_count()
    work = tempfile.mkdtemp(prefix="rustfx-bench-corpus-")
    try:
        files = machine_files(args.files) if "machine" in parts else []
        warm(files)
        files = with_copies(files, args.copies, os.path.join(work, "copies"))
        listing = os.path.join(work, "files.txt")
        with open(listing, "w") as f:
            f.write("".join(p + "\n" for p in files))
        total = sum(os.path.getsize(p) for p in files)
        if "machine" in parts:
            machine_part(args, files, total, listing, work, cores)
        if "pe" in parts:
            pe_part(args, work, cores)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def machine_part(args, files, total, listing, work, cores):
    copies = f" (each listed {args.copies} times)" if args.copies > 1 else ""
    print(f"## {len(files):,} files of this machine{copies}, {total / 1e6:,.1f} MB, "
          f"--spec {args.spec}, {cores} cores, "
          f"{time.strftime('%Y-%m-%d')}\n")
    print(HEADER)
    tf_out = os.path.join(work, "tf_data.parquet")
    fixed = fixed_cost(TF_DATA_JOB, [args.spec, listing, tf_out], work)
    result = python_job(TF_DATA_JOB, [args.spec, listing, tf_out])
    row("tf.data, one process, AUTOTUNE (read_files + sha256 + extractors)",
        result, fixed, len(files), total)
    for workers in (1, 2):
        out = os.path.join(work, f"ray-{workers}")
        job = [args.spec, listing, out, workers, args.shard_size]
        fixed = fixed_cost(RAY_JOB, job, work)
        result = python_job(RAY_JOB, job)
        assert result["files"] == len(files), result
        row(f"Ray, `python -m rustfx.corpus --workers {workers}`", result, fixed,
            len(files), total)
        assert same_rows(out, tf_out), "the Ray rows differ from the tf.data rows"
    print("\nRows equal between Ray and tf.data (keyed by path).")


def pe_part(args, work, cores):
    pes = pe_files(args.pe_dir)
    pe_listing = os.path.join(work, "pe.txt")
    with open(pe_listing, "w") as f:
        f.write("".join(p + "\n" for p in pes))
    with open(os.path.join(work, "pe.json"), "w") as f:
        json.dump(pes, f)
    warm(pes)
    pe_total = sum(os.path.getsize(p) for p in pes)
    print(f"\n## EMBER2024 vectors: {len(pes)} PE files (tests/golden/pe, Windows "
          f"launchers of Python installs, {', '.join(args.pe_dir) or 'no --pe-dir'}), "
          f"{pe_total / 1e6:,.1f} MB\n")
    print(HEADER)
    tf_out = os.path.join(work, "pe-tf_data.parquet")
    job = ["ember2024", pe_listing, tf_out]
    fixed = fixed_cost(TF_DATA_JOB, job, work)
    row("rustfx in tf.data, one process, AUTOTUNE", python_job(TF_DATA_JOB, job), fixed,
        len(pes), pe_total)
    for workers in (1, 2):
        out = os.path.join(work, f"pe-ray-{workers}")
        job = ["ember2024", pe_listing, out, workers, args.shard_size]
        fixed = fixed_cost(RAY_JOB, job, work)
        result = python_job(RAY_JOB, job)
        row(f"rustfx on Ray, `--spec ember2024 --workers {workers}`", result, fixed,
            len(pes), pe_total)
    if not args.thrember_python or not os.path.isdir(args.thrember_dir):
        print("\nthrember: skipped (pass --thrember-python, a Python that imports "
              "thrember: ../shared/oracles/thrember/README.md)")
    else:
        one = os.path.join(work, "one.json")
        with open(one, "w") as f:
            json.dump(pes[:1], f)
        fixed = python_job(THREMBER_JOB, [args.thrember_dir, one, cores],
                           python=args.thrember_python)["wall"]
        result = python_job(THREMBER_JOB, [args.thrember_dir,
                                           os.path.join(work, "pe.json"), cores],
                            python=args.thrember_python)
        row(f"thrember, `multiprocessing.Pool({cores})` ({result['ok']} vectors)",
            result, fixed, len(pes), pe_total)


if __name__ == "__main__":
    main()
