"""Golden vectors from thrember (EMBER2024, feature version 3) for the groups
rustfx computes without a PE parser: `general` (of which rustfx's
general_file_info is every value but is_pe), `histogram`, `byteentropy` and
`strings` (ember2024_string_features).

thrember is `src/thrember/features.py` of FutureComputing4AI/EMBER2024
(commit 0ef753e81d98, Apache-2.0; this project's machines keep a copy in
../shared/oracles/thrember). Run with a Python that can import it
(pefile==2024.8.26, signify==0.7.1, scikit-learn, numpy), from the
repository root, giving the directory that holds features.py:

    python tests/golden/generate_thrember.py ../shared/oracles/thrember > tests/golden/thrember_general.tsv

Writes one line per input: name, the input as hex, then the float32 bit
patterns (hex) of thrember's general group (7 values), histogram (256),
byteentropy (256) and strings (177). The inputs are small and synthetic (defined here, so the
file is self-contained); tests/python/test_file_info.py reads it. With extra
arguments (files), it also prints, for each file, thrember's general group,
for a live check on real files (not written to the golden file).
"""

import random
import sys

import numpy as np


def inputs():
    rng = random.Random(2024)
    text = (b"The quick brown fox jumps over the lazy dog. import os\n"
            b"def main():\n    return 0\n")
    yield "one_byte", b"a"
    yield "two_bytes", b"ab"
    yield "three_bytes", b"MZ\x90"
    yield "four_bytes", b"MZ\x90\x00"
    yield "zeros_100", b"\x00" * 100
    yield "ff_7", b"\xff" * 7
    yield "all_byte_values", bytes(range(256))
    yield "all_byte_values_reversed", bytes(range(255, -1, -1))
    yield "random_1000", bytes(rng.randrange(256) for _ in range(1000))
    yield "random_3000", bytes(rng.randrange(256) for _ in range(3000))
    yield "skewed_3000", bytes(0 if rng.random() < 0.8 else rng.randrange(256)
                               for _ in range(3000))
    yield "text_2000", (text * 40)[:2000]
    yield "printable_2500", bytes(rng.randrange(32, 127) for _ in range(2500))
    yield "fake_mz_header", b"MZ" + bytes(rng.randrange(256) for _ in range(200))
    yield "two_values_4096", bytes(rng.choice((0x41, 0xC3)) for _ in range(4096))
    yield "nibbles_2049", bytes(rng.randrange(16) << 4 for _ in range(2049))
    iocs = [b"http://example.com/a?b=c&d=[e]", b"HTTPS://Upper.Case/x", b"ftp://h:21/f",
            b"10.0.0.255", b"256.1.1.1", b"fe80:0:0:0:202:b3ff:fe1e:8329", b"::1", b"1:2::",
            b"aa:bb:cc:dd:ee:ff", b"AA-BB-CC-DD-EE-FF", b"1BoatSLRHtKNngkdXEeobR76b53LETtpyT",
            b"C:/Windows", b"c:/lower", b"!This program cannot be run in DOS mode.",
            b"HKCU\\Software", b"KHLM", b"KHEY_x", b"/dev/null", b"/proc/self", b"/bin/sh",
            b"/usr/lib", b"/tmp/x", b"/URI (x)", b"/FlateDecode", b"/EmbeddedFile",
            b"<html><SCRIPT>", b"javascript:void(0)", b"$(x).Click(f) onClick=1",
            b"PowerShell -enc", b"Invoke-Expression", b"invoke-expression", b"Invoke-Command",
            b"Start-process", b"GET / HTTP/1.1", b"post /x", b"User-Agent: m", b"Cookie: a",
            b"internet download connect", b"base64,ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
            # thrember's pattern is a regex: "9+/" is one or more 9s then
            # "/", so the real alphabet ("...789+/") does not match it.
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01234567899/",
            b"CryptEncrypt crypt", b"encodeURI decode cache certificate clipboard",
            b"command create debug delete desktop directory disk environment enum exit",
            b"file hostname install hidden keyboard memory module mutex password",
            b"privilege process remote resource security service shell snapshot system",
            b"thread token wallet window", b"xhtmlx", b"word_boundaryC:/", b"\x7fC:/",
            b"1.2.3.4.5", b"12:34:56:78:9a:bc:de"]
    seps = [b"\x00", b"\n", b"\x01\x02", b"\xff", b"\x1f"]
    yield "iocs_each", b"\x00".join(iocs)
    yield "iocs_mixed", b"".join(rng.choice(iocs) + rng.choice(seps) for _ in range(300))
    yield "iocs_in_one_string", b" ".join(iocs)
    yield "short_runs", b"\x00".join(b"abcd" for _ in range(50)) + b"\x00abcde"


def bits(values):
    return ",".join(f"{v:08x}" for v in np.asarray(values, np.float32).view(np.uint32))


def main():
    sys.path.insert(0, sys.argv[1])
    import features
    general = features.GeneralFileInfo()
    histogram = features.ByteHistogram()
    byteentropy = features.ByteEntropyHistogram()
    strings = features.StringExtractor()

    def groups(data):
        return [fe.process_raw_features(fe.raw_features(data, None))
                for fe in (general, histogram, byteentropy, strings)]

    if len(sys.argv) > 2:
        for path in sys.argv[2:]:
            data = open(path, "rb").read()
            extractor = features.PEFeatureExtractor()
            print(path, extractor.feature_vector(data)[:7].tolist())
        return
    print("# name\tinput hex\tgeneral (7)\thistogram (256)\tbyteentropy (256)\t"
          "strings (177); "
          "float32 bits; generated by tests/golden/generate_thrember.py")
    for name, data in inputs():
        print("\t".join([name, data.hex(), *(bits(g) for g in groups(data))]))


if __name__ == "__main__":
    main()
