#!/usr/bin/env python3
"""Builds the PE test corpus under tests/golden/pe/ (deterministically).

    python3 tests/pe/build_corpus.py [--launchers-from SITE_PACKAGES] [--check]

Needs the mingw-w64 cross compilers (Debian: gcc-mingw-w64-x86-64,
gcc-mingw-w64-i686, which bring windres and dlltool). Python 3 standard
library only; if pefile can be imported (e.g. run with the thrember venv), the
Rich headers it writes are checked with pefile.

Layout of tests/golden/pe/ (see tests/pe/README.md for one line per file):
  launchers/  real Windows launchers shipped in Python packages (pip's distlib
              and setuptools), deduplicated by sha256. They are committed and
              only (re)copied with --launchers-from SITE_PACKAGES.
  built/      small EXEs and DLLs compiled here from tests/pe/src/ (mingw,
              -O2 -s, mostly without the C runtime, no timestamps).
  derived/    well-formed variants of built/ files patched by this script
              (Rich header, overlay, entry point, section names, ...).
  malformed/  broken variants (truncations, bad header fields, import/export
              loops and garbage, corrupt Rich header, bad security directory).
  nonpe/      files that are not PEs at all.
  signed/     (not written here; Authenticode-signed files added separately).
This script deletes and rewrites built/, derived/, malformed/ and nonpe/ only.
With --check it builds into a temporary directory and compares with the
committed files instead (exit status 1 on a difference).
"""

import argparse
import hashlib
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
ROOT = HERE.parent.parent
OUT = ROOT / "tests" / "golden" / "pe"
GENERATED = ("built", "derived", "malformed", "nonpe")

ARCHES = {
    # name: (gcc prefix, C symbol prefix of the entry points)
    "64": ("x86_64-w64-mingw32-", ""),
    "32": ("i686-w64-mingw32-", "_"),
}
CFLAGS = ["-O2", "-s", "-fno-asynchronous-unwind-tables", "-fno-ident",
          "-Wl,--no-insert-timestamp", "-Wl,--major-os-version,6",
          "-Wl,--minor-os-version,0"]


# ----------------------------------------------------------------------------
# Building


def run(cmd, cwd):
    subprocess.run(cmd, cwd=cwd, check=True)


def tiny_icon():
    """A 16x16 1-bit .ico file (a diagonal cross), built here so that no
    binary source file is needed."""
    width = height = 16
    xor_rows = []
    for y in range(height):
        row = 0
        for x in range(width):
            if x == y or x == width - 1 - y:
                row |= 1 << (15 - x)
        xor_rows.append(struct.pack(">H", row) + b"\0\0")  # rows are 4-byte aligned
    and_rows = [b"\0\0\0\0"] * height
    bih = struct.pack("<IiiHHIIiiII", 40, width, height * 2, 1, 1, 0,
                      (len(xor_rows) + len(and_rows)) * 4, 0, 0, 2, 0)
    palette = struct.pack("<II", 0x00000000, 0x00FFFFFF)
    image = bih + palette + b"".join(reversed(xor_rows)) + b"".join(and_rows)
    header = struct.pack("<HHH", 0, 1, 1)
    entry = struct.pack("<BBBBHHII", width, height, 2, 0, 1, 1, len(image), 6 + 16)
    return header + entry + image


