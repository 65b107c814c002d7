"""Golden vectors from thrember (EMBER2024, feature version 3) for every file
of the PE corpus tests/golden/pe/ (built by tests/pe/build_corpus.py; files
under tests/golden/pe/signed/ are added separately and picked up here too).

thrember is `src/thrember/features.py` of FutureComputing4AI/EMBER2024
(commit 0ef753e81d98, Apache-2.0; this project's machines keep a copy in
../shared/oracles/thrember). Run with a Python that can import it
(pefile==2024.8.26, signify==0.7.1, scikit-learn, numpy), from the
repository root, giving the directory that holds features.py:

    PYTHONHASHSEED=0 python tests/golden/generate_thrember_pe.py ../shared/oracles/thrember > tests/golden/thrember_pe.tsv

Writes one line per file, sorted by path relative to tests/golden/pe/: that
path, the file's sha256, then one column per thrember feature group, in
thrember's order: general (7), histogram (256), byteentropy (256),
strings (177), header (74), section (224), imports (1282), exports (129),
datadirectories (34), richheader (33), authenticode (8),
pefilewarnings (88); each a comma-joined list of the float32 bit patterns
(8 hex digits). The 12 groups concatenated are thrember's feature_vector
(2568 values).

Each group is computed as PEFeatureExtractor.raw_features does it: one
pefile.PE(data=...) per file (None when pefile raises PEFormatError or
AttributeError), then every group's raw_features(bytez, pe) in order on that
same object, then process_raw_features. When a group raises, its column is
`error:<ExceptionType>` (thrember's feature_vector then raises for the whole
file; the other groups' columns are still what thrember computes for them).

thrember normalizes pefile's warnings by iterating Python sets, whose order
depends on PYTHONHASHSEED; where a warning matches two kinds its answer
changes from run to run. Generate with PYTHONHASHSEED=0 so the file is
reproducible (src/ember2024/tests.rs lists the file this affects).

A 14th column holds pefile's raw warnings for the file, as thrember's
pefilewarnings group sees them (pe.get_warnings() after all the other groups
ran), joined with " | " (runs of whitespace in them collapsed to one space);
`-` when there are none; `pefile:<ExceptionType>: <message>` when pefile.PE
raised (thrember then treats the file as not a PE). When pefile.PE raises
anything else (thrember does not catch it and fails on the whole file),
every group column is `crash:<ExceptionType>` and the 14th column
`crash:<ExceptionType>: <message>`.
"""

import contextlib
import hashlib
import io
import os
import sys
from pathlib import Path

import numpy as np

GROUPS = ["general", "histogram", "byteentropy", "strings", "header", "section",
          "imports", "exports", "datadirectories", "richheader", "authenticode",
          "pefilewarnings"]
CORPUS = Path(__file__).resolve().parent / "pe"


def bits(values):
    return ",".join(f"{v:08x}" for v in np.asarray(values, np.float32).view(np.uint32))


def clean(text):
    return " ".join(str(text).split())


def row(features, extractor, rel, data):
    import pefile
    pe = None
    note = "-"
    try:
        pe = pefile.PE(data=data)
    except (pefile.PEFormatError, AttributeError) as e:
        note = f"pefile:{type(e).__name__}: {clean(e)}"
    except Exception as e:  # noqa: BLE001 - thrember itself fails on the file
        crash = f"crash:{type(e).__name__}"
        return "\t".join([rel, hashlib.sha256(data).hexdigest(), *[crash] * len(GROUPS),
                          f"{crash}: {clean(e)}"])
    columns = []
    for fe in extractor.features:
        try:
            # thrember prints "WARN: Unknown pefile warning" to stdout
            with contextlib.redirect_stdout(sys.stderr):
                vec = fe.process_raw_features(fe.raw_features(data, pe))
            columns.append(bits(vec))
        except Exception as e:  # noqa: BLE001 - recorded in the golden file
            columns.append(f"error:{type(e).__name__}")
    assert [fe.name for fe in extractor.features] == GROUPS
    dims = [fe.dim for fe in extractor.features]
    for c, dim in zip(columns, dims):
        assert c.startswith("error:") or c.count(",") == dim - 1, (rel, c[:40], dim)
    if not any(c.startswith("error:") for c in columns):
        # the same numbers as thrember's own feature_vector
        with contextlib.redirect_stdout(sys.stderr):
            whole = bits(extractor.feature_vector(data))
        assert whole == ",".join(columns), rel
    if pe is not None:
        warnings = [clean(w) for w in pe.get_warnings()]
        note = " | ".join(warnings) if warnings else "-"
    return "\t".join([rel, hashlib.sha256(data).hexdigest(), *columns, note])


def main():
    sys.path.insert(0, sys.argv[1])
    import features
    extractor = features.PEFeatureExtractor()
    files = sorted((p.relative_to(CORPUS).as_posix(), p) for p in CORPUS.rglob("*")
                   if p.is_file())
    print("# path (relative to tests/golden/pe)\tsha256\t" +
          "\t".join(f"{g} ({fe.dim})" for g, fe in zip(GROUPS, extractor.features)) +
          "\tpefile warnings (' | '-joined; '-' none; pefile:<Exception>: <message> if pefile raised)"
          "; float32 bits, error:<Exception> where thrember raises, crash:<Exception> in every "
          "group where pefile raises what thrember does not catch; "
          "PYTHONHASHSEED=0 python tests/golden/generate_thrember_pe.py ../shared/oracles/thrember "
          "> tests/golden/thrember_pe.tsv")
    for rel, path in files:
        print(row(features, extractor, rel, path.read_bytes()))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
