"""Writes tests/golden/pe/directories/: small malformed (and a few valid)
variants of the corpus's minimal EXEs that exercise pefile's debug, base
relocation, TLS, load config (dynamic relocations), delay import, bound
import and exception directory readers, one file per warning (or crash)
they can raise.

    python3 tests/pe/build_directory_cases.py [--check]

With --check it compares with the committed files instead of writing them
(exit status 1 on a difference).

Standard library only, deterministic; the bases are the committed
tests/golden/pe/built/exe{32,64}_minimal.exe. Most cases add a last
section ".test" (at the next free RVA, its raw data at the end of the file,
VirtualSize 0x1000 larger than its raw data) holding the structures, so a
read that runs past the raw data gets short data rather than an error, as
in pefile. pefile's verdict on each file: expected_directory_warnings.py.
"""

import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_corpus import OUT, Pe, p16, p32, u16, u32  # noqa: E402

BUILT = OUT / "built"
DEST = OUT / "directories"
EXE64 = (BUILT / "exe64_minimal.exe").read_bytes()
EXE32 = (BUILT / "exe32_minimal.exe").read_bytes()

DEBUG, BASERELOC, TLS, LOAD_CONFIG, BOUND_IMPORT, DELAY_IMPORT, EXCEPTION = 6, 5, 9, 10, 11, 13, 3
PAST_EOF = 0x00F00000  # an RVA in no section and past the end of the file
RAW = 0x200  # the raw size of the added section


def align(v, a):
    return (v + a - 1) // a * a


def test_section(base):
    """(Pe with an empty .test section appended, its RVA, its file offset)."""
    p = Pe(base)
    last = p.sections()[-1]
    va = align(last["va"] + max(last["vsize"], last["rawsize"]), 0x1000)
    ptr = len(p.d)
    assert ptr % 0x200 == 0
    o = p.sec(p.nsec)
    assert o + 40 <= min(s["ptr"] for s in p.sections())
    p.d[o:o + 40] = struct.pack("<8sIIIIIIHHI", b".test", RAW + 0x1000, va, RAW, ptr,
                                0, 0, 0, 0, 0x40000040)
    p16(p.d, p.fh + 2, p.nsec + 1)
    p32(p.d, p.opt + 56, align(va + RAW + 0x1000, 0x1000))  # SizeOfImage
    p.d += bytes(RAW)
    return p, va, ptr


def put(p, ptr, at, blob):
    """Writes blob at offset `at` of the .test section (negative: from its end)."""
    if at < 0:
        at += RAW
    assert 0 <= at and at + len(blob) <= RAW
    p.d[ptr + at:ptr + at + len(blob)] = blob
    return at


def with_blob(base, dir_index, blob, at=0, size=None, va_fixup=None):
    """base with blob in .test at `at` and directory dir_index pointing there."""
    p, va, ptr = test_section(base)
    at = put(p, ptr, at, blob(va + (at % RAW)) if callable(blob) else blob)
    p.set_dir(dir_index, va + at, len(blob) if size is None else size)
    return p.bytes()


def patched(base, fn):
    p = Pe(base)
    fn(p)
    return p.bytes()


def debug_entry(kind, size, pointer):
    return struct.pack("<IIHHIIII", 0, 0, 0, 0, kind, size, 0, pointer)


