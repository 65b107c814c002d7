"""Shared fixtures: random documents and real files from this machine."""

import glob
import os
import random

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

ASCII_WS = " \t\n\v\f\r"
UNICODE_BITS = ["é", "ß", "İ", "Σ", "ς", "\u00a0", "\u2003", "\u3000", "日本",
                "😀", "\u0301", "²", "\x1c", "\x85", "\u2028", "_", "a1"]


def random_documents(seed, count):
    """Strings mixing ASCII words, Unicode, control bytes, invalid UTF-8,
    empties and long whitespace runs: the inputs parity must hold on."""
    rng = random.Random(seed)
    docs = [b"", b" ", b"\t\n\v\f\r", b"a", b" a  b ", b"\xff\xfe", b"\0"]
    for _ in range(count):
        parts = []
        for _ in range(rng.randrange(0, 40)):
            kind = rng.random()
            if kind < 0.4:
                parts.append("".join(rng.choice("abcXYZ019_-.,") for _ in
                                     range(rng.randrange(1, 8))).encode())
            elif kind < 0.6:
                parts.append("".join(rng.choice(ASCII_WS) for _ in
                                     range(rng.randrange(1, 12))).encode())
            elif kind < 0.8:
                parts.append(rng.choice(UNICODE_BITS).encode())
            elif kind < 0.9:
                parts.append(bytes(rng.randrange(0, 32) for _ in range(3)))
            else:
                parts.append(bytes(rng.randrange(128, 256) for _ in range(2)))
        docs.append(b"".join(parts))
    return docs


def real_files(patterns=("/usr/lib/python3*/**/*.py", "/usr/include/**/*.h",
                         "/usr/share/perl*/**/*.pm", "/usr/bin/*"),
               per_pattern=15, max_size=2 << 20):
    """A deterministic sample of real text and binary files."""
    found = []
    for pattern in patterns:
        paths = sorted(p for p in glob.glob(pattern, recursive=True)
                       if os.path.isfile(p) and not os.path.islink(p)
                       and 0 < os.path.getsize(p) <= max_size)
        found += random.Random(pattern).sample(paths, min(per_pattern, len(paths)))
    return found


@pytest.fixture(scope="session")
def documents():
    return random_documents(0, 2000)


@pytest.fixture(scope="session")
def machine_files():
    paths = real_files()
    assert len(paths) >= 20, "expected real files under /usr"
    return paths


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "ray_cluster: starts a two-node Ray cluster on this machine "
        "(tests/python/test_corpus.py); deselect with -m 'not ray_cluster'")


def same_rows(a, b):
    """Bit for bit (NaN payloads count): rustfx_core Batches by their
    exported Arrow buffers (layout, dtype, nulls, every byte), arrays by
    their bytes, anything else by ==."""
    import numpy as np
    from rustfx_core import Batch
    if isinstance(a, Batch):
        return isinstance(b, Batch) and a.buffers() == b.buffers()
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
                and a.tobytes() == b.tobytes())
    return a == b
