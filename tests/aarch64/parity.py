#!/usr/bin/env python3
"""x86-64 against aarch64: the same bytes out of rustfx-features and rustfx-sensor.

`make test-aarch64` runs this on both CPUs' builds (the aarch64
rustfx-features is the aarch64 wheel's); the aarch64 ones run under
qemu-user (--runner). Standard library only.

rustfx-features: every extractor of the registry (`rustfx-features
--registry`, read from the x86-64 build; the aarch64 build must print the
same registry), on every file under the --corpus directories. The cases are
each extractor's registry examples, plus, for each value the registry allows
for the parameters `output` and `dtype`, the first example that accepts it
(so every layout x dtype the spec allows runs). Each case runs once per CPU
on all files at once (`--spec`, canonical spec from `--print-spec`); stdout
(floats in shortest round-trip form, so exact), stderr and exit status must
be equal byte for byte.

rustfx-sensor (--model): the model scores every corpus file on both CPUs.
Its features are the core's (compared above), but tract runs the network
with each CPU's own matrix kernels, so the scores must have the same winner
on every file and be at most MAX_SENSOR_ULPS float32 steps apart; with
--sensor-exact, equal byte for byte.

Prints the parity table (extractor x layout x dtype: identical / differs),
writes it as Markdown with --table, and exits 1 on any difference.
"""

import argparse
import itertools
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

# The parameters whose allowed values make an output's layout or dtype.
GRID_PARAMS = ("output", "dtype")

# The sensor's scores on the two CPUs, at most this many float32 steps apart
# (without --sensor-exact).
MAX_SENSOR_ULPS = 16


def corpus_files(dirs):
    files = []
    for d in dirs:
        for root, _, names in os.walk(d):
            files += [os.path.join(root, n) for n in names]
    files = sorted(f for f in files if os.path.isfile(f) and not os.path.islink(f))
    if not files:
        sys.exit(f"no files under {dirs}")
    return files


def run(cmd):
    p = subprocess.run(cmd, capture_output=True)
    return p.returncode, p.stdout, p.stderr


def program_of(path, tmp):
    """path itself, or the rustfx-features inside path if it is a wheel
    (extracted into tmp)."""
    if not path.endswith(".whl"):
        return path
    with zipfile.ZipFile(path) as whl:
        member = next(n for n in whl.namelist() if n.endswith(".data/scripts/rustfx-features"))
        program = whl.extract(member, tmp)
    os.chmod(program, 0o755)
    return program


def spec_of(features, name, params):
    """The canonical spec JSON of `name` with `params`, or None if refused."""
    args = [f"{k}={json.dumps(v)}" for k, v in params.items()]
    code, out, _ = run([features, "--print-spec", name, *args])
    return out.decode().strip() if code == 0 else None


def cases(spec_of, registry):
    """(extractor, spec JSON) for every example and every allowed value of
    the grid parameters, each distinct spec once; and the grid's values
    that no example accepts (the spec refuses them). spec_of(name, params):
    the canonical spec JSON, or None if refused (rustfx-features here,
    rustfx.FeatureSpec in tf_parity.py); registry: entries with "name",
    "examples" and "params", as `rustfx-features --registry` prints them."""
    seen, found, refused = set(), [], []

    def add(name, params):
        spec = spec_of(name, params)
        if spec is not None and spec not in seen:
            seen.add(spec)
            found.append((name, spec))
        return spec is not None

    for entry in registry:
        name, examples = entry["name"], entry["examples"] or [{}]
        for example in examples:
            add(name, example)
        grid = [(p["name"], p["names"]) for p in entry["params"]
                if p["name"] in GRID_PARAMS and p["names"]]
        keys = [k for k, _ in grid]
        for values in itertools.product(*(v for _, v in grid)):
            override = dict(zip(keys, values))
            if not any(add(name, {**example, **override}) for example in examples):
                refused.append(f"{name} {json.dumps(override)}")
    return found, refused


def compare_features(x86, aarch64, runner, files, registry):
    rows = []
    found, refused = cases(lambda name, params: spec_of(x86, name, params), registry)
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, spec) in enumerate(found):
            path = os.path.join(tmp, f"spec{i}.json")
            with open(path, "w") as f:
                f.write(spec)
            want = run([x86, "--spec", path, "--", *files])
            got = run([*runner, aarch64, "--spec", path, "--", *files])
            output = json.loads(spec)["output"]
            same = want == got
            if not same:
                print(f"DIFFERS: {spec}\n  exit {want[0]} vs {got[0]}, stdout "
                      f"{len(want[1])} vs {len(got[1])} bytes", file=sys.stderr)
            rows.append((name, output["kind"], output["dtype"], spec, same, want[0], len(want[1])))
    return rows, refused


