#!/usr/bin/env python3
"""Builds tests/golden/pe/resources/: malformed resource directories (deterministically).

    python3 tests/pe/build_resource_cases.py [--check]

Each file is built/exe64_resources_gui.exe with its .rsrc section patched so
that pefile's resource reader (parse_resources_directory and what it calls)
raises one particular warning, or, for the loop and garbage cases, takes a
particular path. Python 3 standard library only; the PE helpers come from
build_corpus.py. tests/pe/expected_resource_warnings.py turns pefile's
warnings on these files into the expectations of crates/rustfx/src/pe/resources/tests.rs.

The base file's .rsrc: RVA 0x5000, 0x800 raw bytes at file offset 0xC00
(0x6F8 used), then .reloc (RVA 0x6000, raw 0x1400..0x1600 = end of file).
RVA 0x5800 is in no section and past the end of the file, so pefile cannot
fetch anything there: a version block whose string starts at 0x5800 makes
that string unreadable.
"""

import argparse
import random
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_corpus import OUT, Pe, det_bytes, p16, p32, u16, u32  # noqa: E402

BASE = OUT / "built" / "exe64_resources_gui.exe"
DEST = OUT / "resources"
RSRC_RVA = 0x5000
RSRC_END = 0x5800  # end of .rsrc's address range: unreadable from here
RT_STRING, RT_VERSION = 6, 16


def dword_align(offset, base):
    """pefile's dword_align: version blocks sit at these offsets from the
    resource's start."""
    return ((offset + base + 3) & 0xFFFFFFFC) - (base & 0xFFFFFFFC)


def utf16z(text):
    return text.encode("utf-16-le") + b"\0\0"


class Rsrc:
    """The patched file, addressed by offsets into .rsrc."""

    def __init__(self):
        self.p = Pe(BASE.read_bytes())
        sec = self.p.section_named(b".rsrc")
        assert sec["va"] == RSRC_RVA and sec["rawsize"] == 0x800, sec
        self.raw = sec["ptr"]
        rva, _ = self.p.dir(2)
        assert rva == RSRC_RVA

    def put(self, offset, data):
        at = self.raw + offset
        self.p.d[at:at + len(data)] = data

    def u32(self, offset):
        return u32(self.p.d, self.raw + offset)

    def p32(self, offset, value):
        p32(self.p.d, self.raw + offset, value)

    def p16(self, offset, value):
        p16(self.p.d, self.raw + offset, value)

    def clear(self):
        self.put(0, bytes(0x800))

    def directory(self, offset, ids, named=0):
        self.put(offset, struct.pack("<IIHHHH", 0, 0, 0, 0, named, ids))

    def entry(self, offset, name, target, is_dir):
        self.put(offset, struct.pack("<II", name, target | (0x80000000 if is_dir else 0)))

    def type_entry(self, type_id):
        """.rsrc offset of the root entry for a resource type."""
        for k in range(u16(self.p.d, self.raw + 14)):
            if self.u32(16 + 8 * k) == type_id:
                return 16 + 8 * k
        raise KeyError(type_id)

    def leaf(self, type_id):
        """.rsrc offsets of (the language entry, its data entry) under the
        type's first name (the tree is type / name / language)."""
        names = self.u32(self.type_entry(type_id) + 4) & 0x7FFFFFFF
        languages = self.u32(names + 16 + 4) & 0x7FFFFFFF
        language_entry = languages + 16
        return language_entry, self.u32(language_entry + 4)

    def bytes(self):
        return self.p.bytes()


def version_blob(base):
    """A small VS_VERSION_INFO laid out as pefile reads it for a resource at
    `base`, and the offsets where each block's string starts."""
    blob = bytearray()
    at = {}

    def block(name, offset, key, value=b"", value_length=0, kind=1):
        if len(blob) < offset:
            blob.extend(bytes(offset - len(blob)))
        at[name] = offset + 6
        blob[offset:] = struct.pack("<HHH", 0, value_length, kind) + utf16z(key)
        if value:
            value_offset = dword_align(len(blob), base)
            blob.extend(bytes(value_offset - len(blob)))
            at[name + "_value"] = value_offset
            blob.extend(value)
        return offset

    info = block("info", 0, "VS_VERSION_INFO", kind=0)
    fixed = dword_align(len(blob), base)
    blob.extend(bytes(fixed - len(blob)))
    blob.extend(struct.pack("<13I", 0xFEEF04BD, 0x10000, 0x10002, 0x30004, 0x10002, 0,
                            0x3F, 0, 0x40004, 1, 0, 0, 0))
    string_info = block("string_info", dword_align(len(blob), base), "StringFileInfo")
    table = block("table", dword_align(len(blob), base), "040904b0")
    string = block("string", dword_align(len(blob), base), "CompanyName",
                   utf16z("rustfx"), value_length=7)
    string_end = len(blob)
    var_info = block("var_info", dword_align(len(blob), base), "VarFileInfo")
    var = block("var", dword_align(len(blob), base), "Translation",
                struct.pack("<HH", 0x409, 1200), value_length=4, kind=0)
    # Lengths: each block reaches the end of what it contains.
    for offset, end in ((info, len(blob)), (string_info, string_end), (table, string_end),
                        (string, string_end), (var_info, len(blob)), (var, len(blob))):
        struct.pack_into("<H", blob, offset, end - offset)
    return blob, at


