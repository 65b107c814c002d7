"""Joins the output of crate_comparison.rs (goblin, object, pelite on every
corpus file) with what pefile (2024.8.26, thrember's parser) finds, and
prints the Markdown table of tests/pe/README.md.

    python tests/pe/compare_pe_crates.py /tmp/pecmp.tsv > /tmp/table.md

Run with a Python that has pefile (e.g. the thrember venv). Each crate cell is
`ok` when the crate parsed the file and its counts (sections, imported
functions, imports by ordinal, exports, Rich header pairs, relocation blocks)
agree with pefile's; otherwise the fields that differ (crate value / pefile
value) or `E` for a part the crate refused, or `err: ...` when it refused the
whole file. For object the column is its PE-specific API (PeFile32/64).
"""

import re
import sys
from pathlib import Path

import pefile

CORPUS = Path(__file__).resolve().parent.parent / "golden" / "pe"
FIELDS = ["sec", "imp", "ord", "exp", "rich", "rel"]


def pefile_counts(data):
    try:
        pe = pefile.PE(data=data)
    except (pefile.PEFormatError, AttributeError) as e:
        return None, f"PEFormatError: {e}"
    imps = [i for e in getattr(pe, "DIRECTORY_ENTRY_IMPORT", []) for i in e.imports]
    exp = getattr(pe, "DIRECTORY_ENTRY_EXPORT", None)
    counts = {
        "sec": len(pe.sections),
        "imp": len(imps),
        "ord": sum(1 for i in imps if not i.name),
        "exp": len(exp.symbols) if exp else 0,
        "rich": len(pe.RICH_HEADER.values) // 2 if pe.RICH_HEADER else 0,
        "rel": len(getattr(pe, "DIRECTORY_ENTRY_BASERELOC", [])),
    }
    return counts, "ok"


def cell(text, ref):
    text = text.strip()
    if text.startswith("err:") or text == "PANIC":
        return text.replace("|", "/")[:70]
    got = dict(re.findall(r"(\w+)=(\S+)", text))
    if ref is None:
        return "ok (pefile: error)"
    diffs = []
    for f in FIELDS:
        if f not in got:
            continue
        v = got[f]
        if v.startswith("E:"):
            diffs.append(f"{f}=E({v[2:40]})")
        elif int(v) != ref[f]:
            diffs.append(f"{f} {v}/{ref[f]}")
    return "ok" if not diffs else "; ".join(diffs).replace("|", "/")


def main():
    rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
    print("| file | pefile | goblin | goblin permissive | object (PeFile) | pelite |")
    print("|---|---|---|---|---|---|")
    names = ("goblin", "goblin permissive", "object", "pelite")
    stats = {k: [0, 0, 0, 0] for k in names}  # rejected, equal, different, accepted bad
    n_ok = n_bad = 0
    for path, gob, gobp, _objfile, objpe, pel in rows:
        ref, status = pefile_counts((CORPUS / path).read_bytes())
        cells = [cell(c, ref) for c in (gob, gobp, objpe, pel)]
        n_ok += ref is not None
        n_bad += ref is None
        for k, c in zip(names, cells):
            if ref is None:
                stats[k][3] += not c.startswith("err")
            elif c.startswith("err") or c == "PANIC":
                stats[k][0] += 1
            else:
                stats[k][1 if c == "ok" else 2] += 1
        pf = "ok" if ref else status.replace("|", "/")[:60]
        print(f"| {path} | {pf} | " + " | ".join(cells) + " |")
    print()
    print(f"{len(rows)} files; pefile accepts {n_ok}, raises PEFormatError on {n_bad}. "
          "Of the files pefile accepts, each crate rejects / gives pefile's counts / "
          "accepts with different counts or failed parts: " +
          "; ".join(f"{k} {s[0]} / {s[1]} / {s[2]}" for k, s in stats.items()) +
          ". Files pefile rejects that a crate accepts: " +
          ", ".join(f"{k} {s[3]}" for k, s in stats.items()) + ".")


if __name__ == "__main__":
    main()
