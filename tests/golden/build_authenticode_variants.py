"""Hand-made Authenticode variants that osslsigncode cannot produce: PKCS#9
countersignatures, unusual times, malformed structures and corrupted certificate tables.

    python tests/golden/build_authenticode_variants.py OUT_DIR PKI_DIR   (called by build_signed.sh)

Signatures are not re-computed (signify does not verify them when parsing), so only the
structure matters. Every input is a file build_signed.sh wrote just before.
"""

import struct
import sys
from pathlib import Path

from asn1crypto import cms, core, pem, tsp, x509

OUT = Path(sys.argv[1])
PKI = Path(sys.argv[2])


def cert_table(data):
    """(offset of the security directory entry, table address, table size)."""
    e_lfanew = struct.unpack_from("<I", data, 0x3C)[0]
    opt = e_lfanew + 24
    magic = struct.unpack_from("<H", data, opt)[0]
    entry = opt + (128 if magic == 0x10B else 144)
    address, size = struct.unpack_from("<II", data, entry)
    return entry, address, size


def first_blob(data):
    """The first record's DER, without the zero padding osslsigncode puts after it."""
    _, address, _ = cert_table(data)
    length = struct.unpack_from("<I", data, address)[0]
    blob = data[address + 8 : address + length]
    return cms.ContentInfo.load(blob).dump()


def with_entries(data, entries, size_delta=0):
    """The PE with its certificate table replaced by `entries` of (revision, type, blob)."""
    entry, address, _ = cert_table(data)
    table = b""
    for revision, cert_type, blob in entries:
        record = struct.pack("<IHH", 8 + len(blob), revision, cert_type) + blob
        table += record + b"\0" * (-len(record) % 8)
    out = bytearray(data[:address] + table)
    struct.pack_into("<II", out, entry, address, len(table) + size_delta)
    return bytes(out)


def write(name, data):
    (OUT / name).write_bytes(data)


def load(name):
    return (OUT / name).read_bytes()


def content_info(data):
    return cms.ContentInfo.load(first_blob(data))


def redump(info):
    return info.dump()


def signer_of(info):
    return info["content"]["signer_infos"][0]


def leaf_issuer_serial():
    _, _, der = pem.unarmor((PKI / "tsa.pem").read_bytes())
    cert = x509.Certificate.load(der)
    return cms.IssuerAndSerialNumber(
        {"issuer": cert.issuer, "serial_number": cert.serial_number}
    )


def pkcs9_countersigner(time_choice):
    """A PKCS#9 countersignature SignerInfo whose signingTime is `time_choice`."""
    return cms.SignerInfo(
        {
            "version": "v1",
            "sid": cms.SignerIdentifier({"issuer_and_serial_number": leaf_issuer_serial()}),
            "digest_algorithm": {"algorithm": "sha256"},
            "signed_attrs": [
                {"type": "content_type", "values": ["data"]},
                {"type": "signing_time", "values": [time_choice]},
                {"type": "message_digest", "values": [b"\x11" * 32]},
            ],
            "signature_algorithm": {"algorithm": "rsassa_pkcs1v15"},
            "signature": b"\x22" * 256,
        }
    )


def add_unsigned(info, attributes):
    signer = signer_of(info)
    old = list(signer["unsigned_attrs"]) if signer["unsigned_attrs"].native else []
    signer["unsigned_attrs"] = cms.CMSAttributes(old + attributes)
    return info


def counter_attr(time_choice):
    return cms.CMSAttribute(
        {"type": "counter_signature", "values": [pkcs9_countersigner(time_choice)]}
    )


def utc(text):
    return cms.Time({"utc_time": core.UTCTime(text)})


def gen(text):
    return (0x18, text)


def pkcs9_variant(name, base, time_choice):
    """`base` with a PKCS#9 countersignature whose signingTime is `time_choice`, a
    (tag, text) pair put in place of a placeholder (asn1crypto would normalise it)."""
    data = load(base)
    info = add_unsigned(content_info(data), [counter_attr(utc("370101000000Z"))])
    tag, text = time_choice
    blob = replace_der(redump(info), 0x17, b"370101000000Z", tag, text.encode())
    write(name, with_entries(data, [(0x200, 2, blob)]))


def der_header(tag, length):
    if length < 0x80:
        return bytes([tag, length])
    size = (length.bit_length() + 7) // 8
    return bytes([tag, 0x80 | size]) + length.to_bytes(size, "big")


def der_nodes(data):
    """Splits DER bytes into (tag, content) pairs; None when they are not exactly DER."""
    nodes, pos = [], 0
    while pos < len(data):
        if pos + 2 > len(data) or data[pos] & 0x1F == 0x1F:
            return None
        tag, first = data[pos], data[pos + 1]
        pos += 2
        if first & 0x80:
            size = first & 0x7F
            if size == 0 or size > 4 or pos + size > len(data):
                return None
            length = int.from_bytes(data[pos : pos + size], "big")
            pos += size
        else:
            length = first
        if pos + length > len(data):
            return None
        nodes.append((tag, data[pos : pos + length]))
        pos += length
    return nodes


def replace_der(data, old_tag, old_content, new_tag, new_content):
    """Re-encodes DER `data` with every (old_tag, old_content) element replaced, fixing
    the lengths of everything that encloses it (OCTET STRINGs holding DER included)."""
    nodes = der_nodes(data)
    if nodes is None:
        return data
    out = b""
    for tag, content in nodes:
        if tag == old_tag and content == old_content:
            tag, content = new_tag, new_content
        elif tag & 0x20 or (tag == 0x04 and der_nodes(content)):
            content = replace_der(content, old_tag, old_content, new_tag, new_content)
        out += der_header(tag, len(content)) + content
    return out