def debug_cases(out):
    out["debug_dir_past_eof.exe"] = patched(EXE64, lambda p: p.set_dir(DEBUG, PAST_EOF, 28))
    out["debug_entry_truncated.exe"] = with_blob(EXE64, DEBUG, bytes(10), at=-10, size=28)
    n = len(EXE64) + RAW  # file size with .test
    # Each payload ends the file, shorter than its entry's SizeOfData says.
    for name, kind, payload in [
        ("debug_codeview_rsds_truncated.exe", 2, b"RSDS" + bytes(20) + b"a.pdb"),
        ("debug_codeview_nb10_truncated.exe", 2, b"NB10" + bytes(12) + b"a.pdb"),
        ("debug_misc_truncated.exe", 4, bytes(8)),
        ("debug_ex_dllcharacteristics_empty.exe", 20, b""),
    ]:
        p, va, ptr = test_section(EXE64)
        put(p, ptr, 0, debug_entry(kind, len(payload) + 0x20, n - len(payload)))
        if payload:
            put(p, ptr, -len(payload), payload)
        p.set_dir(DEBUG, va, 28)
        out[name] = p.bytes()
    # A misc entry whose data is whole but whose Unicode flag is 2: not read further.
    p, va, ptr = test_section(EXE64)
    put(p, ptr, 0, debug_entry(4, 0x20, n - 0x10))
    put(p, ptr, -0x10, struct.pack("<IIBBH", 1, 0x20, 2, 0, 0))
    p.set_dir(DEBUG, va, 28)
    out["debug_misc_unicode_2_truncated.exe"] = p.bytes()


def reloc_block(page, words, fmt="<H"):
    body = b"".join(struct.pack(fmt, w) for w in words)
    return struct.pack("<II", page, 8 + len(body)) + body


def reloc_cases(out):
    block = reloc_block(0x1000, [0xA010, 0xA020, 0xA010, 0])
    out["reloc_overlapping_entries.exe"] = with_blob(EXE64, BASERELOC, block)
    # Same offset, different types: not overlapping for pefile.
    block = reloc_block(0x1000, [0xA010, 0x3010])
    out["reloc_same_offset_other_type.exe"] = with_blob(EXE64, BASERELOC, block)

    def header_at_eof(p):
        # A block header in the last 8 bytes of the file, outside every
        # section: its entries start at the end of the file.
        at = len(p.d) - 8
        p.d[at:] = struct.pack("<II", 0x1000, 0x10)
        p.set_dir(BASERELOC, at, 0x10)
    out["reloc_entries_past_eof.exe"] = patched(EXE64, header_at_eof)


def tls_cases(out):
    out["tls_dir_past_eof.exe"] = patched(EXE64, lambda p: p.set_dir(TLS, PAST_EOF, 0x28))
    out["tls_dir_truncated.exe"] = with_blob(EXE64, TLS, bytes(12), at=-12, size=0x28)


# Field sizes of pefile's IMAGE_LOAD_CONFIG_DIRECTORY64 format.
LC64 = [4, 4, 2, 2, 4, 4, 4, 8, 8, 8, 8, 8, 8, 4, 2, 2, 8, 8, 8, 8, 8, 8, 8, 8, 4, 2, 2, 4,
        4, 8, 8, 8, 8, 8, 8, 8, 8, 4, 2, 2, 8, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 8]
DVRT_OFFSET = sum(LC64[:37])  # DynamicValueRelocTableOffset, then ...Section


def load_config(table_offset, table_section, size=sum(LC64)):
    lc = bytearray(sum(LC64))
    p32(lc, 0, size)
    p32(lc, DVRT_OFFSET, table_offset)
    p16(lc, DVRT_OFFSET + 4, table_section)
    return bytes(lc)


def dynamic_table(version, entries):
    """IMAGE_DYNAMIC_RELOCATION_TABLE with (symbol, payload) entries (PE32+)."""
    body = b"".join(struct.pack("<QI", s, len(d)) + d for s, d in entries)
    return struct.pack("<II", version, len(body)) + body


def with_load_config(name, out, table=None, table_at=0x180, offset=None, size=sum(LC64),
                     declared_table_size=None):
    """exe64 with a load config at .test+0 whose dynamic relocation table
    (bytes `table`) is at .test+table_at (negative: from the end)."""
    p, va, ptr = test_section(EXE64)
    section = p.nsec  # .test is the last by RVA (1-based number)
    if table is not None:
        at = put(p, ptr, table_at, table)
        if declared_table_size is not None:
            p32(p.d, ptr + at + 4, declared_table_size)
    else:
        at = table_at
    put(p, ptr, 0, load_config(at if offset is None else offset, section, size))
    p.set_dir(LOAD_CONFIG, va, sum(LC64))
    out[name] = p.bytes()


