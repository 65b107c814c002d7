#!/usr/bin/env python3
"""Generate the Unicode tables behind `rustfx::unicode_classes`.

Run from anywhere with the project's interpreter (Python 3.11, Unicode 14.0.0):

    .venv/bin/python python/tools/gen_unicode_classes.py           # (re)write
    .venv/bin/python python/tools/gen_unicode_classes.py --check   # verify only
    .venv/bin/python python/tools/gen_unicode_classes.py --dump 3A3 # debug a code point

Writes two files, both fully determined by the running interpreter:

* ``crates/rustfx/src/unicode_classes/tables.rs``: bitmaps (below U+0800) and sorted range
  tables (from U+0800) for re's ``\\w`` and ``\\s``, for the Cased and
  Case_Ignorable properties that ``str.lower()`` uses for the Greek final
  sigma, and the ``str.lower()`` mapping of every code point it changes.
* ``tests/golden/python_unicode.tsv``: what Python itself answers, for the
  Rust tests: an FNV-1a-64 hash per block of 256 code points (run-length
  encoded) over each code point's ``\\w``/``\\s`` membership, ``lower()`` and
  four final-sigma probes, plus a few hundred whole-string ``lower()`` probes.

Everything is *observed* from the interpreter (``re``, ``str`` methods), not
read from Unicode data files; the two properties Python does not expose
(Cased, Case_Ignorable) are reconstructed from ``unicodedata`` and then checked
against ``str.lower()`` probes on every code point, so a wrong reconstruction
aborts generation instead of producing a wrong table.
"""

from __future__ import annotations

import argparse
import itertools
import pathlib
import re
import sys
import unicodedata

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLES_PATH = ROOT / "crates" / "rustfx" / "src" / "unicode_classes" / "tables.rs"
GOLDEN_PATH = ROOT / "tests" / "golden" / "python_unicode.tsv"
SCRIPT = "python/tools/gen_unicode_classes.py"

# The project reproduces the scikit-learn environment's Python 3.11.
EXPECTED_UNIDATA = "14.0.0"
MAX_CP = 0x110000
BLOCK = 256
CAP_SIGMA = "\u03a3"
SMALL_SIGMA = "\u03c3"
FINAL_SIGMA = "\u03c2"

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK64 = (1 << 64) - 1

# Word_Break in {MidLetter, MidNumLet, Single_Quote} for Unicode 14.0; the
# only part of Case_Ignorable that unicodedata cannot derive from categories.
# (Checked below against str.lower() probes on every code point.)
WORD_BREAK_MID = frozenset(
    [0x27, 0x2E, 0x3A, 0xB7, 0x387, 0x55F, 0x5F4, 0x2018, 0x2019, 0x2024,
     0x2027, 0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A]
)
CASE_IGNORABLE_CATEGORIES = frozenset(["Mn", "Me", "Cf", "Lm", "Sk"])


def is_surrogate(cp: int) -> bool:
    return 0xD800 <= cp <= 0xDFFF


def scalar_values():
    """All code points a Rust `char` can hold (no surrogates)."""
    return (cp for cp in range(MAX_CP) if not is_surrogate(cp))


class Die(Exception):
    pass


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise Die(msg)


# --------------------------------------------------------------------------
# Observing Python


WORD_RE = re.compile(r"\w")
SPACE_RE = re.compile(r"\s")


def sigma_probes(x: str) -> list[bool]:
    """Final-sigma decisions of str.lower() around x (True = final 'ς').

    The probes are "AxΣ", "xΣ", "AΣx" and "AΣxA". Unless x is itself a
    capital sigma, also checks that every other character of the result is
    the per-character lower(), i.e. that the probed sigma is the only
    context-dependent mapping.
    """
    out = []
    for pre, suf in (("A" + x, ""), (x, ""), ("A", x), ("A", x + "A")):
        low = (pre + CAP_SIGMA + suf).lower()
        head = "".join(c.lower() for c in pre)
        tail = "".join(c.lower() for c in suf)
        check(len(low) == len(head) + 1 + len(tail), f"lower() length for {pre!r}+Σ+{suf!r}")
        mid = low[len(head)]
        check(mid in (SMALL_SIGMA, FINAL_SIGMA), f"sigma lost in {pre!r}+Σ+{suf!r}")
        if x != CAP_SIGMA:
            check(low == head + mid + tail, f"lower() structure for {pre!r}+Σ+{suf!r}")
        out.append(mid == FINAL_SIGMA)
    return out