def tst_variant(name, gen_time):
    """cli64_chain_ts.exe with the RFC 3161 TSTInfo genTime replaced by `gen_time`."""
    data = load("cli64_chain_ts.exe")
    blob = first_blob(data)
    blob = replace_der(blob, 0x18, b"20231114221500Z", 0x18, gen_time.encode())
    write(name, with_entries(data, [(0x200, 2, blob)]))


# --- PKCS#9 (Authenticode) countersignatures ---------------------------------
pkcs9_variant("pkcs9_utc.exe", "cli64_chain.exe", (0x17, "231114221320Z"))
pkcs9_variant("pkcs9_utc_1999.exe", "cli64_chain.exe", (0x17, "990101000000Z"))
pkcs9_variant("pkcs9_utc_offset.exe", "cli64_self.exe", (0x17, "2311142213-0530"))
pkcs9_variant("pkcs9_gen_fraction.exe", "cli64_chain.exe", gen("20231114221320.123456Z"))
pkcs9_variant("pkcs9_pre_epoch.exe", "cli64_chain.exe", gen("19600101000000Z"))
pkcs9_variant("pkcs9_bad_time.exe", "cli64_chain.exe", (0x17, "231340221320Z"))
pkcs9_variant("pkcs9_and_tst.exe", "cli64_chain_ts.exe", (0x17, "231114221320Z"))

# --- RFC 3161 genTime forms --------------------------------------------------
tst_variant("tst_fraction.exe", "20231114221500.5Z")
tst_variant("tst_fraction_long.exe", "20231114221500.1234567891234Z")
tst_variant("tst_half_micro.exe", "20231114221500.0000005Z")
tst_variant("tst_1_5_micro.exe", "20231114221500.0000015Z")
tst_variant("tst_hour_fraction.exe", "2023111422.123456789Z")
tst_variant("tst_minute_fraction.exe", "202311142215,75+0100")
tst_variant("tst_no_zone.exe", "20231114221500")
tst_variant("tst_far_future.exe", "99991231235959.999999Z")
tst_variant("tst_bad_month.exe", "20231314221500Z")
tst_variant("tst_tz_99.exe", "20231114221500+9900")

# --- structural oddities -----------------------------------------------------
data = load("cli64_chain.exe")
info = content_info(data)
signer = signer_of(info)
info["content"]["signer_infos"] = cms.SignerInfos([signer, signer])
write("two_signers.exe", with_entries(data, [(0x200, 2, redump(info))]))

info = content_info(data)
signer_of(info)["sid"] = cms.SignerIdentifier({"subject_key_identifier": b"\x01" * 20})
write("subject_key_id.exe", with_entries(data, [(0x200, 2, redump(info))]))

info = content_info(data)
info["content"]["digest_algorithms"] = [{"algorithm": "sha256"}, {"algorithm": "sha1"}]
write("two_digest_algorithms.exe", with_entries(data, [(0x200, 2, redump(info))]))

info = content_info(data)
info["content"]["digest_algorithms"] = [{"algorithm": "sha224"}]
write("sha224_digest.exe", with_entries(data, [(0x200, 2, redump(info))]))

# Two WIN_CERTIFICATE records, both signed data; then one good and one garbage.
blob_ts = first_blob(load("cli64_chain_ts.exe"))
blob_self = first_blob(load("cli64_self.exe"))
write("two_entries.exe", with_entries(data, [(0x200, 2, blob_ts), (0x200, 2, blob_self)]))
write("good_then_garbage.exe",
      with_entries(data, [(0x200, 2, blob_ts), (0x200, 2, b"\x30\x82\xff\xff" + b"\xab" * 64)]))
write("good_then_bad_revision.exe",
      with_entries(data, [(0x200, 2, blob_ts), (0x100, 2, blob_self)]))
write("type1_then_good.exe", with_entries(data, [(0x200, 1, blob_self), (0x200, 2, blob_ts)]))
write("trailing_garbage.exe", with_entries(data, [(0x200, 2, blob_ts + b"\xde\xad" * 9)]))

# --- corrupted certificate tables -------------------------------------------
good = load("cli64_chain_ts.exe")
entry, address, size = cert_table(good)
blob = first_blob(good)


def patched(offset, fmt, *values):
    out = bytearray(good)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


write("corrupt_table_truncated.exe", good[: address + size // 2])
write("corrupt_dir_past_eof.exe", patched(entry, "<II", address, size + 8))
write("corrupt_dir_addr_in_header.exe", patched(entry, "<II", 0x40, size))
write("corrupt_dwlength_big.exe", patched(address, "<I", size + 8))
write("corrupt_dwlength_small.exe", patched(address, "<I", 8 + len(blob) // 2))
write("corrupt_dwlength_8.exe", patched(address, "<I", 8))
write("corrupt_cert_type.exe", patched(address + 6, "<H", 1))
write("corrupt_revision.exe", patched(address + 4, "<H", 0x100))
write("corrupt_der_length.exe", patched(address + 8, ">BBH", 0x30, 0x82, 0xFFF0))
write("corrupt_inner_der_length.exe", patched(address + 8 + 40, "B", 0x84))
garbage = bytearray(good)
for i in range(address + 8 + 600, address + 8 + 900, 7):
    garbage[i] ^= 0x5A
write("corrupt_garbage.exe", bytes(garbage))
write("corrupt_table_zeroed.exe", good[:address + 8] + b"\0" * (len(good) - address - 8))
