#!/usr/bin/env python3
"""The tested matrix: one rustfx wheel on every TensorFlow minor x CPython.

For each cell (TF 2.16-2.21 x CPython 3.10-3.13, or those of --cells), in
its own venv (--venvs/tf2.X-py3.Y, kept and reused):

  1. the interpreter: python3.Y on PATH if it runs (a pyenv shim for a
     version not selected does not), else $PYENV_ROOT/versions/3.Y*/bin;
  2. `pip install "tensorflow-cpu==2.X.*" pytest numpy` (skipped when the
     venv already has them at that minor);
  3. the wheel: first `pip install --dry-run WHEEL`, which must not want to
     install any TensorFlow or Keras (else the wheel's requirement rejects
     this cell's TF), then `pip install --force-reinstall --no-deps WHEEL`
     and the wheel's non-TF requirements; TensorFlow must come out
     unchanged;
  4. tests/matrix/test_matrix_suite.py, copied to a temporary directory
     and run from there, so `import rustfx` can only be the installed
     wheel (--dev: no wheel, the checkout's python/ on PYTHONPATH).

A cell is pass, fail, "no TF wheel" or "no interpreter"; only fail makes
the exit status non-zero. Whether TensorFlow publishes a wheel for a cell
is asked of pip, not written here: the answer is PyPI's and changes (new
minors, new CPythons), and a hard-coded table that went stale would mark a
real cell "no TF wheel" and never test it. It costs one failed resolve
(a few seconds) per absent cell. The answer in November 2026, for reading
the table: 2.16-2.19 have cp39-cp312, 2.20 cp39-cp313, 2.21 cp310-cp313.

    python tests/matrix/run_matrix.py --wheel dist/rustfx-*.whl --table matrix.md
    python tests/matrix/run_matrix.py --dev --cells 2.21:3.11
    python tests/matrix/run_matrix.py --setup-only      # venvs and TF only

Needs only the standard library (Python 3.10+). Per-cell logs (every
command and its output): --venvs/logs/tf2.X-py3.Y.log.
"""

import argparse
import dataclasses
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SUITE = os.path.join(HERE, "test_matrix_suite.py")
TF_MINORS = ("2.16", "2.17", "2.18", "2.19", "2.20", "2.21")
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
TF_DIST = "tensorflow-cpu"

# Run inside a cell's venv: what is installed there, without importing TF.
PROBE = """
import importlib.metadata, json, sys
dists = {}
for d in importlib.metadata.distributions():
    name = (d.metadata["Name"] or "").lower().replace("_", "-")
    dists[name] = d.version
print(json.dumps({"python": "%d.%d" % sys.version_info[:2], "prefix": sys.prefix,
                  "dists": dists}))
"""

# Run by each candidate interpreter: its version, and whether it can make a
# venv with pip in it.
INTERPRETER_PROBE = ("import sys, venv, ensurepip; "
                     "print('%d.%d' % sys.version_info[:2], sys.executable)")


@dataclasses.dataclass
class Cell:
    tf: str
    py: str
    result: str = "?"
    setup_s: float = 0.0  # venv + TF (or the check that they are there)
    install_s: float = 0.0  # the wheel
    suite_s: float = 0.0
    note: str = ""

    @property
    def name(self):
        return f"tf{self.tf}-py{self.py}"


class CellError(Exception):
    """Ends a cell: `result` is its outcome, the message its note."""

    def __init__(self, result, note):
        super().__init__(note)
        self.result = result