def function_override(rvas, block, bdd_entries, bdd_size=None):
    info = struct.pack("<IIII", 0x1000, 0, 4 * len(rvas), len(block))
    funcs = info + b"".join(struct.pack("<I", r) for r in rvas) + block
    bdd = b"".join(struct.pack("<HHI", *e) for e in bdd_entries)
    return (struct.pack("<I", len(funcs)) + funcs
            + struct.pack("<II", 1, 8 * len(bdd_entries) if bdd_size is None else bdd_size) + bdd)


def load_config_cases(out):
    import_control = reloc_block(0x1000, [0x10, 0x20], "<I")
    with_load_config("load_config_dynamic_relocs_v1.exe", out,
                     dynamic_table(1, [(3, import_control)]))
    # Two entries with the same page offset (0x010) in the 16-bit bitfield format.
    indirect = reloc_block(0x1000, [0x1010, 0x2010])
    with_load_config("load_config_dynamic_relocs_overlapping.exe", out,
                     dynamic_table(1, [(4, indirect)]))
    with_load_config("load_config_dynamic_relocs_v2.exe", out,
                     dynamic_table(2, [(3, import_control)]))
    with_load_config("load_config_dynamic_table_past_eof.exe", out, None, offset=PAST_EOF)
    with_load_config("load_config_dynamic_table_truncated.exe", out, b"\x01\0\0", table_at=-3)
    # A table header that says more than there is: the next entry is short.
    with_load_config("load_config_dynamic_entry_truncated.exe", out,
                     dynamic_table(1, [(3, import_control)]) + bytes(6), table_at=-(8 + 12 + len(import_control) + 6),
                     declared_table_size=12 + len(import_control) + 12)
    valid = function_override([0x1010], reloc_block(0x1000, [0xA010, 0]), [(0, 1, 0x1000)])
    with_load_config("load_config_function_override.exe", out, dynamic_table(1, [(7, valid)]))
    # Function override data cut short at each of its parts (at the end of
    # .test's raw data).
    for name, payload in [
        ("header", b""),
        ("info", struct.pack("<I", 16)),
        ("bdd_info", struct.pack("<I", 0)),
        ("bdd_relocation", struct.pack("<III", 0, 1, 16) + bytes(8)),
        ("rvas", struct.pack("<IIIII", 20, 0x1000, 0, 8, 0) + bytes(4)),
    ]:
        table = dynamic_table(1, [(7, payload)])
        with_load_config(f"load_config_function_override_no_{name}.exe", out, table,
                         table_at=-len(table), declared_table_size=0x100)
    # Size covering 36 fields: pefile then reads fields it did not unpack.
    with_load_config("load_config_size_36_fields.exe", out,
                     dynamic_table(1, [(3, import_control)]), size=sum(LC64[:36]))

    def bad_magic(p):
        p16(p.d, p.opt, 0x10C)
        p.set_dir(LOAD_CONFIG, 0x3000, 0x40)
    out["load_config_bad_magic.exe"] = patched(EXE32, bad_magic)


IMAGE_BASE32 = 0x400000


def delay_descriptor(attributes, name, iat, int_):
    return struct.pack("<8I", attributes, name, 0, iat, int_, 0, 0, 0)


def delay_imports(thunks, attributes=1, as_va=False, count=1, names=True):
    """A blob builder: `count` descriptors sharing one DLL name and one
    thunk table; thunk values are hint/name RVAs (if names) or given."""
    def build(va):
        base = IMAGE_BASE32 if as_va else 0
        d_size = 32 * (count + 1)
        name_rva = va + d_size
        hint_rva = name_rva + 16
        table_rva = hint_rva + 16
        table = b"".join(struct.pack("<I", (base + hint_rva) if t is None else t) for t in thunks)
        table += bytes(4)
        descriptors = b"".join(delay_descriptor(attributes, base + name_rva, base + table_rva,
                                                base + table_rva) for _ in range(count))
        return (descriptors + bytes(32) + b"corpus.dll".ljust(16, b"\0")
                + b"\0\0GetTickCount".ljust(16, b"\0") + table)
    return build