def build(tmp):
    """Compiles tests/pe/src into tmp; returns {name in built/: bytes}."""
    tmp = Path(tmp)
    for f in SRC.iterdir():
        shutil.copy(f, tmp / f.name)
    (tmp / "corpus.ico").write_bytes(tiny_icon())
    built = {}
    for bits, (prefix, us) in ARCHES.items():
        gcc = [prefix + "gcc"] + CFLAGS
        nocrt = ["-nostartfiles", f"-Wl,-e,{us}corpus_entry"]
        out = f"o{bits}"

        def cc(name, *args):
            run(gcc + ["-o", f"{out}_{name}", *args], tmp)
            built[name] = (tmp / f"{out}_{name}").read_bytes()

        dll_entry = f"{us}corpus_dll_entry" + ("@12" if bits == "32" else "")
        cc(f"dll{bits}_exports.dll", "-shared", "-nostartfiles", f"-Wl,-e,{dll_entry}",
           "corpus_dll.c", "corpus_dll.def")
        run([prefix + "dlltool", "-d", "corpus_dll.def", "-l", f"libcorpus{bits}.a"], tmp)
        cc(f"exe{bits}_imports.exe", *nocrt, "imports.c", f"libcorpus{bits}.a",
           "-lkernel32", "-luser32", "-ladvapi32", "-lws2_32")
        cc(f"exe{bits}_minimal.exe", *nocrt, "minimal.c")
        cc(f"exe{bits}_entry_in_second_section.exe", *nocrt, "entry_second.c")
        cc(f"exe{bits}_tls_callback.exe", "tls.c")
        run([prefix + "windres", "-O", "coff", "-o", f"res{bits}.o", "resources.rc"], tmp)
        cc(f"exe{bits}_resources_gui.exe", *nocrt, "-mwindows", "minimal.c", f"res{bits}.o")
        cc(f"exe{bits}_no_relocs.exe", *nocrt, "-Wl,--disable-dynamicbase",
           "-Wl,--disable-reloc-section", "minimal.c")
        cc(f"exe{bits}_debug_buildid.exe", *nocrt, "-Wl,--build-id=md5", "minimal.c")
    # Not stripped: a COFF symbol table (PointerToSymbolTable, NumberOfSymbols).
    run(["i686-w64-mingw32-gcc", "-O2", "-fno-ident", "-Wl,--no-insert-timestamp",
         "-nostartfiles", "-Wl,-e,_corpus_entry", "-o", "o32_syms.exe", "minimal.c"], tmp)
    built["exe32_coff_symbols.exe"] = (tmp / "o32_syms.exe").read_bytes()
    return built


# ----------------------------------------------------------------------------
# PE structure helpers (offsets into the file)


def u16(d, o):
    return struct.unpack_from("<H", d, o)[0]


def u32(d, o):
    return struct.unpack_from("<I", d, o)[0]


def p16(d, o, v):
    struct.pack_into("<H", d, o, v)


def p32(d, o, v):
    struct.pack_into("<I", d, o, v & 0xFFFFFFFF)


class Pe:
    def __init__(self, data):
        self.d = bytearray(data)

    @property
    def lfanew(self):
        return u32(self.d, 0x3C)

    @property
    def fh(self):  # IMAGE_FILE_HEADER
        return self.lfanew + 4

    @property
    def opt(self):  # IMAGE_OPTIONAL_HEADER
        return self.fh + 20

    @property
    def nsec(self):
        return u16(self.d, self.fh + 2)

    @property
    def pe32plus(self):
        return u16(self.d, self.opt) == 0x20B

    @property
    def dd(self):  # first IMAGE_DATA_DIRECTORY
        return self.opt + (112 if self.pe32plus else 96)

    @property
    def nrva_off(self):
        return self.dd - 4

    @property
    def sect(self):  # section table
        return self.opt + u16(self.d, self.fh + 16)

    def sec(self, i):
        return self.sect + 40 * i

    def sections(self):
        out = []
        for i in range(self.nsec):
            o = self.sec(i)
            out.append(dict(index=i, off=o, name=bytes(self.d[o:o + 8]),
                            vsize=u32(self.d, o + 8), va=u32(self.d, o + 12),
                            rawsize=u32(self.d, o + 16), ptr=u32(self.d, o + 20),
                            chars=u32(self.d, o + 36)))
        return out

    def section_named(self, name):
        for s in self.sections():
            if s["name"].rstrip(b"\0") == name:
                return s
        raise KeyError(name)

    def dir(self, i):
        return u32(self.d, self.dd + 8 * i), u32(self.d, self.dd + 8 * i + 4)

    def set_dir(self, i, rva, size):
        p32(self.d, self.dd + 8 * i, rva)
        p32(self.d, self.dd + 8 * i + 4, size)

    def off(self, rva):
        for s in self.sections():
            if s["va"] <= rva < s["va"] + max(s["vsize"], s["rawsize"]):
                return rva - s["va"] + s["ptr"]
        raise ValueError(hex(rva))

    @property
    def entry_off(self):
        return self.opt + 16

    @property
    def headers_end(self):
        return self.sect + 40 * self.nsec

    def bytes(self):
        return bytes(self.d)


def rol32(v, n):
    n &= 31
    return ((v << n) | (v >> (32 - n))) & 0xFFFFFFFF


def rich_checksum(dos_stub, pairs, start=0x80):
    """The checksum MSVC's linker stores as the Rich header's XOR key: the
    offset of "DanS", plus every byte of the DOS header and stub before it
    (skipping e_lfanew) rotated left by its offset, plus each comp_id rotated
    left by its count (mod 32)."""
    csum = start
    for i in range(start):
        if 0x3C <= i < 0x40:
            continue
        csum = (csum + rol32(dos_stub[i], i)) & 0xFFFFFFFF
    for comp_id, count in pairs:
        csum = (csum + rol32(comp_id, count)) & 0xFFFFFFFF
    return csum


