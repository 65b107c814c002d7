#!/usr/bin/env python3
"""Golden vectors for rustfx::printable_strings from GNU binutils `strings`.

    python3 tests/golden/generate_strings.py      # from the repository root

Writes the crafted inputs under tests/golden/strings/ (deterministic: fixed
seeds), then runs the system `strings -a -n N -e E` (E in s, l; N in 1, 4, 8)
on every input of INPUTS and writes tests/golden/strings.tsv, one row per
(input, encoding, min_len):

    input <TAB> encoding <TAB> min_len <TAB> count <TAB> strings

`encoding` is rustfx's name (ascii, utf16le), `strings` the hex of each
string, separated by single spaces. All inputs are committed (machine files
differ between machines), so the vectors only change with binutils. GNU
prints each string followed by "\\n"; a string never contains "\\n" (it is
not graphic), so splitting stdout on "\\n" is exact; this script checks that
every string is non-empty and only has tab and 0x20..0x7e in it. Made with
GNU strings (GNU Binutils for Debian) 2.40; the version is the header line.

It also writes tests/golden/strings_offsets.tsv, the offsets `strings -a -t d
-n N -e E` prints (where each string starts in the file; for -e l its first
byte), for the explanations of printable_strings:

    input <TAB> encoding <TAB> min_len <TAB> count <TAB> offsets

`offsets` in decimal, separated by single spaces, over OFFSET_INPUTS with
min_len 4 and 8, and 1 for the inputs under 4 KiB (min_len 1 finds a string
every few bytes of a binary). The strings `-t d` prints are checked to be
those of the plain run, so an offset and a string of the same position go
together.
"""

import os
import random
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "golden", "strings.tsv")
OFFSETS_OUT = os.path.join(ROOT, "tests", "golden", "strings_offsets.tsv")
CRAFTED = "tests/golden/strings"

# Committed PE files of various sizes (one of odd length), plus the ELF
# files built from tests/golden/strings/hello.c and the crafted inputs.
INPUTS = [
    "tests/golden/pe/nonpe/empty.bin",
    "tests/golden/pe/nonpe/text.txt",
    "tests/golden/pe/nonpe/elf_header.bin",
    "tests/golden/pe/built/exe64_minimal.exe",
    "tests/golden/pe/derived/exe32_section_names_nonascii.exe",
    "tests/golden/pe/malformed/exe32_trunc_last_byte.exe",
    "tests/golden/pe/signed/tst_fraction.exe",
    "tests/golden/pe/signed/cli64_nested.exe",
    "tests/golden/pe/built/exe32_tls_callback.exe",
    "tests/golden/pe/launchers/distlib_w64.exe",
    "tests/golden/pe/launchers/distlib_t64-arm.exe",
    f"{CRAFTED}/elf_hello",
    f"{CRAFTED}/elf_hello_stripped",
    f"{CRAFTED}/crafted_edges.bin",
    f"{CRAFTED}/crafted_utf16.bin",
    f"{CRAFTED}/crafted_random.bin",
]
# The strings inputs and a few more PE files (a signed one, a launcher, one
# with resource names).
OFFSET_INPUTS = INPUTS + [
    "tests/golden/pe/signed/t64_nested.exe",
    "tests/golden/pe/launchers/distlib_t32.exe",
    "tests/golden/pe/resources/exe64_res_names_overlap.exe",
]
ENCODINGS = [("ascii", "s"), ("utf16le", "l")]
MIN_LENS = [1, 4, 8]
GRAPHIC = set(range(0x20, 0x7F)) | {0x09}


def crafted_edges():
    """Runs of every length 1..9 ended by each class edge, all 256 bytes,
    a run at EOF."""
    out = bytearray()
    enders = [0x00, 0x08, 0x0A, 0x0B, 0x0C, 0x0D, 0x1F, 0x7F, 0x80, 0xFF]
    for n in range(1, 10):
        for e in enders:
            out += bytes(0x20 + (i * 7 + n) % 95 for i in range(n)) + bytes([e])
    out += bytes(range(256)) * 2
    out += b"\t \t~ ~\tend of file run"
    return bytes(out)