class Log:
    """A cell's log file: every command run, with its output."""

    def __init__(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.path = path
        self.file = open(path, "w")

    def write(self, text):
        self.file.write(text)
        self.file.flush()

    def close(self):
        self.file.close()


def run(cmd, log, *, env=None, cwd=None, timeout=3600):
    """Runs cmd, logging it and its output; returns (returncode, output).
    On timeout kills its whole process group (the suite starts children)."""
    log.write(f"\n$ {' '.join(cmd)}\n")
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", env=env, cwd=cwd, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        log.write(out + f"\n[killed after {timeout} s]\n")
        return None, out
    log.write(out + f"[exit {proc.returncode}, {time.monotonic() - start:.1f} s]\n")
    return proc.returncode, out


def tail(text, lines=30):
    return "\n".join(text.rstrip().splitlines()[-lines:])


def find_interpreter(py):
    """(path, None), or (None, why not) saying what was tried."""
    pyenv = os.path.expanduser(os.environ.get("PYENV_ROOT", "~/.pyenv"))
    candidates = [shutil.which(f"python{py}")]
    # Newest patch release first; free-threaded builds (3.13t) have no python3.Y.
    candidates += sorted(glob.glob(os.path.join(pyenv, "versions", f"{py}.*", "bin",
                                                f"python{py}")),
                         key=lambda p: [int(x) if x.isdigit() else -1 for x in
                                        re.split(r"[.]", p.split(os.sep)[-3])],
                         reverse=True)
    tried = []
    for exe in filter(None, candidates):
        try:
            out = subprocess.run([exe, "-c", INTERPRETER_PROBE], capture_output=True, text=True,
                                 timeout=60)
        except OSError as e:
            tried.append(f"{exe} ({e.strerror})")
            continue
        words = out.stdout.split(maxsplit=1)
        if out.returncode == 0 and words and words[0] == py:
            return words[1].strip(), None
        why = (out.stderr.strip().splitlines() or ["?"])[0]
        tried.append(f"{exe} ({why})")
    return None, (f"no python{py}: " + "; ".join(tried) if tried
                  else f"no python{py} on PATH nor in {pyenv}/versions/{py}.*")


def probe(python, log):
    code, out = run([python, "-c", PROBE], log, timeout=120)
    if code != 0:
        return None
    return json.loads(out.strip().splitlines()[-1])


def tf_versions(installed):
    """{dist: version} of every TensorFlow distribution installed."""
    return {d: v for d, v in installed["dists"].items() if d.startswith("tensorflow")}


def has_tf_minor(installed, tf):
    version = installed["dists"].get(TF_DIST, "")
    return version.startswith(tf + ".")


def pip_install(python, args, log):
    return run([python, "-m", "pip", "--disable-pip-version-check", "install",
                "--progress-bar", "off", *args], log)


def no_tf_wheel(out):
    """pip's answer when TF has no wheel for this Python: it reached the
    index (so this is not an outage) and found no matching distribution.
    Returns a note (the TF minors pip offers this Python), or None."""
    if f"No matching distribution found for {TF_DIST}" not in out:
        return None
    if re.search(r"NewConnectionError|ProxyError|SSLError|ConnectTimeout|Temporary failure "
                 r"in name resolution|Retrying \(", out):
        return None
    offered = re.search(rf"requirement {TF_DIST}==[^ ]+ \(from versions: ([^)]*)\)", out)
    minors = sorted({".".join(v.strip().split(".")[:2]) for v in
                     (offered.group(1).split(",") if offered else [])
                     if re.fullmatch(r"\d+\.\d+\.\d+", v.strip())},
                    key=lambda m: [int(x) for x in m.split(".")])
    if offered and offered.group(1).strip() == "none":
        return f"pip finds no {TF_DIST} for this Python"
    return f"pip offers this Python {TF_DIST} " + (
        f"{minors[0]}-{minors[-1]}" if len(minors) > 1 else ", ".join(minors) or "(none)")


def setup_venv(cell, python, venvs, log):
    """The cell's venv with tensorflow-cpu 2.X, pytest and numpy: made, or
    reused when it already has them. Returns (venv python, probe)."""
    venv = os.path.join(venvs, cell.name)
    vpy = os.path.join(venv, "bin", "python")
    installed = probe(vpy, log) if os.path.exists(vpy) else None
    if installed is None or installed["python"] != cell.py:
        if os.path.exists(venv):
            log.write(f"\n# {venv} is broken or for another Python: made again\n")
            shutil.rmtree(venv)
        code, out = run([python, "-m", "venv", venv], log, timeout=600)
        if code != 0:
            raise CellError("fail", f"python -m venv failed: {tail(out, 3)}")
        installed = probe(vpy, log)
    if (has_tf_minor(installed, cell.tf) and "pytest" in installed["dists"]
            and "numpy" in installed["dists"]):
        log.write(f"\n# reused: {TF_DIST} {installed['dists'][TF_DIST]}\n")
        return vpy, installed
    code, out = pip_install(vpy, [f"{TF_DIST}=={cell.tf}.*", "pytest", "numpy"], log)
    if code != 0:
        note = no_tf_wheel(out)
        if note is not None and not has_tf_minor(installed, cell.tf):
            shutil.rmtree(venv)  # a venv with no TF is of no use
            raise CellError("no TF wheel", note)
        raise CellError("fail", f"pip install {TF_DIST}=={cell.tf}.* failed: {tail(out, 3)}")
    return vpy, probe(vpy, log)


def wheel_requirements(wheel):
    """The wheel's Requires-Dist entries that are not TensorFlow and not
    behind an extra: what `--no-deps` left out and the wheel may need."""
    with zipfile.ZipFile(wheel) as whl:
        name = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = whl.read(name).decode()
    reqs = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        req = line.split(":", 1)[1].strip()
        if "extra ==" in req or re.match(r"tensorflow", req, re.I):
            continue
        reqs.append(req)
    return reqs


def what_pip_would_add(vpy, wheel, log):
    """What a user's `pip install WHEEL` (with its dependencies) would
    install or replace in this venv, of TensorFlow and Keras: [name-version].
    Non-empty means the wheel's requirement does not accept this cell's TF."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        code, out = pip_install(vpy, ["--dry-run", "--report", report, wheel], log)
        if code != 0:
            raise CellError("fail", f"pip cannot resolve the wheel's requirements here: "
                                    f"{tail(out, 3)}")
        with open(report) as f:
            install = json.load(f)["install"]
    names = [(i["metadata"]["name"].lower().replace("_", "-"), i["metadata"]["version"])
             for i in install]
    return [f"{n}-{v}" for n, v in names
            if n.startswith("tensorflow") or n in ("keras", "tf-keras")]


def install_wheel(cell, vpy, wheel, before, log):
    """The wheel into the venv; fails the cell if TensorFlow was touched, or
    would be by a plain `pip install WHEEL`."""
    would_add = what_pip_would_add(vpy, wheel, log)
    if would_add:
        raise CellError("fail", f"`pip install WHEEL` would install {', '.join(would_add)} "
                                f"over {TF_DIST} {before['dists'].get(TF_DIST)}")
    code, out = pip_install(vpy, ["--force-reinstall", "--no-deps", wheel], log)
    if code != 0:
        raise CellError("fail", f"pip install WHEEL failed: {tail(out, 3)}")
    reqs = wheel_requirements(wheel)
    if reqs:
        code, out = pip_install(vpy, [*reqs], log)
        if code != 0:
            raise CellError("fail", f"pip install {' '.join(reqs)} failed: {tail(out, 3)}")
    after = probe(vpy, log)
    if tf_versions(after) != tf_versions(before):
        raise CellError("fail", f"installing the wheel changed TensorFlow: "
                                f"{tf_versions(before)} -> {tf_versions(after)}")
    return after


def run_suite(cell, vpy, args, installed, log):
    """The suite, from a temporary directory holding only a copy of it."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH")}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env["RUSTFX_GOLDEN_DIR"] = args.golden
    if args.dev:
        env["PYTHONPATH"] = os.path.join(ROOT, "python")
        env["RUSTFX_MATRIX_RUSTFX_FROM"] = os.path.join(ROOT, "python")
    else:
        env["RUSTFX_MATRIX_RUSTFX_FROM"] = installed["prefix"]
        env["RUSTFX_MATRIX_NOT_FROM"] = os.path.join(ROOT, "python")
    with tempfile.TemporaryDirectory(prefix=f"rustfx-{cell.name}-") as tmp:
        shutil.copy(SUITE, tmp)
        code, out = run([vpy, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                         os.path.basename(SUITE)], log, env=env, cwd=tmp,
                        timeout=args.timeout)
    summary = re.findall(r"^=* ?(\d+ (?:passed|failed|error).*?)(?: =*)?$", out, re.M)
    note = summary[-1] if summary else ""
    if code is None:
        raise CellError("fail", f"suite killed after {args.timeout} s (a hang)")
    if code != 0:
        print(tail(out, 40), flush=True)
        raise CellError("fail", note or f"pytest exited {code}")
    return note