RICH_PAIRS = [
    # (comp_id = product id << 16 | build, count), in the style of VS2019
    (0x01047A46, 7),   # Utc1900_C, build 31302
    (0x01057A46, 2),   # Utc1900_CPP
    (0x01037A46, 11),  # Masm1400
    (0x00010000, 42),  # unmarked objects (Import0)
    (0x01027A46, 1),   # Linker1400
]


def rich_blob(key, pairs, padding=(None, None, None), footer_key=None, odd=False):
    """DanS ^ key, three padding dwords (key ^ 0 each), the pairs XORed with
    key, "Rich", key. `padding` overrides the three stored padding dwords;
    `odd` drops the last dword of the pairs (an odd number of dwords)."""
    words = [0x536E6144 ^ key] + [key if p is None else p for p in padding]
    for comp_id, count in pairs:
        words += [comp_id ^ key, count ^ key]
    if odd:
        words = words[:-1]
    words += [0x68636952, key if footer_key is None else footer_key]
    return struct.pack(f"<{len(words)}I", *words)


def with_rich(data, pairs=RICH_PAIRS, key=None, **kw):
    """Writes a Rich header at 0x80, moving the PE headers (signature, file
    and optional headers, section table) up behind it and raising e_lfanew.
    Nothing else moves: section data starts at SizeOfHeaders, which still
    leaves room (checked)."""
    pe = Pe(data)
    if key is None:
        key = rich_checksum(pe.d, pairs)
    blob = rich_blob(key, pairs, **kw)
    new_lfanew = (0x80 + len(blob) + 15) & ~15
    old, end = pe.lfanew, pe.headers_end
    assert old == 0x80
    first_raw = min([s["ptr"] for s in pe.sections() if s["rawsize"]] +
                    [u32(pe.d, pe.opt + 60)])  # SizeOfHeaders
    assert end + new_lfanew - old <= first_raw, "no room for the Rich header"
    assert not any(pe.d[end:end + new_lfanew - old]), "headers gap is not empty"
    headers = bytes(pe.d[old:end])
    pe.d[old:end + new_lfanew - old] = bytes(end + new_lfanew - old - old)
    pe.d[new_lfanew:new_lfanew + len(headers)] = headers
    pe.d[0x80:0x80 + len(blob)] = blob
    p32(pe.d, 0x3C, new_lfanew)
    return pe.bytes()


def set_name(pe, section, name):
    assert len(name) <= 8
    pe.d[section["off"]:section["off"] + 8] = name.ljust(8, b"\0")


def det_bytes(seed, n):
    rng = random.Random(seed)
    return bytes(rng.randrange(256) for _ in range(n))


# ----------------------------------------------------------------------------
# Well-formed variants