def version_cut_at(r, cut):
    """Puts a VS_VERSION_INFO at the end of .rsrc, cut where the string
    named `cut` starts, that string starting at RSRC_END; points RT_VERSION's
    data entry at it."""
    for residue in range(4):
        blob, at = version_blob(0x5700 + residue)
        base = RSRC_END - at[cut]
        if base % 4 == residue:
            break
    else:
        raise AssertionError(cut)
    blob = blob[:at[cut]]
    # The enclosing blocks end at the cut, so pefile's loops stop there.
    struct.pack_into("<H", blob, 0, len(blob))
    # Over the manifest's bytes (never parsed) and the free tail of .rsrc.
    assert base - RSRC_RVA >= 0x590, hex(base)
    r.put(base - RSRC_RVA, bytes(blob))
    _, data = r.leaf(RT_VERSION)
    r.p32(data, base)
    r.p32(data + 4, len(blob))


def cases():
    out = {}

    def case(name, patch):
        r = Rsrc()
        patch(r)
        data = r.bytes()
        assert len(data) < 64 * 1024
        out[f"exe64_res_{name}.exe"] = data

    # The directory itself.
    case("dir_rva_unreadable", lambda r: r.p.set_dir(2, 0x100000, 0x6F8))
    case("dir_truncated", lambda r: r.p.set_dir(2, RSRC_END - 8, 8))

    def depth(r):
        # 34 nested directories, each one entry pointing to the next.
        r.clear()
        for k in range(33):
            r.directory(24 * k, ids=1)
            r.entry(24 * k + 16, 1, 24 * (k + 1), True)
    case("depth_excessive", depth)

    case("dir_entries_huge", lambda r: r.put(12, struct.pack("<HH", 1, 0x1000)))

    def total_entries(r):
        # 9 root entries all leading to one directory that claims 4000
        # entries (its first points back at itself, which ends it quietly).
        r.clear()
        r.directory(0, ids=9)
        for k in range(9):
            r.entry(16 + 8 * k, k + 1, 0x100, True)
        r.directory(0x100, ids=4000)
        r.entry(0x110, 1, 0x100, True)
    case("total_entries_huge", total_entries)

    def entry_truncated(r):
        # A subdirectory in the last 20 bytes: its first entry is cut short.
        r.directory(0x7EC, ids=2)
        r.p32(r.type_entry(10) + 4, 0x800007EC)
    case("entry_truncated", entry_truncated)

    def loop_to_root(r):
        # A second-level entry pointing back at the root.
        r.p32(r.type_entry(RT_STRING) + 4, 0x80000700)
        r.directory(0x700, ids=1)
        r.entry(0x710, 1, 0, True)
    case("dir_loop_to_root", loop_to_root)

    # Entry names.
    def names_overlap(r):
        r.put(0x700, struct.pack("<H", 10) + "ABCDEFGHIJ".encode("utf-16-le"))
        r.p32(16, 0x80000700)
        r.p32(24, 0x80000704)
    case("names_overlap", names_overlap)

    def name_unrenderable(r):
        # A name whose length word is the last word of the file (in .reloc):
        # readable, but the characters after it are not.
        r.p32(r.type_entry(3), 0x80000000 | (0x61FE - RSRC_RVA))
        p16(r.p.d, len(r.p.d) - 2, 5)
    case("name_unrenderable", name_unrenderable)

    # Data entries.
    case("data_entry_unreadable",
         lambda r: r.p32(r.leaf(3)[0] + 4, 0x10000))
    case("data_entry_truncated",
         lambda r: r.p32(r.leaf(3)[0] + 4, 0x7F8))
    case("size_exceeds_file",
         lambda r: r.p32(r.leaf(3)[1] + 4, 0x100000))
    case("rt_string_unreadable",
         lambda r: r.p32(r.leaf(RT_STRING)[1], 0x100000))

    def rt_string_garbage(r):
        _, data = r.leaf(RT_STRING)
        r.put(r.u32(data) - RSRC_RVA, det_bytes("rt_string", r.u32(data + 4)))
    case("rt_string_garbage", rt_string_garbage)

    # Version information.
    case("version_offset_unreadable",
         lambda r: r.p32(r.leaf(RT_VERSION)[1], 0x100000))

    def version_key(text):
        def patch(r):
            _, data = r.leaf(RT_VERSION)
            r.put(r.u32(data) - RSRC_RVA + 6, text.encode("utf-16-le", "surrogatepass"))
        return patch
    case("version_key_invalid", version_key("XS_VERSION_INFO"))
    # Long, with characters ASCII cannot encode: pefile shows an excerpt.
    case("version_key_invalid_long", version_key("V\u00e9\u4e2d\ud800" * 30 + "\0"))

    def version_size(size):
        return lambda r: r.p32(r.leaf(RT_VERSION)[1] + 4, size)
    case("version_fixed_truncated", version_size(60))
    case("version_string_info_truncated", version_size(94))

    for name, cut in (("version_key_unreadable", "info"),
                      ("version_string_info_key_unreadable", "string_info"),
                      ("version_table_key_unreadable", "table"),
                      ("version_string_key_unreadable", "string"),
                      ("version_string_value_unreadable", "string_value"),
                      ("version_var_key_unreadable", "var")):
        case(name, lambda r, cut=cut: version_cut_at(r, cut))

    def version_near_4gib(r):
        # The last section moved to 0xFFFFF000 (its raw data overlapping
        # .rsrc) and the version resource at 0xFFFFFFC0: pefile's 32-bit
        # dword_align then gives negative offsets into the resource.
        reloc = r.p.section_named(b".reloc")
        p32(r.p.d, reloc["off"] + 8, 0x1000)  # VirtualSize
        p32(r.p.d, reloc["off"] + 12, 0xFFFFF000)
        p32(r.p.d, reloc["off"] + 16, 0x1200)  # SizeOfRawData
        p32(r.p.d, reloc["off"] + 20, 0x400)  # PointerToRawData
        r.p.set_dir(5, 0, 0)
        base = 0xFFFFFFC0
        blob, _ = version_blob(0)  # (base's layout goes negative at 92)
        at = 0x400 + base - 0xFFFFF000
        r.p.d[at:at + 92] = blob[:92]
        _, data = r.leaf(RT_VERSION)
        r.p32(data, base)
        r.p32(data + 4, 0x200)
    case("version_near_4gib", version_near_4gib)

    # Garbage: pseudo-random bytes over the version resource and over the
    # lower levels of the tree, to exercise pefile's paths at random.
    for seed in range(3):
        def version_garbage(r, seed=seed):
            # A few bytes of the StringFileInfo/VarFileInfo blocks changed.
            rng = random.Random(f"version{seed}")
            _, data = r.leaf(RT_VERSION)
            start, size = r.u32(data) - RSRC_RVA, r.u32(data + 4)
            for _ in range(6):
                r.put(start + rng.randrange(92, size), bytes([rng.randrange(256)]))
        case(f"version_garbage_{seed}", version_garbage)

        def tree_garbage(r, seed=seed):
            # Below the root: 24 slots of 16 bytes of noise, where each
            # slot's last word (a directory's entry counts, if one lands
            # there) stays small and half the other words point at a slot,
            # so the walk goes on for a while.
            rng = random.Random(f"tree{seed}")
            for slot in range(24):
                for word in range(4):
                    at = 0x40 + 16 * slot + 4 * word
                    if word == 3:
                        r.put(at, struct.pack("<HH", rng.randrange(3), rng.randrange(6)))
                    elif rng.randrange(2):
                        target = 0x40 + 16 * rng.randrange(24)
                        r.p32(at, target | (0x80000000 if rng.randrange(2) else 0))
                    else:
                        r.p32(at, rng.getrandbits(32))
        case(f"tree_garbage_{seed}", tree_garbage)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="rebuild in memory and compare with the committed files")
    args = ap.parse_args()
    files = cases()
    if args.check:
        bad = [n for n, d in sorted(files.items())
               if not (DEST / n).exists() or (DEST / n).read_bytes() != d]
        bad += [p.name for p in sorted(DEST.glob("*")) if p.name not in files]
        for n in bad:
            print(f"differs: {n}")
        print(f"{len(files)} files, {len(bad)} differences")
        sys.exit(1 if bad else 0)
    DEST.mkdir(parents=True, exist_ok=True)
    for p in DEST.glob("*"):
        p.unlink()
    for name, data in sorted(files.items()):
        (DEST / name).write_bytes(data)
    print(f"wrote {len(files)} files under {DEST}")


if __name__ == "__main__":
    main()