def crafted_utf16():
    """UTF-16LE strings at even and odd offsets, interrupted by each kind of
    non-graphic character, a trailing odd byte."""
    out = bytearray()

    def w(s):
        return s.encode("utf-16-le")

    for lead in [b"", b"\x00", b"\x01", b"A", b"\xff\x00"]:
        for n in range(1, 10):
            out += lead + w("abcdefghi"[:n])
            for stop in [b"\x00\x00", b"\x01\x00", b"A\x01", b"\x00A", b"\x7f\x00", b"\xe9\x00"]:
                out += stop + w("xyz"[: n % 4])
    out += w("tab\there") + b"\x00" + w("shifted by one") + b"\x0a\x00"
    out += w("caf\u00e9 \u4e2d\u6587 end") + w("at EOF") + b"!"
    return bytes(out)


def crafted_random():
    """16 KiB biased towards graphic bytes and NULs (fixed seed)."""
    rng = random.Random(20261123)
    pool = list(b"aZ09 ~\t") * 4 + [0] * 3 + [0x01, 0x0A, 0x7F, 0x80, 0xFF]
    out = bytearray()
    while len(out) < 16384:
        if rng.getrandbits(2) == 0:
            out.append(rng.getrandbits(8))
        else:
            out.append(pool[rng.getrandbits(16) % len(pool)])
    return bytes(out)


def write_crafted():
    for name, make in [
        ("crafted_edges.bin", crafted_edges),
        ("crafted_utf16.bin", crafted_utf16),
        ("crafted_random.bin", crafted_random),
    ]:
        with open(os.path.join(ROOT, CRAFTED, name), "wb") as f:
            f.write(make())


def gnu_strings(path, min_len, e):
    out = subprocess.run(
        ["strings", "-a", "-n", str(min_len), "-e", e, path],
        check=True,
        capture_output=True,
    ).stdout
    if not out:
        return []
    assert out.endswith(b"\n"), path
    strings = out[:-1].split(b"\n")
    for s in strings:
        assert s and set(s) <= GRAPHIC, (path, s)
    return strings


def gnu_offsets(path, min_len, e):
    """(offset, string) of each line of `strings -a -t d`: the offset in
    decimal, right-aligned in 7 columns, one space, the string."""
    out = subprocess.run(
        ["strings", "-a", "-t", "d", "-n", str(min_len), "-e", e, path],
        check=True,
        capture_output=True,
    ).stdout
    if not out:
        return []
    assert out.endswith(b"\n"), path
    pairs = []
    for line in out[:-1].split(b"\n"):
        offset, string = line.lstrip(b" ").split(b" ", 1)
        pairs.append((int(offset), string))
    return pairs


def offset_rows():
    rows = []
    for rel in OFFSET_INPUTS:
        path = os.path.join(ROOT, rel)
        min_lens = [1, 4, 8] if os.path.getsize(path) < 4096 else [4, 8]
        for name, e in ENCODINGS:
            for n in min_lens:
                pairs = gnu_offsets(path, n, e)
                assert [s for _, s in pairs] == gnu_strings(path, n, e), (rel, n, e)
                offsets = " ".join(str(o) for o, _ in pairs)
                rows.append(f"{rel}\t{name}\t{n}\t{len(pairs)}\t{offsets}")
    return rows


def main():
    version = subprocess.run(
        ["strings", "--version"], check=True, capture_output=True, text=True
    ).stdout.splitlines()[0]
    write_crafted()
    rows = [f"# {version}; generated by tests/golden/generate_strings.py"]
    for rel in INPUTS:
        path = os.path.join(ROOT, rel)
        for name, e in ENCODINGS:
            for n in MIN_LENS:
                strings = gnu_strings(path, n, e)
                hexed = " ".join(s.hex() for s in strings)
                rows.append(f"{rel}\t{name}\t{n}\t{len(strings)}\t{hexed}")
    with open(OUT, "w") as f:
        f.write("\n".join(rows) + "\n")
    print(f"wrote {OUT}: {len(rows) - 1} rows, {os.path.getsize(OUT)} bytes", file=sys.stderr)
    rows = [f"# {version} -t d; generated by tests/golden/generate_strings.py"] + offset_rows()
    with open(OFFSETS_OUT, "w") as f:
        f.write("\n".join(rows) + "\n")
    print(
        f"wrote {OFFSETS_OUT}: {len(rows) - 1} rows, {os.path.getsize(OFFSETS_OUT)} bytes",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
