#!/usr/bin/env python3
"""The aarch64 TF cell: the aarch64 rustfx wheel in TensorFlow 2.20 under
qemu-user, against the x86-64 wheel in TensorFlow 2.20, on the same files.

`make test-aarch64` (in `make test`) runs it after `make wheel` and `make
wheel-aarch64` (BUILD_NOTES.md, "The aarch64 cell"; docs/matrix.md,
"aarch64"); `--prepare` makes the two Pythons only. Both
sides run TF 2.20, the newest TF with an aarch64 wheel, on CPython 3.11, so
the CPU is the only difference. Standard library only.

  1. the x86-64 venv (--x86-venvs/tf2.20-py3.11): made once by the
     matrix's own helpers (tests/matrix/run_matrix.py), tensorflow-cpu 2.20
     and the x86-64 wheel (--x86-wheel), reinstalled each run;
  2. the aarch64 Python: tests/aarch64/arm_python.sh (Debian's arm64
     CPython 3.11 and tensorflow 2.20, made once without qemu), and the
     aarch64 wheel (--aarch64-wheel), unpacked each run;
  3. (a) rows: tests/aarch64/tf_parity.py rows on each side: every
     extractor x layout x dtype case, digests of every part, compared;
     and the hashes whose code differs by CPU (rustfx.sha256,
     rustfx.content_key), compared, and SHA-256 against hashlib's;
  4. (b) a SavedModel with every case's FX inside, saved on x86-64
     (tf_parity.py save-model), loaded and run on aarch64 (tf_parity.py
     model): its outputs' digests compared, and with (a)'s;
  5. (c) tests/aarch64/tf_offload.py: an x86-64 trainer's offload epoch
     served by the aarch64 rustfx-worker, every file exactly once with
     local rows;
  6. the aarch64 op library's symbols, as tests/python/test_op_library.py
     checks the x86-64 one: from TF only TF_* functions, each exported by
     the aarch64 TF's libtensorflow_framework.so.2, no TF/TSL/Abseil C++
     name, and no library beyond libc, libm, libpthread, libdl, the loader
     and TF's (so no libpython).

Prints the table, writes it with --table, and exits 1 on any difference.
Per-step logs: --logs.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "matrix"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import run_matrix  # noqa: E402  (the matrix's venv helpers)
from op_library_symbols import dynamic_symbols, tf_cxx_symbols  # noqa: E402

CELL = run_matrix.Cell("2.20", "3.11")


def one_file(pattern):
    found = glob.glob(pattern)
    if len(found) != 1:
        sys.exit(f"need exactly one file matching {pattern}, found {found}")
    return os.path.abspath(found[0])


def step(name, cmd, logs):
    """Runs cmd from tests/aarch64 (so rustfx comes from the installed
    wheel, never the checkout), its output in logs/NAME.log; exits on failure."""
    start = time.monotonic()
    with open(os.path.join(logs, f"{name}.log"), "w") as log:
        code = subprocess.run(cmd, cwd=HERE, stdout=log, stderr=subprocess.STDOUT).returncode
    seconds = time.monotonic() - start
    print(f"  {name}: {'ok' if code == 0 else f'FAILED (exit {code})'}, {seconds:.0f} s",
          flush=True)
    if code != 0:
        with open(os.path.join(logs, f"{name}.log")) as f:
            print(run_matrix.tail(f.read(), 40))
        sys.exit(f"{name} failed: {os.path.join(logs, name + '.log')}")
    return seconds


def x86_venv(args, logs, wheel):
    """The x86-64 venv's python, with `wheel` (if not None) reinstalled."""
    log = run_matrix.Log(os.path.join(logs, "x86-venv.log"))
    try:
        python, why = run_matrix.find_interpreter(CELL.py)
        if python is None:
            sys.exit(why)
        vpy, installed = run_matrix.setup_venv(CELL, python, args.x86_venvs, log)
        if wheel:
            run_matrix.install_wheel(CELL, vpy, wheel, installed, log)
        return vpy
    except run_matrix.CellError as e:
        sys.exit(f"x86-64 venv: {e}")
    finally:
        log.close()


# What the aarch64 op library may need (readelf's NEEDED).
NEEDED = {"libtensorflow_framework.so.2", "libc.so.6", "libm.so.6", "libpthread.so.0",
          "libdl.so.2", "ld-linux-aarch64.so.1"}


def package_dir(python, name):
    """Where `python` would import package `name` from (found, not imported:
    TF's import takes most of a minute under qemu)."""
    return subprocess.run(
        [python, "-c", "import importlib.util, sys; "
         "print(importlib.util.find_spec(sys.argv[1]).submodule_search_locations[0])", name],
        check=True, capture_output=True, text=True).stdout.strip()