def derived(b):
    out = {}
    exe64, exe32 = b["exe64_imports.exe"], b["exe32_imports.exe"]

    out["exe64_rich.exe"] = with_rich(exe64)
    out["exe32_rich.exe"] = with_rich(exe32, pairs=RICH_PAIRS[:3])
    out["dll64_rich.dll"] = with_rich(b["dll64_exports.dll"], pairs=RICH_PAIRS[1:])

    m64 = b["exe64_minimal.exe"]
    out["exe64_overlay.exe"] = m64 + b"OVERLAY!" + det_bytes("overlay", 1016)
    out["exe64_overlay_zeros.exe"] = m64 + bytes(4096)
    out["dll32_overlay_text.dll"] = (b["dll32_exports.dll"] +
                                     b"appended text overlay http://example.com/x\r\n" * 20)

    pe = Pe(m64)
    p32(pe.d, pe.entry_off, 0x00F00000)
    out["exe64_entry_outside_sections.exe"] = pe.bytes()

    pe = Pe(b["exe32_minimal.exe"])
    p32(pe.d, pe.entry_off, pe.section_named(b".rdata")["va"] + 4)
    out["exe32_entry_in_rdata.exe"] = pe.bytes()

    pe = Pe(b["dll64_exports.dll"])
    p32(pe.d, pe.entry_off, 0)
    out["dll64_entry_zero.dll"] = pe.bytes()

    pe = Pe(m64)
    p32(pe.d, pe.entry_off, u32(pe.d, pe.opt + 60) - 0x10)  # inside the headers
    out["exe64_entry_in_headers.exe"] = pe.bytes()

    # Section names.
    pe = Pe(m64)
    secs = pe.sections()
    set_name(pe, secs[0], b"")
    out["exe64_section_empty_name.exe"] = pe.bytes()
    pe = Pe(exe32)
    secs = pe.sections()
    names = [b"\xff\xfe.t\xe9xt", b".data\x80", b"\xe4\xb8\xad\xe6\x96\x87",
             b"ABCDEFGH"]
    for s, n in zip(secs, names):
        set_name(pe, s, n)
    out["exe32_section_names_nonascii.exe"] = pe.bytes()
    pe = Pe(m64)
    secs = pe.sections()
    for s, n in zip(secs, [b".textbss", b" .rdata ", b"UPX0", b".TEXT"]):
        set_name(pe, s, n)
    out["exe64_section_names_odd.exe"] = pe.bytes()
    pe = Pe(m64)
    for s in pe.sections():  # every section called .text
        set_name(pe, s, b".text")
    out["exe64_section_names_duplicate.exe"] = pe.bytes()

    # A .NET-like COM descriptor: an IMAGE_COR20_HEADER in the file alignment
    # slack of .rdata, and data directory 14 pointing at it.
    pe = Pe(m64)
    s = pe.section_named(b".rdata")
    start = (s["vsize"] + 15) & ~15
    assert start + 72 <= s["rawsize"]
    cor20 = struct.pack("<IHH", 72, 2, 5) + struct.pack("<II", s["va"] + start + 72, 0) + \
        struct.pack("<II", 1, 0x06000001) + bytes(48)
    pe.d[s["ptr"] + start:s["ptr"] + start + 72] = cor20
    p32(pe.d, s["off"] + 8, start + 72)
    pe.set_dir(14, s["va"] + start, 72)
    out["exe64_com_descriptor.exe"] = pe.bytes()

    # A non-zero TimeDateStamp (everything built here has 0).
    pe = Pe(exe32)
    p32(pe.d, pe.fh + 4, 0x5F5E1000)
    out["exe32_timestamp.exe"] = pe.bytes()
    return out


# ----------------------------------------------------------------------------
# Malformed variants