def versions_note(installed, dev=False):
    d = installed["dists"]
    parts = [f"{TF_DIST} {d.get(TF_DIST, '?')}", f"keras {d.get('keras', '?')}",
             f"numpy {d.get('numpy', '?')}"]
    if "rustfx" in d and not dev:
        parts.append(f"rustfx {d['rustfx']}")
    return ", ".join(parts)


def run_cell(cell, args):
    log = Log(os.path.join(args.venvs, "logs", cell.name + ".log"))
    start = time.monotonic()
    stage = "setup_s"
    try:
        python, why = find_interpreter(cell.py)
        if python is None:
            raise CellError("no interpreter", why)
        log.write(f"# interpreter: {python}\n")
        vpy, installed = setup_venv(cell, python, args.venvs, log)
        cell.setup_s = time.monotonic() - start
        if args.setup_only:
            cell.result, cell.note = "ready", versions_note(installed)
            return
        stage, start = "install_s", time.monotonic()
        if not args.dev:
            installed = install_wheel(cell, vpy, args.wheel, installed, log)
        cell.install_s = time.monotonic() - start
        stage, start = "suite_s", time.monotonic()
        summary = run_suite(cell, vpy, args, installed, log)
        cell.suite_s = time.monotonic() - start
        cell.result = "pass"
        cell.note = f"{summary}; {versions_note(installed, args.dev)}"
    except CellError as e:
        setattr(cell, stage, time.monotonic() - start)
        cell.result, cell.note = e.result, str(e)
    except Exception as e:  # a bug here, or a machine problem: this cell fails, the rest run
        setattr(cell, stage, time.monotonic() - start)
        cell.result, cell.note = "fail", f"runner error: {e!r}"
    finally:
        log.write(f"\n# {cell.result}: {cell.note}\n")
        log.close()