def check_op_library(wheel, vpy_arm):
    """(number of TF_* functions it calls, problems) of the aarch64 wheel's
    op library, against the aarch64 Python's TF."""
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(wheel) as whl:
            lib = whl.extract("rustfx/_rustfx_ops.so", tmp)
        undefined = dynamic_symbols(lib, "--undefined-only")
        dynamic_section = subprocess.run(["readelf", "-d", lib], check=True,
                                         capture_output=True, text=True).stdout
        needed = set(re.findall(r"\(NEEDED\).*\[(.*)\]", dynamic_section))
    tf_symbols = {s for s in undefined if s.startswith("TF_")}
    problems = [f"C++ symbol {s}" for s in tf_cxx_symbols(undefined)]
    problems += [f"needs {n}" for n in needed - NEEDED]
    exported = dynamic_symbols(os.path.join(package_dir(vpy_arm, "tensorflow"),
                                            "libtensorflow_framework.so.2"), "--defined-only")
    problems += [f"{s} not exported by the aarch64 TF" for s in tf_symbols - exported]
    return len(tf_symbols), problems


def load(path):
    with open(path) as f:
        return json.load(f)


def compare_rows(x86, arm):
    """[(extractor, layout, dtype, same)] per case."""
    if (x86["machine"], arm["machine"]) != ("x86_64", "aarch64"):
        sys.exit(f"the sides ran on {x86['machine']} and {arm['machine']}")
    if x86["files"] != arm["files"] or x86["refused"] != arm["refused"]:
        sys.exit("the two sides ran different files or refused different cases")
    if set(x86["cases"]) != set(arm["cases"]):
        sys.exit("the two sides' registries give different cases")
    out = []
    for spec, digests in x86["cases"].items():
        s = json.loads(spec)
        out.append((s["extractor"], s["output"]["kind"], s["output"]["dtype"],
                    digests == arm["cases"][spec]))
    return out


def compare_hashes(x86, arm):
    """(passed, description) of the two sides' rustfx.sha256 and
    rustfx.content_key digests."""
    a, b = x86["hashes"], arm["hashes"]
    same = {k: a[k] == b[k] for k in ("sha256", "content_key")}
    ok = all(same.values()) and a["sha256_not_hashlib"] == b["sha256_not_hashlib"] == 0
    text = (f"rustfx.sha256 and rustfx.content_key of {a['inputs']} byte strings (the files, "
            "and lengths 0 to 1 MiB around SHA-256's block edges): "
            + ", ".join(f"{k} {'identical' if v else '**differ**'}" for k, v in same.items())
            + f"; SHA-256s unlike hashlib's: x86-64 {a['sha256_not_hashlib']}, "
            f"aarch64 {b['sha256_not_hashlib']}.")
    return ok, text


def model_rows(specs, model, rows):
    """How many of the SavedModel's outputs equal the eager rows' digests
    (the same case, the same part); specs: the model's cases, in order."""
    same = 0
    for i, spec in enumerate(specs):
        for part, d in rows["cases"][spec].items():
            same += model["outputs"].get(f"case{i}" + ("." + part if part else "")) == d
    return same