def malformed(b, d):
    out = {}
    exe64, exe32 = b["exe64_imports.exe"], b["exe32_imports.exe"]
    dll64 = b["dll64_exports.dll"]
    pe = Pe(exe64)
    s0 = pe.sections()[0]

    # Truncations.
    out["exe64_trunc_in_dos_header.exe"] = exe64[:0x20]
    out["exe64_trunc_at_dos_stub.exe"] = exe64[:0x40]
    out["exe64_trunc_in_pe_signature.exe"] = exe64[:pe.lfanew + 2]
    out["exe64_trunc_in_file_header.exe"] = exe64[:pe.fh + 10]
    out["exe64_trunc_in_optional_header.exe"] = exe64[:pe.opt + 40]
    out["exe64_trunc_in_data_directories.exe"] = exe64[:pe.dd + 8 * 5 + 4]
    out["exe64_trunc_in_section_table.exe"] = exe64[:pe.sect + 40 + 20]
    out["exe64_trunc_after_headers.exe"] = exe64[:pe.headers_end]
    out["exe64_trunc_mid_first_section.exe"] = exe64[:s0["ptr"] + s0["rawsize"] // 2]
    out["exe64_trunc_in_import_section.exe"] = exe64[:pe.off(pe.dir(1)[0]) + 30]
    pe32 = Pe(exe32)
    s1 = pe32.sections()[1]
    out["exe32_trunc_in_sections.exe"] = exe32[:s1["ptr"] + 7]
    out["exe32_trunc_last_byte.exe"] = exe32[:-1]
    pd = Pe(dll64)
    out["dll64_trunc_in_export_section.dll"] = dll64[:pd.off(pd.dir(0)[0]) + 0x30]

    # e_lfanew.
    for name, v in [("past_eof", len(exe64) + 0x100), ("huge", 0x7FFFFFF0),
                    ("negative", 0xFFFFFF00), ("zero", 0), ("in_stub", 0x40),
                    ("eof_minus_4", len(exe64) - 4)]:
        x = bytearray(exe64)
        p32(x, 0x3C, v)
        out[f"exe64_elfanew_{name}.exe"] = bytes(x)

    def patched(base, fn):
        p = Pe(base)
        fn(p)
        return p.bytes()

    # File header fields.
    out["exe64_nsections_ffff.exe"] = patched(exe64, lambda p: p16(p.d, p.fh + 2, 0xFFFF))
    out["exe64_nsections_zero.exe"] = patched(exe64, lambda p: p16(p.d, p.fh + 2, 0))
    out["exe32_nsections_97.exe"] = patched(exe32, lambda p: p16(p.d, p.fh + 2, 97))
    out["exe64_sizeofopt_zero.exe"] = patched(exe64, lambda p: p16(p.d, p.fh + 16, 0))
    out["exe64_sizeofopt_small.exe"] = patched(exe64, lambda p: p16(p.d, p.fh + 16, 0x60))
    out["exe64_sizeofopt_plus_40.exe"] = patched(
        exe64, lambda p: p16(p.d, p.fh + 16, u16(p.d, p.fh + 16) + 40))
    out["exe64_sizeofopt_ffff.exe"] = patched(exe64, lambda p: p16(p.d, p.fh + 16, 0xFFFF))
    out["exe32_sizeofopt_pe32plus_size.exe"] = patched(exe32, lambda p: p16(p.d, p.fh + 16, 0xF0))
    out["exe64_bad_optional_magic.exe"] = patched(exe64, lambda p: p16(p.d, p.opt, 0x0107))
    out["exe64_bad_pe_signature.exe"] = patched(exe64, lambda p: p32(p.d, p.lfanew, 0x00004550 ^ 0x01))
    out["exe64_machine_unknown.exe"] = patched(exe64, lambda p: p16(p.d, p.fh, 0xBEEF))

    # Optional header fields.
    out["exe64_nrva_ffff.exe"] = patched(exe64, lambda p: p32(p.d, p.nrva_off, 0xFFFF))
    out["exe64_nrva_zero.exe"] = patched(exe64, lambda p: p32(p.d, p.nrva_off, 0))
    out["exe64_nrva_20.exe"] = patched(exe64, lambda p: p32(p.d, p.nrva_off, 0x20))
    out["exe32_nrva_10.exe"] = patched(exe32, lambda p: p32(p.d, p.nrva_off, 10))
    # TLS (directory 9) is then the last directory, which thrember's
    # datadirectories group skips (its loop stops one entry early).
    out["exe32_nrva_10_tls_last.exe"] = patched(
        b["exe32_tls_callback.exe"], lambda p: p32(p.d, p.nrva_off, 10))
    # Directory 15 (reserved) set: skipped by thrember in the same way.
    out["exe64_reserved_dir_set.exe"] = patched(
        b["exe64_minimal.exe"], lambda p: p.set_dir(15, 0x1000, 0x10))
    out["exe64_file_alignment_zero.exe"] = patched(exe64, lambda p: p32(p.d, p.opt + 36, 0))
    out["exe64_section_alignment_odd.exe"] = patched(exe64, lambda p: p32(p.d, p.opt + 32, 0x1001))
    out["exe64_sizeofimage_small.exe"] = patched(exe64, lambda p: p32(p.d, p.opt + 56, 0x1000))
    out["exe64_sizeofheaders_huge.exe"] = patched(exe64, lambda p: p32(p.d, p.opt + 60, 0x7FFFFFFF))

    # Section table.
    out["exe64_section_ptr_past_eof.exe"] = patched(
        exe64, lambda p: p32(p.d, p.sec(0) + 20, 0x00100000))
    out["exe64_section_rawsize_huge.exe"] = patched(
        exe64, lambda p: p32(p.d, p.sec(0) + 16, 0x7FFFFFFF))
    out["exe64_section_rawsize_ffffffff.exe"] = patched(
        exe64, lambda p: p32(p.d, p.sec(1) + 16, 0xFFFFFFFF))
    out["exe64_section_vsize_zero.exe"] = patched(exe64, lambda p: p32(p.d, p.sec(0) + 8, 0))
    out["exe64_section_vsize_huge.exe"] = patched(exe64, lambda p: p32(p.d, p.sec(0) + 8, 0x7FFFFFFF))
    out["exe64_section_overlapping.exe"] = patched(
        exe64, lambda p: (p32(p.d, p.sec(1) + 12, u32(p.d, p.sec(0) + 12)),
                          p32(p.d, p.sec(1) + 20, u32(p.d, p.sec(0) + 20))))
    out["exe64_section_ptr_unaligned.exe"] = patched(
        exe64, lambda p: p32(p.d, p.sec(0) + 20, u32(p.d, p.sec(0) + 20) + 3))

    # Import directory.
    out["exe64_imports_rva_past_eof.exe"] = patched(
        exe64, lambda p: p.set_dir(1, 0x00F00000, 0x64))
    out["exe64_imports_rva_in_bss.exe"] = patched(
        exe64, lambda p: p.set_dir(1, p.section_named(b".bss")["va"], 0x64))
    out["exe32_imports_size_zero.exe"] = patched(exe32, lambda p: p.set_dir(1, p.dir(1)[0], 0))

    def thunk_self_loop(p):
        # The first descriptor's OriginalFirstThunk points at the descriptor
        # table itself, so its "thunks" are descriptor fields.
        rva = p.dir(1)[0]
        p32(p.d, p.off(rva), rva)
    out["exe64_imports_thunk_self_loop.exe"] = patched(exe64, thunk_self_loop)

    def descriptors_unterminated(p):
        # Overwrites the import descriptor table's terminator and the rest of
        # the section with copies of the first descriptor: the chain never ends
        # and keeps pointing back at the same thunks.
        rva, _ = p.dir(1)
        o = p.off(rva)
        s = p.section_named(b".idata")
        first = bytes(p.d[o:o + 20])
        n = 0
        while u32(p.d, o + 20 * n + 12):  # Name of the descriptor
            n += 1
        end = s["ptr"] + s["rawsize"]
        pos = o + 20 * n
        while pos + 20 <= end:
            p.d[pos:pos + 20] = first
            pos += 20
        p32(p.d, s["off"] + 8, s["rawsize"])
    out["exe64_imports_descriptors_unterminated.exe"] = patched(exe64, descriptors_unterminated)

    def thunk_to_itself(p):
        # The first thunk's hint/name RVA points at the thunk itself.
        rva, _ = p.dir(1)
        o = p.off(rva)
        oft = u32(p.d, o)
        struct.pack_into("<Q", p.d, p.off(oft), oft)
    out["exe64_imports_hintname_points_to_thunk.exe"] = patched(exe64, thunk_to_itself)

    def dll_name_garbage(p):
        rva, _ = p.dir(1)
        o = p.off(rva)
        p32(p.d, o + 12, p.sections()[0]["va"])  # DLL name is machine code
        p32(p.d, o + 20 + 12, 0x7FFF0000)        # and one past the image
    out["exe64_imports_dll_name_garbage.exe"] = patched(exe64, dll_name_garbage)

    def import_name_garbage(p):
        rva, _ = p.dir(1)
        o = p.off(rva)
        oft = u32(p.d, o)
        struct.pack_into("<Q", p.d, p.off(oft), p.sections()[0]["va"] + 1)
        oft2 = u32(p.d, o + 20)
        struct.pack_into("<Q", p.d, p.off(oft2), 0x7FFF0000)
    out["exe64_imports_func_name_garbage.exe"] = patched(exe64, import_name_garbage)

    def import_ordinal_flag_32(p):
        # 32-bit thunks with the ordinal flag and a huge ordinal value.
        rva, _ = p.dir(1)
        o = p.off(rva)
        oft = u32(p.d, o)
        p32(p.d, p.off(oft), 0x8000FFFF)
    out["exe32_imports_ordinal_ffff.exe"] = patched(exe32, import_ordinal_flag_32)

    # Export directory.
    def exports_huge_counts(p):
        o = p.off(p.dir(0)[0])
        p32(p.d, o + 20, 0x7FFFFFFF)  # NumberOfFunctions
        p32(p.d, o + 24, 0x7FFFFFFF)  # NumberOfNames
    out["dll64_exports_huge_counts.dll"] = patched(dll64, exports_huge_counts)

    def exports_huge_names_only(p):
        o = p.off(p.dir(0)[0])
        p32(p.d, o + 24, 0xFFFF)
    out["dll64_exports_huge_number_of_names.dll"] = patched(dll64, exports_huge_names_only)

    def exports_name_garbage(p):
        o = p.off(p.dir(0)[0])
        names = p.off(u32(p.d, o + 32))  # AddressOfNames
        p32(p.d, names, p.sections()[0]["va"] + 2)  # a name in machine code
        p32(p.d, names + 4, 0x7FFF0000)              # a name past the image
    out["dll64_exports_name_rva_garbage.dll"] = patched(dll64, exports_name_garbage)

    def exports_tables_past_eof(p):
        o = p.off(p.dir(0)[0])
        p32(p.d, o + 28, 0x00F00000)  # AddressOfFunctions
        p32(p.d, o + 36, 0x00F00010)  # AddressOfNameOrdinals
    out["dll64_exports_tables_past_eof.dll"] = patched(dll64, exports_tables_past_eof)

    def exports_dll_name_garbage(p):
        o = p.off(p.dir(0)[0])
        p32(p.d, o + 12, 0x7FFF0000)
    out["dll64_exports_dll_name_past_image.dll"] = patched(dll64, exports_dll_name_garbage)

    def exports_ordinal_base_huge(p):
        o = p.off(p.dir(0)[0])
        p32(p.d, o + 16, 0xFFFFFFF0)  # Base
    out["dll64_exports_ordinal_base_huge.dll"] = patched(dll64, exports_ordinal_base_huge)

    def exports_dir_past_eof(p):
        p.set_dir(0, 0x00F00000, 0x100)
    out["dll64_exports_rva_past_eof.dll"] = patched(dll64, exports_dir_past_eof)

    # Rich header.
    key = rich_checksum(Pe(exe64).d, RICH_PAIRS)
    out["exe64_rich_bad_checksum.exe"] = with_rich(exe64, key=key ^ 0x00010001)
    out["exe64_rich_bad_padding.exe"] = with_rich(exe64, padding=(None, 0x12345678, None))
    out["exe64_rich_odd_length.exe"] = with_rich(exe64, odd=True)
    out["exe64_rich_no_pairs.exe"] = with_rich(exe64, pairs=[])
    x = bytearray(d["exe64_rich.exe"])
    x[0x80:0x84] = b"XXXX"  # DanS destroyed
    out["exe64_rich_no_dans.exe"] = bytes(x)
    x = bytearray(d["exe64_rich.exe"])
    rich_at = x.find(b"Rich", 0x80)
    x[rich_at + 4:rich_at + 8] = bytes(4)  # key after "Rich" zeroed
    out["exe64_rich_footer_key_zero.exe"] = bytes(x)

    # Security directory (its "RVA" is a file offset).
    out["exe64_security_past_eof.exe"] = patched(
        exe64, lambda p: p.set_dir(4, len(exe64) + 0x1000, 0x200))

    def security_zeros(p):
        p.set_dir(4, len(exe64), 0x200)
        p.d += bytes(0x200)
    out["exe64_security_zero_filled.exe"] = patched(exe64, security_zeros)

    def security_garbage(p):
        blob = struct.pack("<IHH", 0x100, 0x0200, 0x0002) + det_bytes("cert", 0x100 - 8)
        p.set_dir(4, len(exe64), len(blob))
        p.d += blob
    out["exe64_security_garbage_pkcs7.exe"] = patched(exe64, security_garbage)

    # Other directories.
    out["exe64_reloc_dir_garbage.exe"] = patched(
        b["exe64_minimal.exe"], lambda p: p.set_dir(5, p.sections()[0]["va"], 0x40))
    out["exe64_resource_dir_loop.exe"] = patched(
        b["exe64_resources_gui.exe"], resource_loop)
    out["exe64_tls_dir_garbage.exe"] = patched(
        b["exe64_tls_callback.exe"], lambda p: p.set_dir(9, p.sections()[0]["va"] + 8, 0x28))
    out["exe64_debug_dir_garbage.exe"] = patched(
        b["exe64_debug_buildid.exe"], lambda p: p.set_dir(6, p.dir(6)[0], 0xFFFF0))
    out["exe64_load_config_past_eof.exe"] = patched(
        exe64, lambda p: p.set_dir(10, 0x00F00000, 0x140))
    out["exe64_delay_import_garbage.exe"] = patched(
        exe64, lambda p: p.set_dir(13, p.sections()[0]["va"], 0x40))
    return out


def resource_loop(p):
    """The root resource directory's first entry points back at the root
    (a subdirectory offset of 0)."""
    o = p.off(p.dir(2)[0])
    named, ids = u16(p.d, o + 12), u16(p.d, o + 14)
    assert named + ids > 0
    p32(p.d, o + 16 + 4, 0x80000000)


def nonpe():
    out = {}
    out["empty.bin"] = b""
    out["mz_only.bin"] = b"MZ"
    out["mz_3_bytes.bin"] = b"MZ\x90"
    out["dos_header_only.exe"] = b"MZ" + bytes(0x3E)
    out["dos_header_lfanew_40.exe"] = b"MZ" + bytes(0x3A) + struct.pack("<I", 0x40)
    out["pe_signature_only.exe"] = b"MZ" + bytes(0x3A) + struct.pack("<I", 0x40) + b"PE\0\0"
    out["text.txt"] = (b"This is a plain text file, not a PE.\r\n"
                       b"MZ appears here but not at the start. http://example.com\r\n") * 8
    elf = bytearray(b"\x7fELF\x02\x01\x01" + bytes(9))
    elf += struct.pack("<HHIQQQIHHHHHH", 2, 0x3E, 1, 0x401000, 64, 0, 0, 64, 56, 0, 64, 0, 0)
    out["elf_header.bin"] = bytes(elf) + bytes(64)
    out["random_4096.bin"] = det_bytes("random", 4096)
    out["zeros_1024.bin"] = bytes(1024)
    return out


# ----------------------------------------------------------------------------


def check_rich(files):
    try:
        import pefile
    except ImportError:
        print("pefile not importable: Rich headers not checked", file=sys.stderr)
        return
    for name in ("derived/exe64_rich.exe", "derived/exe32_rich.exe", "derived/dll64_rich.dll"):
        pe = pefile.PE(data=files[name])
        values = pe.RICH_HEADER.values
        pairs = [(values[i], values[i + 1]) for i in range(0, len(values), 2)]
        assert pairs == (RICH_PAIRS if "exe64" in name else
                         RICH_PAIRS[:3] if "exe32" in name else RICH_PAIRS[1:]), (name, pairs)
        assert not any("Rich" in w for w in pe.get_warnings()), pe.get_warnings()
        pe.close()
    # The checksum algorithm, checked on the real (MSVC-linked) launchers.
    for path in sorted((OUT / "launchers").glob("*.exe")):
        data = path.read_bytes()
        pe = pefile.PE(data=data)
        if pe.RICH_HEADER is None:
            continue
        values = pe.RICH_HEADER.values
        pairs = [(values[i], values[i + 1]) for i in range(0, len(values), 2)]
        assert pe.RICH_HEADER.checksum == rich_checksum(data, pairs), path
        pe.close()


def all_files():
    with tempfile.TemporaryDirectory() as tmp:
        b = build(tmp)
    d = derived(b)
    files = {}
    files.update({f"built/{k}": v for k, v in b.items()})
    files.update({f"derived/{k}": v for k, v in d.items()})
    files.update({f"malformed/{k}": v for k, v in malformed(b, d).items()})
    files.update({f"nonpe/{k}": v for k, v in nonpe().items()})
    return files


def copy_launchers(site_packages):
    site = Path(site_packages)
    sources = sorted(site.glob("pip/_vendor/distlib/*.exe")) + sorted(site.glob("setuptools/*.exe"))
    seen = {}
    dest = OUT / "launchers"
    dest.mkdir(parents=True, exist_ok=True)
    for f in sources:
        data = f.read_bytes()
        h = hashlib.sha256(data).hexdigest()
        if h in seen:
            print(f"skip {f} (same as {seen[h]})")
            continue
        pkg = "distlib" if "distlib" in f.parts else "setuptools"
        name = f"{pkg}_{f.name}"
        seen[h] = name
        (dest / name).write_bytes(data)
        print(f"launchers/{name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--launchers-from", metavar="SITE_PACKAGES",
                    help="(re)copy the launchers from this site-packages directory")
    ap.add_argument("--check", action="store_true",
                    help="rebuild in memory and compare with the committed files")
    args = ap.parse_args()
    files = all_files()
    check_rich(files)
    if args.check:
        bad = 0
        for rel, data in sorted(files.items()):
            p = OUT / rel
            if not p.exists() or p.read_bytes() != data:
                print(f"differs: {rel}")
                bad += 1
        for sub in GENERATED:
            for p in sorted((OUT / sub).glob("*")):
                if f"{sub}/{p.name}" not in files:
                    print(f"extra: {sub}/{p.name}")
                    bad += 1
        print(f"{len(files)} files, {bad} differences")
        sys.exit(1 if bad else 0)
    if args.launchers_from:
        copy_launchers(args.launchers_from)
    for sub in GENERATED:
        shutil.rmtree(OUT / sub, ignore_errors=True)
        (OUT / sub).mkdir(parents=True)
    total = 0
    for rel, data in sorted(files.items()):
        (OUT / rel).write_bytes(data)
        total += len(data)
    print(f"wrote {len(files)} files, {total} bytes, under {OUT}")


if __name__ == "__main__":
    main()