def delay_cases(out):
    out["delay_import_past_eof.exe"] = patched(EXE32, lambda p: p.set_dir(DELAY_IMPORT, PAST_EOF, 0x40))
    out["delay_import_valid.exe"] = with_blob(EXE32, DELAY_IMPORT, delay_imports([None]), size=0x40)
    out["delay_import_old_style_vas.exe"] = with_blob(
        EXE32, DELAY_IMPORT, delay_imports([None], attributes=0, as_va=True), size=0x40)
    # A thunk holding the image base itself normalizes to 0: "Invalid entries".
    out["delay_import_thunk_at_image_base.exe"] = with_blob(
        EXE32, DELAY_IMPORT, delay_imports([IMAGE_BASE32], attributes=0, as_va=True), size=0x40)

    def empty_tables(va):
        return b"".join(delay_descriptor(1, va + 0x200 - 16, 0, 0) for _ in range(8)) + bytes(32)
    out["delay_import_too_many_errors.exe"] = with_blob(EXE32, DELAY_IMPORT, empty_tables, size=0x40)
    out["delay_import_descriptor_truncated.exe"] = with_blob(
        EXE32, DELAY_IMPORT, struct.pack("<4I", 1, 0x5000, 0, 0x5000), at=-16, size=0x40)

    def many(p):
        # One descriptor whose table holds 8200 ordinals (past pefile's
        # 0x2000 import symbols), in an enlarged .test section.
        thunks = [0x80000000 | (1 + i % 0xFFFE) for i in range(8200)]
        blob = delay_imports(thunks, names=False)
        va = 0x6000
        data = blob(va)
        o = p.sec(p.nsec - 1)
        raw = align(len(data), 0x200)
        p32(p.d, o + 8, raw + 0x1000)
        p32(p.d, o + 16, raw)
        p32(p.d, p.opt + 56, align(va + raw + 0x1000, 0x1000))
        del p.d[u32(p.d, o + 20):]
        p.d += data + bytes(raw - len(data))
        p.set_dir(DELAY_IMPORT, va, 0x40)
    p, _, _ = test_section(EXE32)
    many(p)
    out["delay_import_too_many_symbols.exe"] = p.bytes()


def bound_cases(out):
    out["bound_import_past_eof.exe"] = patched(
        EXE64, lambda p: p.set_dir(BOUND_IMPORT, len(EXE64) + 0x100, 8))

    def in_overlay(p):
        at = len(p.d)
        p.d += struct.pack("<IHH", 1, 16, 0) + bytes(8) + b"KERNEL32.dll\0".ljust(16, b"\0")
        p.set_dir(BOUND_IMPORT, at, 16)
    out["bound_import_in_overlay.exe"] = patched(EXE64, in_overlay)

    def in_headers(p):
        # Descriptor, one forwarder ref, terminator, names, in the header
        # padding after the section table.
        at = p.headers_end + 8
        names = b"KERNEL32.dll\0ntdll.dll\0"
        blob = (struct.pack("<IHH", 1, 24, 1) + struct.pack("<IHH", 1, 37, 0) + bytes(8) + names)
        p.d[at:at + len(blob)] = blob
        p.set_dir(BOUND_IMPORT, at, 24)
    out["bound_import_in_headers.exe"] = patched(EXE64, in_headers)


def runtime_function(begin, unwind):
    return struct.pack("<III", begin, begin + 0x10, unwind)


def unwind_info(version, codes, flags=0, extra=None):
    """codes: (offset, op, info) slots (raw two-byte slots)."""
    body = bytes([version | flags << 3, 0, len(codes), 0])
    body += b"".join(bytes([o, op | info << 4]) for o, op, info in codes)
    if len(codes) % 2:
        body += bytes(2)
    if flags:
        body += struct.pack("<I", extra or 0)
    return body