def sensor_scores(stdout):
    """{path: {key: [float32 bit patterns]}} of rustfx-sensor's output."""
    rows = {}
    for line in stdout.decode().splitlines():
        path, *outputs = line.split("\t")
        rows[path] = {}
        for output in outputs:
            key, values = output.split("=", 1)
            rows[path][key] = [struct.unpack("<i", struct.pack("<f", float(v)))[0]
                               for v in values.split()]
    return rows


def ulps(a, b):
    """How many float32 values apart two bit patterns are."""
    order = lambda bits: bits if bits >= 0 else -(bits & 0x7FFFFFFF)  # noqa: E731
    return abs(order(a) - order(b))


def compare_sensor(x86, aarch64, runner, model, files, exact):
    """(passed, description). Scores: equal byte for byte, or (exact
    False) the same winner on every file and at most MAX_SENSOR_ULPS
    float32 steps apart: tract runs the network with each CPU's own matrix
    kernels (AVX2/FMA or NEON), whose sums round in different orders."""
    want = run([x86, "--model", model, "--", *files])
    got = run([*runner, aarch64, "--model", model, "--", *files])
    if want == got:
        return True, f"identical, byte for byte, on {len(files)} files"
    if want[0] != got[0] or want[2] != got[2]:
        return False, f"differs: exit {want[0]} vs {got[0]}, stderr differs: {want[2] != got[2]}"
    a, b = sensor_scores(want[1]), sensor_scores(got[1])
    if a.keys() != b.keys():
        return False, "differs: not the same files scored"
    same_rows = sum(a[p] == b[p] for p in a)
    worst = max(ulps(x, y) for p in a for k in a[p] for x, y in zip(a[p][k], b[p][k]))
    winners = all(
        max(range(len(v)), key=v.__getitem__) == max(range(len(w)), key=w.__getitem__)
        for p in a for k in a[p] for v, w in [(a[p][k], b[p][k])])
    text = (f"{same_rows} of {len(a)} files' scores identical byte for byte; the others at "
            f"most {worst} float32 steps (ulps) apart, "
            f"{'the same winner on every file' if winners else 'WINNERS DIFFER'}")
    return (not exact and winners and worst <= MAX_SENSOR_ULPS), text


def table(rows, refused, files, sensor):
    grouped = {}
    for name, kind, dtype, _, same, _, _ in rows:
        cell = grouped.setdefault((name, kind, dtype), [0, 0])
        cell[0] += 1
        cell[1] += not same
    lines = [f"rustfx-features, {len(files)} files, x86-64 against aarch64 (qemu-user):", "",
             "| extractor | layout | dtype | specs | result |", "|---|---|---|---:|---|"]
    for (name, kind, dtype), (n, bad) in grouped.items():
        result = "identical" if not bad else f"**differs** ({bad} of {n})"
        lines.append(f"| {name} | {kind} | {dtype} | {n} | {result} |")
    if refused:
        lines += ["", "Refused by the spec with every example (no output to compare): "
                  + "; ".join(refused) + "."]
    if sensor is not None:
        lines += ["", f"rustfx-sensor on the demo model, the same files: {sensor[1]}."]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--x86", required=True, help="x86-64 rustfx-features")
    parser.add_argument("--aarch64", required=True,
                        help="aarch64 rustfx-features, or a wheel that has it")
    parser.add_argument("--runner", default="qemu-aarch64-static",
                        help="runs an aarch64 program (split on spaces; empty: none)")
    parser.add_argument("--corpus", action="append", required=True, help="a directory of files")
    parser.add_argument("--sensor-x86", help="x86-64 rustfx-sensor")
    parser.add_argument("--sensor-aarch64", help="aarch64 rustfx-sensor")
    parser.add_argument("--model", help="a rustfx-sensor model directory")
    parser.add_argument("--sensor-exact", action="store_true",
                        help="the sensor's scores must be equal byte for byte too")
    parser.add_argument("--table", help="write the table here (Markdown)")
    args = parser.parse_args()
    runner = args.runner.split()
    files = corpus_files(args.corpus)
    start = time.monotonic()
    tmp = tempfile.TemporaryDirectory(prefix="rustfx-parity-")
    args.aarch64 = program_of(args.aarch64, tmp.name)

    registry_text = run([args.x86, "--registry"])[1]
    if run([*runner, args.aarch64, "--registry"])[1] != registry_text:
        sys.exit("the two builds' registries differ")
    rows, refused = compare_features(args.x86, args.aarch64, runner, files, json.loads(registry_text))
    sensor = None
    if args.model:
        sensor = compare_sensor(args.sensor_x86, args.sensor_aarch64, runner, args.model, files,
                                args.sensor_exact)

    text = table(rows, refused, files, sensor)
    print(text)
    print(f"{len(rows)} specs, {time.monotonic() - start:.0f} s")
    if args.table:
        with open(args.table, "w") as f:
            f.write(text)
    ok = all(r[4] for r in rows) and (sensor is None or sensor[0])
    print("parity: passed" if ok else "parity: FAILED (differences above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