def table(cells, title):
    rows = [f"{title}\n",
            "| TF | Python | result | setup s | wheel s | suite s | note |",
            "|----|--------|--------|--------:|--------:|--------:|------|"]
    for c in cells:
        note = c.note.replace("|", "/").replace("\n", " ")
        rows.append(f"| {c.tf} | {c.py} | {c.result} | {c.setup_s:.0f} | {c.install_s:.0f} "
                    f"| {c.suite_s:.0f} | {note} |")
    counts = {}
    for c in cells:
        counts[c.result] = counts.get(c.result, 0) + 1
    rows.append("\n" + ", ".join(f"{n} {r}" for r, n in counts.items()))
    return "\n".join(rows) + "\n"


def parse_cells(text):
    if text == "all":
        return [Cell(tf, py) for tf in TF_MINORS for py in PYTHONS]
    cells = []
    for item in text.split(","):
        tf, sep, py = item.strip().partition(":")
        if not sep or not re.fullmatch(r"2\.\d+", tf) or not re.fullmatch(r"3\.\d+", py):
            raise argparse.ArgumentTypeError(f"a cell is TF:PYTHON, e.g. 2.16:3.11; got {item!r}")
        cells.append(Cell(tf, py))
    return cells


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--wheel", nargs="+",
                      help="the rustfx wheel: one file (or a glob matching one)")
    what.add_argument("--dev", action="store_true",
                      help=f"no wheel: {os.path.join(ROOT, 'python')} on PYTHONPATH")
    what.add_argument("--setup-only", action="store_true",
                      help="only make the venvs and install TF (warms pip's cache)")
    parser.add_argument("--cells", type=parse_cells,
                        help="TF:PYTHON,... or all (the default: every TF minor x Python)")
    parser.add_argument("--venvs", default=os.path.join(ROOT, "target", "matrix", "venvs"),
                        help="where the venvs (tf2.X-py3.Y) and logs/ are (default: %(default)s)")
    parser.add_argument("--golden", default=os.path.join(ROOT, "tests", "golden", "legacy"),
                        help="the golden vectors' directory (default: %(default)s)")
    parser.add_argument("--table", help="also write the table, as Markdown, to this file")
    parser.add_argument("--timeout", type=float, default=900,
                        help="seconds the suite may take in one cell (default: %(default)s)")
    args = parser.parse_args()

    if args.wheel:
        wheels = [w for pattern in args.wheel for w in (glob.glob(pattern) or [pattern])]
        if len(wheels) != 1 or not os.path.isfile(wheels[0]):
            parser.error(f"--wheel must name one existing file, got {wheels}")
        args.wheel = os.path.abspath(wheels[0])
    args.venvs = os.path.abspath(args.venvs)
    args.golden = os.path.abspath(args.golden)
    cells = args.cells or parse_cells("all")

    for cell in cells:
        print(f"[{cell.name}] ...", flush=True)
        run_cell(cell, args)
        print(f"[{cell.name}] {cell.result} (setup {cell.setup_s:.0f} s, wheel "
              f"{cell.install_s:.0f} s, suite {cell.suite_s:.0f} s): {cell.note}", flush=True)

    source = ("--setup-only" if args.setup_only else "--dev: " + os.path.join(ROOT, "python")
              if args.dev else os.path.basename(args.wheel))
    text = table(cells, f"rustfx matrix ({source}), {time.strftime('%Y-%m-%d %H:%M')}")
    print("\n" + text)
    if args.table:
        with open(args.table, "w") as f:
            f.write(text)
    return 1 if any(c.result == "fail" for c in cells) else 0


if __name__ == "__main__":
    sys.exit(main())