def with_unwind(name, out, functions, infos):
    """functions: (begin, info index or raw UnwindData); infos: blobs at 0x100 on."""
    def build(va):
        table = b""
        at = 0x100
        offsets = []
        for info in infos:
            offsets.append(va + at)
            at += align(len(info), 4)
        for begin, which in functions:
            table += runtime_function(begin, offsets[which] if isinstance(which, int) and which < len(infos) else which)
        blob = table.ljust(0x100, b"\0")
        for info in infos:
            blob += info.ljust(align(len(info), 4), b"\0")
        return blob
    p, va, ptr = test_section(EXE64)
    blob = build(va)
    put(p, ptr, 0, blob)
    p.set_dir(EXCEPTION, va, 12 * len(functions))
    out[name] = p.bytes()


def exception_cases(out):
    ok = unwind_info(1, [(4, 0, 3)])
    with_unwind("unwind_unknown_code.exe", out, [(0x1000, 0)], [unwind_info(1, [(4, 7, 0)])])
    with_unwind("unwind_unknown_code_after_epilogs.exe", out, [(0x1000, 0)],
                [unwind_info(2, [(2, 6, 1), (3, 6, 0), (4, 7, 0)])])
    with_unwind("unwind_version_3.exe", out, [(0x1000, 0)], [unwind_info(3, [])])
    with_unwind("unwind_chain_to_nowhere.exe", out, [(0x1000, 0)],
                [unwind_info(1, [], flags=4, extra=0x1234)])
    with_unwind("unwind_chain_shared.exe", out, [(0x1000, 0), (0x1010, 1), (0x1020, 1)],
                [ok, unwind_info(1, [], flags=4, extra=0x1000)])
    with_unwind("unwind_code_past_end.exe", out, [(0x1000, 0)], [unwind_info(1, [(4, 5, 0)])])
    # Every code kind, epilogs (the first one two slots long), a handler,
    # an odd UnwindData (chained RUNTIME_FUNCTION, not followed) and a shared
    # UNWIND_INFO: no warning.
    every = unwind_info(2, [(1, 6, 0), (2, 0, 0), (3, 6, 0), (4, 0, 3), (5, 1, 0), (0, 0, 0),
                            (6, 1, 1), (0, 0, 0), (0, 0, 0), (7, 2, 3), (8, 3, 0), (9, 4, 3),
                            (0, 0, 0), (10, 5, 3), (0, 0, 0), (0, 0, 0), (11, 8, 1), (0, 0, 0),
                            (12, 9, 1), (0, 0, 0), (0, 0, 0), (13, 10, 0)], flags=1, extra=0x1000)
    with_unwind("unwind_every_code.exe", out, [(0x1000, 0), (0x1010, 0), (0x1020, 0x1001)], [every])
    p, va, ptr = test_section(EXE64)
    put(p, ptr, -6, bytes(6))
    p.set_dir(EXCEPTION, va + RAW - 6, 24)
    out["unwind_runtime_function_truncated.exe"] = p.bytes()


def all_cases():
    out = {}
    for build in (debug_cases, reloc_cases, tls_cases, load_config_cases, delay_cases,
                  bound_cases, exception_cases):
        build(out)
    return out


def main():
    cases = all_cases()
    if "--check" in sys.argv[1:]:
        committed = {p.name: p.read_bytes() for p in DEST.iterdir()}
        differ = sorted(set(committed) ^ set(cases)) + sorted(
            n for n in cases if n in committed and committed[n] != cases[n])
        print(f"{len(cases)} files, {len(differ)} differences {differ or ''}")
        sys.exit(1 if differ else 0)
    DEST.mkdir(parents=True, exist_ok=True)
    for old in DEST.iterdir():
        old.unlink()
    for name, data in sorted(cases.items()):
        assert len(data) < 64 * 1024, name
        (DEST / name).write_bytes(data)
    print(f"wrote {len(cases)} files under {DEST}")


if __name__ == "__main__":
    main()