def table(rows, hashes, x86, model_x86, model_arm, offload, times):
    grouped = {}
    for name, kind, dtype, same in rows:
        cell = grouped.setdefault((name, kind, dtype), [0, 0])
        cell[0] += 1
        cell[1] += not same
    lines = [f"rustfx wheel in TF {x86['tensorflow']}, {x86['files']} files, x86-64 against "
             "aarch64 (qemu-user):", "",
             "| extractor | layout | dtype | specs | rows |", "|---|---|---|---:|---|"]
    for (name, kind, dtype), (n, bad) in grouped.items():
        lines.append(f"| {name} | {kind} | {dtype} | {n} | "
                     f"{'identical' if not bad else f'**differ** ({bad} of {n})'} |")
    if x86["refused"]:
        lines += ["", "Refused by the spec with every example: " + "; ".join(x86["refused"])
                  + "."]
    lines += ["", hashes[1]]
    same_model = sum(model_x86["outputs"][k] == v for k, v in model_arm["outputs"].items())
    as_eager = model_rows(model_x86["specs"], model_arm, x86)
    n_model = len(model_x86["outputs"])
    lines += ["", f"SavedModel saved on x86-64 with the {len(model_x86['specs'])} cases' FX "
              f"inside, loaded on aarch64: {same_model} of {n_model} outputs identical to "
              f"x86-64's, {as_eager} equal to the eager rows.",
              "", f"Offload epoch, x86-64 trainer, aarch64 rustfx worker: {offload['files']} "
              f"files exactly once with local rows; the worker delivered "
              f"{offload['report']['remote']}, the trainer's sweep "
              f"{offload['report']['local']} (cut {offload['report']['cut']}).",
              "", "Seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in times.items()) + "."]
    ok = (all(r[3] for r in rows) and hashes[0]
          and same_model == n_model == len(model_arm["outputs"]) == as_eager)
    return "\n".join(lines) + "\n", ok


def arm_python(wheel=None):
    """The aarch64 Python (tests/aarch64/arm_python.sh), with `wheel`
    unpacked if given."""
    return subprocess.run([os.path.join(HERE, "arm_python.sh"), *([wheel] if wheel else [])],
                          cwd=ROOT, stdout=subprocess.PIPE, text=True,
                          check=True).stdout.strip()


def prepare(args):
    """Makes both Pythons without the wheels, so that the cell's run only
    installs them (`make aarch64-builds`, beside `make test`'s Python tests)."""
    os.makedirs(args.logs, exist_ok=True)
    start = time.monotonic()
    x86_venv(args, args.logs, None)
    x86_s = time.monotonic() - start
    arm_python()
    print(f"aarch64 TF cell: Pythons made (x86-64 venv {x86_s:.0f} s, aarch64 "
          f"{time.monotonic() - start - x86_s:.0f} s)", flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--x86-wheel", default=os.path.join(ROOT, "dist", "rustfx-*_x86_64.whl"))
    parser.add_argument("--aarch64-wheel",
                        default=os.path.join(ROOT, "dist", "rustfx-*_aarch64.whl"))
    parser.add_argument("--x86-venvs", default=os.path.join(ROOT, "target", "aarch64",
                                                            "x86-venvs"))
    parser.add_argument("--corpus", action="append",
                        help="a directory of files (default: tests/golden and tests/pe)")
    parser.add_argument("--logs", default=os.path.join(ROOT, "target", "aarch64", "tf-cell"))
    parser.add_argument("--table", help="write the table here (Markdown)")
    parser.add_argument("--prepare", action="store_true",
                        help="only make the two Pythons, without the wheels (make aarch64-builds)")
    args = parser.parse_args()
    if args.prepare:
        return prepare(args)
    args.x86_wheel, args.aarch64_wheel = one_file(args.x86_wheel), one_file(args.aarch64_wheel)
    args.x86_venvs = os.path.abspath(args.x86_venvs)
    corpus = [os.path.abspath(c) for c in (args.corpus or [os.path.join(ROOT, "tests", "golden"),
                                                           os.path.join(ROOT, "tests", "pe")])]
    os.makedirs(args.logs, exist_ok=True)
    out = lambda name: os.path.join(args.logs, name)  # noqa: E731
    corpus_args = [a for c in corpus for a in ("--corpus", c)]
    times, start = {}, time.monotonic()

    print("aarch64 TF cell: the Pythons", flush=True)
    vpy_x86 = x86_venv(args, args.logs, args.x86_wheel)
    times["x86 venv"] = time.monotonic() - start
    t = time.monotonic()
    vpy_arm = arm_python(args.aarch64_wheel)
    times["aarch64 Python"] = time.monotonic() - t

    n_tf, problems = check_op_library(args.aarch64_wheel, vpy_arm)
    print(f"  aarch64 op library: {n_tf} TF_* functions, "
          f"{'; '.join(problems) if problems else 'no other TF symbol or library'}", flush=True)
    if problems:
        sys.exit("the aarch64 op library calls TF beyond its C API, or needs other libraries")

    print("aarch64 TF cell: (a) rows, (b) SavedModel, (c) offload", flush=True)
    with tempfile.TemporaryDirectory(prefix="rustfx-aarch64-model-") as model_dir:
        model_dir = os.path.join(model_dir, "model")
        times["x86 rows"] = step("x86-rows", [vpy_x86, "tf_parity.py", "rows", *corpus_args,
                                              "--out", out("x86-rows.json")], args.logs)
        times["aarch64 rows"] = step("aarch64-rows", [vpy_arm, "tf_parity.py", "rows",
                                                      *corpus_args, "--out",
                                                      out("aarch64-rows.json")],
                                     args.logs)
        times["x86 save"] = step("x86-save-model", [vpy_x86, "tf_parity.py", "save-model",
                                                    model_dir, *corpus_args, "--out",
                                                    out("x86-model.json")], args.logs)
        times["aarch64 model"] = step("aarch64-model", [vpy_arm, "tf_parity.py", "model",
                                                        model_dir, *corpus_args, "--out",
                                                        out("aarch64-model.json")],
                                      args.logs)
    times["offload"] = step("offload", [vpy_x86, "tf_offload.py", "--worker-python", vpy_arm,
                                        "--out", out("offload.json")], args.logs)
    times["total"] = time.monotonic() - start

    x86, arm = load(out("x86-rows.json")), load(out("aarch64-rows.json"))
    rows = compare_rows(x86, arm)
    text, ok = table(rows, compare_hashes(x86, arm), x86, load(out("x86-model.json")),
                     load(out("aarch64-model.json")), load(out("offload.json")), times)
    text = (f"The aarch64 op library calls {n_tf} TF_* functions, all exported by the aarch64 "
            "TF, and no TF, TSL or Abseil C++ symbol; it needs only libc, libm, libpthread, "
            "libdl, the loader and libtensorflow_framework.so.2.\n\n" + text)
    print("\n" + text)
    if args.table:
        with open(args.table, "w") as f:
            f.write(text)
    print("aarch64 TF cell: passed" if ok else "aarch64 TF cell: FAILED (differences above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
