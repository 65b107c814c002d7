"""Writes tests/golden/thrember_authenticode.tsv: thrember's `authenticode` group for every
file in tests/golden/pe/signed/ (EMBER2024 feature version 3, signify 0.7.1).

    /tmp/thrember-venv/bin/python tests/golden/generate_thrember_authenticode.py [DIR OUT]

With DIR and OUT, does the same for every file in DIR (absolute paths) into OUT: a
differential check of other files, read by the Rust test when AUTHENTICODE_GOLDEN=OUT.

Each row: path (relative to the repository), sha256, pefile's FILE_HEADER.TimeDateStamp
(0 when pefile rejects the file), the 8 values as float32 bit patterns, then as float64
for reading. Files pefile rejects get zeros, as thrember's extractor does (pe is None).
"""

import hashlib
import struct
import sys
from pathlib import Path

import numpy as np
import pefile

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, "/work/shared/oracles/thrember")
import features  # noqa: E402

NAMES = [
    "num_certs", "self_signed", "empty_program_name", "no_countersigner",
    "parse_error", "chain_max_depth", "latest_signing_time", "signing_time_diff",
]


def main():
    extractor = features.AuthenticodeSignature()
    rows = ["\t".join(["path", "sha256", "pe_timestamp"] + [f"{n}_f32" for n in NAMES]
                      + [f"{n}_f64" for n in NAMES])]
    directory, out = ROOT / "tests/golden/pe/signed", ROOT / "tests/golden/thrember_authenticode.tsv"
    if len(sys.argv) == 3:
        directory, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    for path in sorted(p for p in directory.iterdir() if p.is_file()):
        data = path.read_bytes()
        try:
            pe = pefile.PE(data=data)
            timestamp = pe.FILE_HEADER.TimeDateStamp
        except pefile.PEFormatError:
            pe, timestamp = None, 0
        raw = extractor.raw_features(data, pe)
        vector = extractor.process_raw_features(raw)
        assert vector.dtype == np.float32 and vector.shape == (8,)
        bits = [f"{struct.unpack('<I', struct.pack('<f', v))[0]:08x}" for v in vector]
        readable = [repr(float(raw.get(n, 0))) for n in NAMES]
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        rows.append("\t".join([str(shown), hashlib.sha256(data).hexdigest(),
                               str(timestamp)] + bits + readable))
    out.write_text("\n".join(rows) + "\n")
    print(f"{len(rows) - 1} files -> {out}")


if __name__ == "__main__":
    main()