def cased_reconstructed(ch: str) -> bool:
    # Unicode: Cased = Lowercase | Uppercase | Lt. For a 1-char string CPython's
    # islower()/isupper() test exactly its LOWER_MASK/UPPER_MASK flags, which
    # makeunicodedata.py sets from DerivedCoreProperties Lowercase/Uppercase.
    return ch.islower() or ch.isupper() or unicodedata.category(ch) == "Lt"


def case_ignorable_reconstructed(cp: int, ch: str) -> bool:
    return unicodedata.category(ch) in CASE_IGNORABLE_CATEGORIES or cp in WORD_BREAK_MID


class Record:
    __slots__ = ("word", "space", "lower", "probes")

    def __init__(self, word, space, lower, probes):
        self.word = word
        self.space = space
        self.lower = lower
        self.probes = probes


def observe(cp: int) -> Record:
    ch = chr(cp)
    word = WORD_RE.fullmatch(ch) is not None
    space = SPACE_RE.fullmatch(ch) is not None
    return Record(word, space, ch.lower(), sigma_probes(ch))


def collect():
    word, space, cased, ci = set(), set(), set(), set()
    lower: dict[int, str] = {}
    records: dict[int, Record] = {}
    for cp in scalar_values():
        ch = chr(cp)
        r = observe(cp)
        records[cp] = r
        # \w is documented as "isalnum() or '_'"; \s as str.isspace(); and
        # str.split() (no sep) splits on exactly str.isspace(). Verify all.
        check(r.word == (ch.isalnum() or ch == "_"), f"\\w vs isalnum at U+{cp:04X}")
        check(r.space == ch.isspace(), f"\\s vs isspace at U+{cp:04X}")
        check((len(("a" + ch + "b").split()) == 2) == r.space, f"split() at U+{cp:04X}")
        if r.word:
            word.add(cp)
        if r.space:
            space.add(cp)
        if r.lower != ch:
            lower[cp] = r.lower
        # Probe-derived properties: "AxΣ" and "xΣ" differ iff x is skipped
        # as case-ignorable; otherwise both say whether x is cased.
        p1, p2, p3, p4 = r.probes
        obs_ci = p1 != p2
        check(obs_ci == case_ignorable_reconstructed(cp, ch), f"Case_Ignorable at U+{cp:04X}")
        if obs_ci:
            ci.add(cp)
        rec_cased = cased_reconstructed(ch)
        if not obs_ci:
            check(p2 == rec_cased, f"Cased at U+{cp:04X}")
        # Forward scan after a final-context sigma: x skipped if CI, else
        # the sigma stays final iff x is not cased.
        check(p3 == (obs_ci or not rec_cased), f"probe 3 at U+{cp:04X}")
        check(p4 == (not obs_ci and not rec_cased), f"probe 4 at U+{cp:04X}")
        if rec_cased:
            cased.add(cp)
    for cp in range(0xD800, 0xE000):  # Rust never sees these; make sure Python agrees they're inert
        ch = chr(cp)
        check(not WORD_RE.fullmatch(ch) and not SPACE_RE.fullmatch(ch) and ch.lower() == ch,
              f"surrogate U+{cp:04X} has a property")
    return word, space, cased, ci, lower, records


# --------------------------------------------------------------------------
# Table construction


# Code points below LOW (ASCII and all 2-byte UTF-8: Latin, Greek, Cyrillic,
# Armenian, Hebrew, Arabic, ...) are looked up directly; above, by binary
# search in sorted range tables.
LOW = 0x800
MULTI = -(1 << 15)  # i16::MIN: "multi-character mapping" in LOWER_LOW


def ranges(cps, lo):
    """Sorted inclusive (first, last) ranges of the members >= lo."""
    out = []
    for cp in sorted(c for c in cps if c >= lo):
        if out and out[-1][1] + 1 == cp:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return [tuple(r) for r in out]


def low_bitmap(cps) -> list[int]:
    """[u64; LOW / 64]: bit cp % 64 of word cp // 64 set for members < LOW."""
    words = [0] * (LOW // 64)
    for cp in cps:
        if cp < LOW:
            words[cp // 64] |= 1 << (cp % 64)
    return words


def lower_low(lower: dict[int, str]) -> list[int]:
    """[i16; LOW]: lower(cp) - cp for single characters, MULTI for longer."""
    out = []
    for cp in range(LOW):
        res = lower.get(cp, chr(cp))
        if len(res) != 1:
            out.append(MULTI)
            continue
        delta = ord(res) - cp
        check(MULTI < delta < (1 << 15), f"delta of U+{cp:04X} does not fit i16")
        out.append(delta)
    return out


def lower_runs(lower: dict[int, str]):
    """(first, last, delta, stride) runs of the mappings of code points >= LOW:
    every stride-th code point from first to last maps to itself + delta.
    stride 0 marks a multi-character mapping of first (in LOWER_MULTI)."""
    runs = []
    for cp in sorted(c for c in lower if c >= LOW):
        res = lower[cp]
        if len(res) != 1:
            runs.append([cp, cp, 0, 0])
            continue
        delta = ord(res) - cp
        if runs:
            first, last, d, stride = runs[-1]
            gap = cp - last
            if stride != 0 and d == delta:
                if first == last and gap in (1, 2):
                    runs[-1][1], runs[-1][3] = cp, gap
                    continue
                if gap == stride:
                    runs[-1][1] = cp
                    continue
        runs.append([cp, cp, delta, 1])
    # Self-check the encoding against the dict.
    decoded = {}
    for first, last, delta, stride in runs:
        if stride == 0:
            decoded[first] = lower[first]
        else:
            for cp in range(first, last + 1, stride):
                decoded[cp] = chr(cp + delta)
    check(decoded == {c: v for c, v in lower.items() if c >= LOW}, "lower run encoding")
    return [tuple(r) for r in runs]


def rust_str(s: str) -> str:
    return '"' + "".join(f"\\u{{{ord(c):x}}}" for c in s) + '"'


def wrap(items, indent="    ", width=99):
    lines, cur = [], indent
    for it in items:
        piece = it + ","
        if cur.strip() and len(cur) + 1 + len(piece) > width:
            lines.append(cur)
            cur = indent + piece
        else:
            cur = cur + (" " if cur.strip() else "") + piece
    if cur.strip():
        lines.append(cur)
    return "\n".join(lines)


def header_lines(comment: str) -> list[str]:
    return [
        f"{comment} @generated by {SCRIPT} -- DO NOT EDIT.",
        f"{comment} Source: Python {platform_version()} ({sys.implementation.name}), "
        f"unicodedata.unidata_version {unicodedata.unidata_version}.",
        f"{comment} Regenerate: .venv/bin/python {SCRIPT}",
    ]


def platform_version() -> str:
    v = sys.version_info
    return f"{v.major}.{v.minor}.{v.micro}"


def render_tables(word, space, cased, ci, lower) -> str:
    def property_tables(name, doc, cps):
        rs = ranges(cps, lo=LOW)
        bits = wrap("0x" + "_".join(f"{w:016X}"[i:i + 4] for i in range(0, 16, 4)) for w in low_bitmap(cps))
        body = wrap(f"(0x{a:04X}, 0x{b:04X})" for a, b in rs)
        return (
            f"/// {doc} below 0x{LOW:X}: bit `cp % 64` of `[cp / 64]`.\n"
            f"pub(super) const {name}_LOW: [u64; {LOW // 64}] = [\n{bits}\n];\n"
            f"/// {doc} from 0x{LOW:X} up: {len(rs)} sorted inclusive ranges.\n"
            f"pub(super) const {name}: &[(u32, u32)] = &[\n{body}\n];\n"
        )

    runs = lower_runs(lower)
    multi = sorted((cp, res) for cp, res in lower.items() if len(res) != 1)
    out = header_lines("//")
    out += [
        "",
        "//! Generated Unicode tables for `unicode_classes` (see the generator for how",
        "//! each table is observed from Python and cross-checked).",
        "",
        "/// Python version the tables were generated from.",
        f'pub(super) const PYTHON_VERSION: &str = "{platform_version()}";',
        "/// `unicodedata.unidata_version` of that Python.",
        f'pub(super) const UNICODE_VERSION: &str = "{unicodedata.unidata_version}";',
        "/// Code points below this are looked up in the `*_LOW` tables.",
        f"pub(super) const LOW: u32 = 0x{LOW:X};",
        "",
        property_tables("WORD", "`re` `\\w` (`str.isalnum() or c == '_'`)", word),
        property_tables("SPACE", "`re` `\\s` (`str.isspace()`)", space),
        property_tables("CASED", "Unicode Cased", cased),
        property_tables("CASE_IGNORABLE", "Unicode Case_Ignorable", ci),
        f"/// `str.lower()` below 0x{LOW:X}: `lower(cp) - cp` if that is one character,",
        "/// `i16::MIN` if it is several (see `LOWER_MULTI`).",
        f"pub(super) const LOWER_LOW: [i16; 0x{LOW:X}] = [",
        wrap(str(d) for d in lower_low(lower)),
        "];",
        "",
        f"/// `str.lower()` from 0x{LOW:X} up, for the code points it changes, as sorted",
        "/// `(first, last, delta, stride)` runs: every `stride`-th code point from",
        "/// `first` to `last` maps to itself plus `delta`. `stride == 0` marks a",
        "/// multi-character mapping of `first` alone (see `LOWER_MULTI`).",
        f"/// ({len(lower)} code points in all change, {sum(1 for c in lower if c < LOW)} of them below 0x{LOW:X}.)",
        "pub(super) const LOWER: &[(u32, u32, i32, u32)] = &[",
        wrap(f"(0x{a:04X}, 0x{b:04X}, {d}, {s})" for a, b, d, s in runs),
        "];",
        "",
        "/// Multi-character `str.lower()` results, sorted by code point.",
        "pub(super) const LOWER_MULTI: &[(u32, &str)] = &[",
        wrap(f"(0x{cp:04X}, {rust_str(res)})" for cp, res in multi),
        "];",
    ]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------
# Golden file


def record_bytes(cp: int, r: Record) -> bytes:
    flags = int(r.word) | (int(r.space) << 1)
    for i, p in enumerate(r.probes):
        flags |= int(p) << (2 + i)
    b = bytearray([flags, len(r.lower)])
    for o in r.lower:
        b += ((ord(o) - cp) & 0xFFFFFFFF).to_bytes(4, "little")
    return bytes(b)


def fnv1a64(h: int, data: bytes) -> int:
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & MASK64
    return h


def block_hashes(records):
    hashes = []
    for block in range(MAX_CP // BLOCK):
        h = FNV_OFFSET
        for cp in range(block * BLOCK, (block + 1) * BLOCK):
            r = records.get(cp)
            if r is not None:
                h = fnv1a64(h, record_bytes(cp, r))
        hashes.append(h)
    return hashes


def string_probes() -> list[str]:
    alphabet = [CAP_SIGMA, "A", "a", " ", "'", "\u0301", "\u02b0", "\u0130", "1"]
    probes = []
    for n in (1, 2, 3):
        for t in itertools.product(alphabet, repeat=n):
            if CAP_SIGMA in t:
                probes.append("".join(t))
    probes += [
        "", "ΑΣ", "ΑΣ Α", "Σ", "ΣΣ", "ΣΣΣ", "ΟΔΥΣΣΕΥΣ", "ΣΟΦΟΣ ΚΑΛΟΣ.", "ΑΣ'", "ΑΣ'Α",
        "Α'Σ", "'Σ", "Α\u00adΣ", "Α\u0301\u0301\u0301Σ\u0301\u0301", "Α\u0301Σ\u0301Α",
        "ΑΣ\u0345", "Α\u0345Σ", "\u0345Σ", "ΑΣ\u02b0Α", "ΑΣ1", "ΑΣ_", "ΑΣ_Α", "ΑΣ-Α",
        "ΑΣ\u2019Α", "ΑΣ\u2019 ", "ΑΣ\ufe13Α", "ΑΣ\U0001d400", "\U0001d400Σ", "ǅΣ", "ΣǅΣ",
        "ⅫΣ", "ⓐΣ", "ΑΣⓐ", "ΑΣ\U0001f600", "\U0001e900Σ", "\U00010400Σ\U00010428",
        "Hello WORLD", "İSTANBUL", "Iİıi", "ΚΑΛΗΜΕΡΑ ΣΑΣ, ΤΙ ΚΑΝΕΤΕ;", "ΆΣ ΈΣ ΉΣ",
        "ABC\u00c0\u00c9\u00d8\u00deXYZ", "\u1e9e\u00df", "\u2c2f\u2c5f", "\u13a0\uab70",
        "ǄǅǆǇǈǉ", "\u2126\u212a\u212b", "ΣA\u0301\u00c1" * 3, "x" * 40 + "Σ" + "y" * 40,
        "ascii only, no change needed.", "MiXeD CaSe 123 _X_", "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f",
        "\U000E0001ΑΣ\U000E0020", "ΑΣ\U000E0001", "Ω\U000E0041Σ", "\u1f88\u1f89\u1fbc",
        "\u0130\u0130Σ", "\u03a3\u0130", "Aa\u0300Σ\u0300a",
    ]
    # Deterministic, so no randomness: de-duplicate keeping the first.
    seen, out = set(), []
    for p in probes:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def hexs(s: str) -> str:
    return " ".join(f"{ord(c):X}" for c in s)


def render_golden(records) -> str:
    lines = header_lines("#")
    lines += [
        "# Python's own answers, checked exhaustively by the tests in",
        "# src/unicode_classes/tests.rs. Tab-separated lines:",
        "#   V <python version> <unidata version>",
        "#   B <first block> <number of blocks> <hash>: that many consecutive blocks",
        "#     of 256 code points each hash (hex) to <hash>: FNV-1a-64 over, for each",
        "#     non-surrogate code point cp of the block in order, the bytes",
        "#       flags: bit0 re \\w, bit1 re \\s, bits2..5 final sigma chosen by",
        "#              lower() in 'A'+x+'Σ', x+'Σ', 'AΣ'+x, 'AΣ'+x+'A';",
        "#       len(x.lower()); then each char of x.lower() as (ord - cp) i32 LE.",
        "#   P <input> <input.lower()>: code points in hex, space separated.",
        f"V\t{platform_version()}\t{unicodedata.unidata_version}",
    ]
    hashes = block_hashes(records)
    i = 0
    while i < len(hashes):
        j = i
        while j < len(hashes) and hashes[j] == hashes[i]:
            j += 1
        lines.append(f"B\t{i:X}\t{j - i}\t{hashes[i]:016X}")
        i = j
    for p in string_probes():
        lines.append(f"P\t{hexs(p)}\t{hexs(p.lower())}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if the files on disk are stale")
    ap.add_argument("--dump", metavar="HEX", help="print Python's record for one code point")
    ap.add_argument("--any-version", action="store_true",
                    help=f"allow a Unicode version other than {EXPECTED_UNIDATA}")
    args = ap.parse_args()
    if unicodedata.unidata_version != EXPECTED_UNIDATA and not args.any_version:
        print(f"{SCRIPT}: this Python has Unicode {unicodedata.unidata_version}, the project "
              f"targets {EXPECTED_UNIDATA} (Python 3.11); use the project's .venv/bin/python "
              "or pass --any-version", file=sys.stderr)
        return 2

    if args.dump:
        cp = int(args.dump, 16)
        r = observe(cp)
        ch = chr(cp)
        print(f"U+{cp:04X} {unicodedata.name(ch, '?')} cat={unicodedata.category(ch)}")
        print(f"  \\w={r.word} \\s={r.space} lower={hexs(r.lower)} final-sigma probes={r.probes}")
        print(f"  cased(reconstructed)={cased_reconstructed(ch)} "
              f"case_ignorable(reconstructed)={case_ignorable_reconstructed(cp, ch)}")
        print(f"  record bytes={record_bytes(cp, r).hex()}")
        return 0

    try:
        word, space, cased, ci, lower, records = collect()
    except Die as e:
        print(f"{SCRIPT}: {e}", file=sys.stderr)
        return 2
    outputs = {
        TABLES_PATH: render_tables(word, space, cased, ci, lower),
        GOLDEN_PATH: render_golden(records),
    }
    stale = False
    for path, text in outputs.items():
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old == text:
            print(f"up to date: {path.relative_to(ROOT)} ({len(text.encode())} bytes)")
            continue
        if args.check:
            print(f"STALE: {path.relative_to(ROOT)}", file=sys.stderr)
            stale = True
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {path.relative_to(ROOT)} ({len(text.encode())} bytes)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
