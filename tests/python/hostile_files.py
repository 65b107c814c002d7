"""Helpers of the adversarial and concurrency tests.

* Builders of hostile paths and garbage documents (no TensorFlow needed).
* The extractor specs: every tokenizer x output of hashed_ngrams and every
  byte feature, as plain data, so a test and a worker process build the same
  ops.
* `Worker`: a child Python process with TensorFlow and rustfx loaded once,
  which runs named functions of this module and answers over a pipe. Each
  call has a deadline: a hang kills the child and fails the calling test
  instead of hanging CI, and a crash (segfault, abort) of the child fails the
  calling test with the signal and the child's stderr, while pytest itself
  survives. The child also measures its own peak RSS (VmHWM, which writing
  "5" to /proc/self/clear_refs resets to the current RSS).
* The functions the child runs (`w_*`): tf.data pipelines, eager references
  and the independent references (TF's own string ops, Python, scikit-learn,
  tests/python/ember_reference.py) the results are checked against.
"""

import functools
import os
import pickle
import random
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20

# ---- hostile paths -----------------------------------------------------------

# TF error codes (absl::StatusCode).
OK, UNKNOWN, INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED = 0, 2, 3, 5, 7
ERROR_CLASS = {UNKNOWN: "UnknownError", INVALID_ARGUMENT: "InvalidArgumentError",
               NOT_FOUND: "NotFoundError",
               PERMISSION_DENIED: "PermissionDeniedError"}


def make_hostile_paths(root):
    """{name: (path bytes, expected code, regex the message must match)}.

    Every expected message contains the path (or, for paths longer than
    PATH_MAX, its first 64 bytes), as the read_files contract says.
    `root` must be short enough for an AF_UNIX socket path (< 108 bytes).
    """
    root = os.fsencode(root)
    j = lambda *parts: os.path.join(root, *parts)  # noqa: E731
    regular = j(b"regular")
    with open(regular, "wb") as f:
        f.write(b"regular contents")
    os.mkfifo(j(b"fifo"))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(j(b"socket"))
    sock.listen(1)
    os.symlink(j(b"loop_b"), j(b"loop_a"))
    os.symlink(j(b"loop_a"), j(b"loop_b"))
    os.symlink(j(b"nowhere"), j(b"dangling"))
    os.symlink(b"/dev/zero", j(b"to_dev_zero"))
    os.symlink(j(b"fifo"), j(b"to_fifo"))
    # A chain of 50 symlinks to a regular file: more than the kernel's 40.
    chain = regular
    for i in range(50):
        link = j(b"chain%d" % i)
        os.symlink(chain, link)
        chain = link
    os.mkdir(j(b"dir"))
    os.symlink(j(b"dir"), j(b"to_dir"))
    long_component = j(b"c" * 300)
    # Exactly PATH_MAX - 1 bytes through existing directories: the kernel
    # takes it, so it is merely missing. One byte more is rejected up front.
    deep = root
    while len(deep) < 4095 - 200:
        deep = os.path.join(deep, b"d" * 100)
        os.mkdir(deep)
    at_limit = os.path.join(deep, b"m" * (4095 - len(deep) - 1))
    assert len(at_limit) == 4095
    over_limit = at_limit + b"x"
    non_utf8 = j(b"missing-\xff\xfe-\xc3")
    nul_after_real = regular + b"\0/etc/passwd"
    e = re.escape
    # The core's messages show a byte that is not UTF-8 as \xHH (read.rs, shown).
    show = lambda p: e(p.decode("utf-8", "backslashreplace"))  # noqa: E731
    hostile = {
        "missing": (j(b"missing"), NOT_FOUND, show(j(b"missing"))),
        "dangling_symlink": (j(b"dangling"), NOT_FOUND, show(j(b"dangling"))),
        "non_utf8_missing": (non_utf8, NOT_FOUND, show(non_utf8)),
        "directory": (j(b"dir"), INVALID_ARGUMENT,
                      show(j(b"dir")) + ".*is a directory"),
        "root_directory": (b"/", INVALID_ARGUMENT, "'/' is a directory"),
        "symlink_to_directory": (j(b"to_dir"), INVALID_ARGUMENT,
                                 show(j(b"to_dir")) + ".*is a directory"),
        "fifo_no_writer": (j(b"fifo"), INVALID_ARGUMENT,
                           show(j(b"fifo")) + ".*is a FIFO"),
        "symlink_to_fifo": (j(b"to_fifo"), INVALID_ARGUMENT,
                            show(j(b"to_fifo")) + ".*is a FIFO"),
        # Rejected by stat before any open(2) (which would fail with ENXIO).
        "unix_socket": (j(b"socket"), INVALID_ARGUMENT,
                        show(j(b"socket")) + ".*is a socket"),
        "dev_zero": (b"/dev/zero", INVALID_ARGUMENT,
                     "'/dev/zero' is a character device"),
        "dev_urandom": (b"/dev/urandom", INVALID_ARGUMENT,
                        "'/dev/urandom' is a character device"),
        "dev_null": (b"/dev/null", INVALID_ARGUMENT,
                     "'/dev/null' is a character device"),
        "symlink_to_dev_zero": (j(b"to_dev_zero"), INVALID_ARGUMENT,
                                show(j(b"to_dev_zero")) + ".*is a character device"),
        "symlink_loop": (j(b"loop_a"), INVALID_ARGUMENT,
                         show(j(b"loop_a")) + ".*Too many levels of symbolic links"),
        "symlink_chain_of_50": (chain, INVALID_ARGUMENT,
                                show(chain) + ".*Too many levels of symbolic links"),
        "empty_path": (b"", INVALID_ARGUMENT, r"\bempty path\b"),
        "nul_byte": (b"a\0b", INVALID_ARGUMENT,
                     e("path contains a NUL byte: 'a\\u{0}b'")),
        # A NUL after a real file must not read the real file (C truncation).
        "nul_after_real_file": (nul_after_real, INVALID_ARGUMENT,
                                "NUL byte: '" + show(regular)),
        "overlong_path": (over_limit, INVALID_ARGUMENT,
                          "path is 4096 bytes long, more than the 4095 allowed: '"
                          + show(over_limit[:64]) + r"\.\.\.'"),
        "overlong_5000": (b"/" + b"x" * 4999, INVALID_ARGUMENT,
                          "path is 5000 bytes long.*'/" + "x" * 63 + r"\.\.\.'"),
        "path_at_limit_missing": (at_limit, NOT_FOUND, show(at_limit)),
        "overlong_component": (long_component, INVALID_ARGUMENT,
                               show(long_component) + ".*File name too long"),
        "enotdir": (regular + b"/child", INVALID_ARGUMENT,
                    show(regular + b"/child") + ".*Not a directory"),
        "trailing_slash_on_file": (regular + b"/", INVALID_ARGUMENT,
                                   show(regular + b"/") + ".*Not a directory"),
    }
    return hostile, sock


def short_tmpdir():
    """A fresh directory with a short path (AF_UNIX paths are < 108 bytes)."""
    return tempfile.mkdtemp(prefix="rfx-", dir="/tmp")


def unreadable_files(tmp_path):
    """{path: what its error says} for files a command-line program
    (rustfx-predict, rustfx-sensor) must report by path without blocking: a
    missing file, a directory, a FIFO with no writer, /proc/self/mem,
    /dev/zero, and (not as root, who reads it anyway) a mode-000 file."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: opening it for reading would block
    bad = {str(tmp_path / "missing"): "No such file",
           str(tmp_path): "is a directory",
           str(fifo): "is a FIFO",
           "/proc/self/mem": "Input/output error",
           "/dev/zero": "is a character device"}
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.write_bytes(b"secret")
        locked.chmod(0)
        bad[str(locked)] = "Permission denied"
    return bad


def assert_each_reported(stderr, bad, total):
    """Each of `bad` ({path: reason}) has a stderr line naming it with its
    reason, and the summary counts them out of `total` files."""
    for path, reason in bad.items():
        line = next((l for l in stderr.splitlines() if f"'{path}'" in l), None)
        assert line is not None and reason in line, (path, stderr[-3000:])
    assert f"{len(bad)} of {total} files failed" in stderr


# ---- garbage documents ---------------------------------------------------------

INVALID_UTF8 = {
    "overlong_2": b"\xc0\x80\xc1\xbf",          # overlong NUL and DEL
    "overlong_3": b"\xe0\x80\xaf\xe0\x9f\xbf",  # overlong '/' and U+07FF
    "overlong_4": b"\xf0\x80\x80\xaf\xf0\x8f\xbf\xbf",
    "lone_continuation": b"\x80\xbf\x80\x8f",
    "truncated_2": b"\xc3",
    "truncated_3": b"\xe2\x82",
    "truncated_4": b"\xf0\x9f\x98",
    "surrogate_high": b"\xed\xa0\x80",          # U+D800
    "surrogate_low": b"\xed\xbf\xbf",           # U+DFFF
    "surrogate_pair": b"\xed\xa0\xbd\xed\xb8\x80",
    "above_max": b"\xf4\x90\x80\x80",           # U+110000
    "f5_to_ff": bytes(range(0xf5, 0x100)),
    "five_six_byte_forms": b"\xf8\x88\x80\x80\x80\xfc\x84\x80\x80\x80\x80",
    "bom_and_nonchars": "\ufeff\ufffe\uffff\U0010ffff".encode("utf-8", "surrogatepass"),
}


def invalid_utf8_document(repeats=400):
    """Every kind of invalid UTF-8, between ASCII words and valid UTF-8,
    at the start, the end and glued to word characters."""
    rng = random.Random(7)
    kinds = list(INVALID_UTF8.values())
    parts = [b"\xed\xa0\x80start"]
    for i in range(repeats):
        bad = kinds[i % len(kinds)]
        glue = rng.choice([b" ", b"", b"\t", b"w", "é".encode(), b"_"])
        parts.append(b"word%d" % i + glue + bad + glue + "ß日".encode())
    parts.append(b"end\xf0\x9f\x98")
    return b"".join(parts)


@functools.lru_cache(maxsize=None)
def garbage_documents():
    """{name: bytes}: the hostile contents every extractor must survive.
    The large ones (about a megabyte) are listed in LARGE_DOCUMENTS."""
    rng = random.Random(0)
    lower_hell = ("İİİ ΣΑΣ ΟΔΟΣ. σοφός ΣΣ Σ İstanbul İ̇ ẞ ǅ ΐ ﬃ K Å "
                  "ΑΣ\u0301 ΑΣ\u00ad ΑΣ1 Σ\u0345 ")
    return {
        "random_bytes": rng.randbytes(64 << 10),
        "all_00": bytes(64 << 10),
        "all_ff": b"\xff" * (64 << 10),
        "invalid_utf8": invalid_utf8_document(),
        "nul_separated_words": b"\0".join(b"w%d" % i for i in range(8000)),
        "lowercase_hell": (lower_hell * 200).encode("utf-8"),
        "final_sigmas": ("ΟΔΟΣ ΣΟΦΟΣ" + "Σ" * 50 + " ").encode() * 100,
        "dotted_i_run": "İ".encode() * 20000,
        "control_and_ws_mix": bytes(range(0, 33)) * 600 + "\u00a0\u2028\u3000\x85".encode() * 600,
        # About a megabyte each:
        "megabyte_token": bytes(rng.choices(b"abcdefghijXYZ0123_", k=MiB)),
        "megabyte_whitespace": (b" \t\n\v\f\r" * (MiB // 6)),
        "million_1char_tokens": one_char_tokens(rng, 10**6),
        "megabyte_nul": bytes(MiB),
    }


def one_char_tokens(rng, count):
    """`count` one-letter tokens separated by single spaces."""
    out = bytearray(b" " * (2 * count - 1))
    out[0::2] = bytes(rng.choices(b"abcd", k=count))
    return bytes(out)


LARGE_DOCUMENTS = {"megabyte_token", "megabyte_whitespace",
                   "million_1char_tokens", "megabyte_nul"}

# ---- extractor specs ---------------------------------------------------------

TOKENIZERS = ("whitespace", "word", "char", "byte", "sklearn_word",
              "sklearn_char", "sklearn_char_wb")
OUTPUTS = ("ragged", "sequence", "counts", "sparse")
ID_BUCKETS = 1 << 40
COUNT_BUCKETS = 1 << 12      # divides ID_BUCKETS: counts = bincount(ids % it)
WIDTHS = (1, 2, 64)
MAX_TOKENS = 1000
SEQUENCE_LEN = 1 << 14


def extractor_specs(widths=WIDTHS):
    """{name: (function name, kwargs)} covering every tokenizer x output of
    hashed_ngrams (ragged both with and without lowercasing) and every other
    extractor of the registry (imports rustfx)."""
    specs = {}
    for tok in TOKENIZERS:
        base = dict(tokenizer=tok, ngram_widths=tuple(widths))
        specs[f"{tok}/ragged"] = ("hashed_ngrams", dict(
            base, num_buckets=ID_BUCKETS, output="ragged"))
        specs[f"{tok}/ragged_lower"] = ("hashed_ngrams", dict(
            base, num_buckets=ID_BUCKETS, output="ragged", lowercase=True))
        specs[f"{tok}/sequence"] = ("hashed_ngrams", dict(
            base, num_buckets=ID_BUCKETS, output="sequence",
            max_tokens=MAX_TOKENS))
        specs[f"{tok}/counts"] = ("hashed_ngrams", dict(
            base, num_buckets=COUNT_BUCKETS, output="counts", lowercase=True))
        specs[f"{tok}/sparse"] = ("hashed_ngrams", dict(
            base, num_buckets=COUNT_BUCKETS, output="sparse", lowercase=True))
    # scikit-learn's HashingVectorizer settings (murmur3, signs, l2 norm).
    for tok, analyzer in (("sklearn_word", "word"), ("sklearn_char_wb", "char_wb")):
        specs[f"{tok}/hashing_vectorizer"] = ("hashed_ngrams", dict(
            tokenizer=tok, ngram_widths=(1, 2), num_buckets=COUNT_BUCKETS,
            lowercase=True, hash="murmur3", alternate_sign=True, norm="l2",
            output="sparse"))
    specs["byte_histogram"] = ("byte_histogram", {})
    specs["byte_entropy_histogram"] = ("byte_entropy_histogram", {})
    specs["string_features"] = ("string_features", {})
    specs["byte_sequence"] = ("byte_sequence", dict(
        max_len=SEQUENCE_LEN, preset="malconv2", sampling="head_tail"))
    # Every other extractor of the core's registry, on each of its examples
    # (a new extractor is covered with no edit here).
    import rustfx
    for name, entry in rustfx.registry().items():
        if name != "hashed_ngrams":
            for i, params in enumerate(entry["examples"]):
                specs[f"{name}/example{i}"] = (name, params)
    return specs


def build(spec):
    """The extractor function of a spec (imports rustfx)."""
    import rustfx
    fn, kwargs = spec
    return lambda x: getattr(rustfx, fn)(x, **kwargs)


def canonical(value):
    """A tensor result as plain numpy: SparseTensor -> (indices, values,
    dense_shape), RaggedTensor -> list of rows, else an ndarray."""
    import tensorflow as tf
    if isinstance(value, tf.SparseTensor):
        return ("sparse", value.indices.numpy(), value.values.numpy(),
                value.dense_shape.numpy())
    if isinstance(value, tf.RaggedTensor):
        return ("ragged", [row for row in value.numpy()])
    return value.numpy()


def assert_same(a, b, what):
    """Exact equality of canonical results (NaN equal to NaN)."""
    import numpy as np
    if isinstance(a, bytes) or isinstance(b, bytes):
        assert a == b, f"{what}: {a[:80]!r}... != {b[:80]!r}..."
        return
    if isinstance(a, tuple) or isinstance(b, tuple):
        assert type(a) is type(b) and len(a) == len(b) and a[0] == b[0], what
        for x, y in zip(a[1:], b[1:]):
            assert_same(x, y, what)
        return
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), what
        for x, y in zip(a, b):
            assert_same(x, y, what)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}"
    np.testing.assert_array_equal(a, b, err_msg=what)


# ---- the worker process ----------------------------------------------------------

class WorkerError(AssertionError):
    """A call failed in the worker: its traceback, or a hang or a crash."""


class Worker:
    """A child Python with rustfx loaded, running functions of this module.

    `call(name, *args, timeout=...)` runs `name(*args)` in the child and
    returns its (pickled) result. An exception in the child is raised here as
    WorkerError with the child's traceback. If the call does not answer
    within `timeout` seconds the child is killed and WorkerError says so; if
    the child dies (signal, abort) WorkerError gives its exit status and the
    tail of its stderr. The next call starts a fresh child.
    """

    def __init__(self, prefix=(), env=None, load_rustfx=True):
        self.prefix = list(prefix)
        self.load_rustfx = load_rustfx
        # A fixed mmap threshold makes glibc return freed large blocks to the
        # kernel at once, so the RSS before a measured call is live memory,
        # not a heap grown by earlier calls (which would hide a peak).
        self.env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
                    "MALLOC_MMAP_THRESHOLD_": str(128 << 10), **(env or {})}
        self.proc = None
        self.stderr = None
        self.ready = False

    def launch(self):
        """Starts the child without waiting for TF to load (see start)."""
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            self.prefix + [sys.executable, "-u", os.path.abspath(__file__),
                           "--worker" if self.load_rustfx else "--bare-worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
            env=self.env, cwd=HERE)
        self.ready = False

    def start(self, timeout=180):
        if self.proc is None:
            self.launch()
        if not self.ready:
            answer = self._receive("start", timeout)
            assert answer == ("ok", "ready"), answer
            self.ready = True

    @property
    def pid(self):
        return self.proc.pid if self.alive() else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stderr_tail(self, limit=3000):
        if self.stderr is None:
            return ""
        self.stderr.seek(0)
        text = self.stderr.read().decode("utf-8", "replace")
        return text[-limit:]

    def close(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None

    def call(self, name, *args, timeout=60, **kwargs):
        if not self.alive():
            self.close()
        self.start()
        payload = pickle.dumps((name, args, kwargs), protocol=4)
        try:
            self.proc.stdin.write(struct.pack("<Q", len(payload)) + payload)
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise self._died(name) from None
        status, *rest = self._receive(name, timeout)
        if status == "ok":
            return rest[0]
        raise WorkerError(f"{name} failed in the worker:\n{rest[0]}")

    def _died(self, name):
        code = self.proc.wait()
        how = (f"signal {signal.Signals(-code).name}" if code < 0
               else f"exit status {code}")
        error = WorkerError(f"the worker process died ({how}) during {name}; "
                            f"stderr:\n{self.stderr_tail()}")
        self.proc = None
        return error

    def _receive(self, name, timeout):
        deadline = time.monotonic() + timeout
        header = self._read_exactly(8, deadline, name, timeout)
        (size,) = struct.unpack("<Q", header)
        return pickle.loads(self._read_exactly(size, deadline, name, timeout))

    def _read_exactly(self, size, deadline, name, timeout):
        fd = self.proc.stdout.fileno()
        chunks, got = [], 0
        while got < size:
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                tail = self.stderr_tail()
                self.close()
                raise WorkerError(f"{name} did not finish within {timeout} s "
                                  f"(a hang?); worker killed. stderr:\n{tail}")
            chunk = os.read(fd, min(size - got, 1 << 20))
            if not chunk:
                raise self._died(name)
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)


def _serve(load_rustfx=True):
    """The worker's loop: length-prefixed pickles in on stdin, out on a
    private copy of stdout (fd 1 itself goes to stderr, so stray prints of
    TF or numpy cannot corrupt the protocol)."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer

    def send(obj):
        data = pickle.dumps(obj, protocol=4)
        out.write(struct.pack("<Q", len(data)) + data)
        out.flush()

    if load_rustfx:
        import rustfx  # noqa: F401  (loads TF and the op library once)
    send(("ok", "ready"))
    while True:
        header = inp.read(8)
        if len(header) < 8:
            return
        (size,) = struct.unpack("<Q", header)
        name, args, kwargs = pickle.loads(inp.read(size))
        try:
            send(("ok", globals()[name](*args, **kwargs)))
        except BaseException:  # noqa: BLE001 (reported to the parent)
            send(("error", traceback.format_exc()))


# ---- functions the worker runs ----------------------------------------------------

def w_ping():
    return os.getpid()


def w_sleep(seconds):
    """For the harness's own test: a call that hangs."""
    time.sleep(seconds)


def w_abort():
    """For the harness's own test: a crash (SIGABRT)."""
    os.abort()


def _status_field(name):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(name)


def w_reset_peak():
    """Resets VmHWM to the current RSS; returns the RSS (bytes), or None if
    the kernel does not support it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    rss = _status_field("VmRSS")
    assert _status_field("VmHWM") <= rss + (8 << 20)
    return rss


def w_peak():
    return _status_field("VmHWM")


def w_measured(name, *args, **kwargs):
    """Runs `name(*args)` and reports its time and the peak RSS above the
    RSS just before it: {"result", "seconds", "rss_before", "peak"}."""
    import ctypes
    import gc
    gc.collect()
    ctypes.CDLL(None).malloc_trim(0)
    before = w_reset_peak()
    if before is None:
        raise RuntimeError("/proc/self/clear_refs cannot reset VmHWM here")
    start = time.monotonic()
    result = globals()[name](*args, **kwargs)
    return dict(result=result, seconds=time.monotonic() - start,
                rss_before=before, peak=w_peak())


PE_CORPUS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "golden", "pe")


def pe_mutations(seed, count):
    """`count` hostile variants of the PE corpus (tests/golden/pe): header
    and table fields set to 0, 0xFF.. or random values, random byte runs
    overwritten, truncations and appended junk. Deterministic."""
    rng = random.Random(seed)
    bases = []
    for root, _, names in os.walk(PE_CORPUS):
        for name in sorted(names):
            with open(os.path.join(root, name), "rb") as f:
                data = f.read()
            if data[:2] == b"MZ" and len(data) >= 512:
                bases.append(data)
    for _ in range(count):
        doc = bytearray(rng.choice(bases))
        for _ in range(rng.randrange(1, 8)):
            kind = rng.random()
            # Headers and tables live in the first few KB: hit them most.
            at = rng.randrange(min(len(doc), 4096 if rng.random() < 0.8 else len(doc)))
            if kind < 0.3:
                width = rng.choice((1, 2, 4, 8))
                doc[at:at + width] = rng.choice((b"\0", b"\xff", bytes([rng.randrange(256)]))) * width
            elif kind < 0.6:
                doc[at:at + 16] = rng.randbytes(16)
            elif kind < 0.8:
                del doc[rng.randrange(1, len(doc)):]
                if len(doc) < 2:
                    doc = bytearray(b"MZ")
            else:
                doc += rng.randbytes(rng.randrange(1, 4096))
        yield bytes(doc)


def w_ember_mutations(seed, count, batch=256):
    """ember_features over pe_mutations(seed, count) in batches, eagerly.
    Returns (rows, rows that parsed as PE)."""
    import numpy as np
    import rustfx
    rows = pe_rows = 0
    docs = list(pe_mutations(seed, count))
    for start in range(0, len(docs), batch):
        x = rustfx.ember_features(docs[start:start + batch]).numpy()
        assert np.isfinite(x).all()
        rows += len(x)
        pe_rows += int((x[:, 2] == 1).sum())
    return rows, pe_rows


def w_explain_hostile(seed, mutations):
    """rustfx_core.explain (the C ABI) of every garbage document under
    every spec of extractor_specs(), and of `mutations` hostile PE files
    under the PE-reading extractors, at the default caps. Checks every
    table's bounds (rows, texts, spans inside the document); returns
    (explanations, contributions, truncated explanations)."""
    import rustfx_core
    from rustfx_core._abi import EXPLAIN_CAPS
    max_rows = EXPLAIN_CAPS["default_max_contributions"]
    max_text = EXPLAIN_CAPS["default_max_text_bytes"]
    specs = {name: {"extractor": fn, "params": kwargs}
             for name, (fn, kwargs) in extractor_specs().items()}
    jobs = [(spec, doc) for spec in specs.values() for doc in garbage_documents().values()]
    pe_specs = [spec for spec in specs.values()
                if spec["extractor"] in ("ember_features", "general_file_info")]
    jobs += [(spec, doc) for doc in pe_mutations(seed, mutations) for spec in pe_specs]
    explanations = rows = truncated = 0
    for spec, doc in jobs:
        table, = rustfx_core.explain(spec, doc)
        assert len(table) <= max_rows, (spec, len(table))
        assert (table["offset"] + table["length"] <= len(doc)).all(), spec
        assert all(len(text) <= max_text for text in table["text"]), spec
        explanations += 1
        rows += len(table)
        truncated += bool(table.attrs["truncated"])
    return explanations, rows, truncated


def w_read_eager(paths, max_bytes=MiB, on_error="raise"):
    """read_files eagerly: ("ok", contents, codes, messages) or
    ("raised", error class name, message, code)."""
    import tensorflow as tf
    import rustfx
    try:
        contents, status = rustfx.read_files(
            tf.constant(paths, dtype=tf.string), max_bytes=max_bytes,
            on_error=on_error, with_status=True)
    except tf.errors.OpError as e:
        return ("raised", type(e).__name__, e.message, e.error_code)
    return ("ok", contents.numpy().tolist(), status.codes.numpy().tolist(),
            status.messages.numpy().tolist())


def _pipeline(paths, specs, max_bytes, parallel=None, deterministic=True):
    """from_tensor_slices(paths).map(read_files(on_error="empty") then every
    extractor); yields each element as {name: canonical value}."""
    import tensorflow as tf
    import rustfx
    fns = {name: build(spec) for name, spec in specs.items()}

    def fx(path):
        contents, status = rustfx.read_files(path, max_bytes=max_bytes,
                                             on_error="empty", with_status=True)
        out = {"contents": contents, "code": status.codes,
               "message": status.messages}
        for name, fn in fns.items():
            out[name] = fn(contents)
        return out

    ds = (tf.data.Dataset.from_tensor_slices(tf.constant(paths, dtype=tf.string))
          .map(fx, num_parallel_calls=parallel or tf.data.AUTOTUNE,
               deterministic=deterministic))
    for element in ds:
        yield {k: canonical(v) for k, v in element.items()}


def _scalar(value):
    """A numpy scalar as Python (a string tensor's .numpy() is bytes)."""
    return value if isinstance(value, bytes) else value.item()


def _eager(doc, specs):
    import tensorflow as tf
    x = tf.constant(doc, dtype=tf.string)
    return {name: canonical(build(spec)(x)) for name, spec in specs.items()}


def w_hostile_pipeline(paths, max_bytes=MiB):
    """Runs hostile paths through the tf.data pipeline with every extractor.
    Checks each element's features equal the features of b"" (eager), and
    returns [(contents, code, message)] per element."""
    specs = extractor_specs()
    empty = _eager(b"", specs)
    out = []
    for path, element in zip(paths, _pipeline(paths, specs, max_bytes)):
        contents = _scalar(element["contents"])
        code = int(element["code"])
        if code != OK:
            assert contents == b"", path
            for name in specs:
                assert_same(element[name], empty[name], f"{path!r} {name}")
        out.append((contents, code, _scalar(element["message"])))
    return out


def w_empty_features():
    """Absolute facts about the features of b"" (what a failed read gives)."""
    import numpy as np
    specs = extractor_specs()
    got = _eager(b"", specs)
    import rustfx
    for name, value in got.items():
        fn, kwargs = specs[name]
        spec = rustfx.FeatureSpec(fn, **kwargs)
        kind = spec.output["kind"]
        if kind == "ragged":
            assert value.shape == (0,), name
        elif kind == "sparse":
            assert value[1].shape == (0, 1) and value[2].shape == (0,), name
            assert value[3].tolist() == [kwargs["num_buckets"]], name
        elif fn == "byte_sequence" or spec.params.get("output") == "sequence":
            # A padded sequence of nothing: all pad_value.
            assert value.shape == tuple(spec.output["shape"]), name
            assert (value == spec.params["pad_value"]).all(), name
        elif spec.params.get("empty") == "nan":
            assert value.dtype == np.float32 and np.isnan(value).all(), name
        else:
            assert value.dtype == np.float32 and not value.any(), name
    return sorted(got)


# -- references for the garbage documents --

def _grams_joined(tokens, widths, sep=b" "):
    return [sep.join(tokens[i:i + w]) for w in widths
            for i in range(len(tokens) - w + 1)]


def _grams_contiguous(units, widths):
    return [b"".join(units[i:i + w]) for w in widths
            for i in range(len(units) - w + 1)]


def _sklearn_grams(text, analyzer, widths, lowercase):
    from sklearn.feature_extraction.text import HashingVectorizer
    grams = []
    for w in widths:
        grams += HashingVectorizer(analyzer=analyzer, ngram_range=(w, w),
                                   lowercase=lowercase).build_analyzer()(text)
    return [g.encode("utf-8") for g in grams]


def reference_grams(doc, tokenizer, widths, lowercase):
    """The n-grams of the definitions (docs/guide.md, scikit-learn),
    independent of rustfx: tf.strings.split for whitespace is checked
    separately."""
    if tokenizer == "whitespace":
        return _grams_joined((doc.lower() if lowercase else doc).split(), widths)
    if tokenizer == "word":
        text = doc.lower() if lowercase else doc
        return _grams_joined(re.findall(rb"[A-Za-z0-9_]+", text), widths)
    if tokenizer == "byte":
        text = doc.lower() if lowercase else doc
        return _grams_contiguous([text[i:i + 1] for i in range(len(text))], widths)
    if tokenizer == "char":
        text = (doc.lower() if lowercase else doc).decode("utf-8", "replace")
        return _grams_contiguous([c.encode("utf-8") for c in text], widths)
    text = doc.decode("utf-8", "replace")
    analyzer = {"sklearn_word": "word", "sklearn_char": "char",
                "sklearn_char_wb": "char_wb"}[tokenizer]
    return _sklearn_grams(text, analyzer, widths, lowercase)


def _hash_ids(grams, num_buckets):
    import numpy as np
    import tensorflow as tf
    if not grams:
        return np.zeros([0], np.int64)
    return tf.strings.to_hash_bucket_fast(
        tf.constant(grams, dtype=tf.string), num_buckets).numpy()


def _units(doc, tokenizer, lower):
    """(units, joiner) of a tokenizer, from its definition: tokens joined
    with b" ", or characters / bytes concatenated."""
    text = doc.lower() if lower else doc
    if tokenizer == "whitespace":
        return text.split(), b" "
    if tokenizer == "word":
        return re.findall(rb"[A-Za-z0-9_]+", text), b" "
    if tokenizer == "byte":
        return text, b""
    if tokenizer == "char":
        return text.decode("utf-8", "replace"), b""
    raise ValueError(tokenizer)


def _check_sampled(doc, tokenizer, widths, lower, ids, what, samples=4000):
    """Checks the number of ids and a random sample of them (plus the first
    and last of each width) against the definition, without listing every
    n-gram (for megabyte documents)."""
    import numpy as np
    units, joiner = _units(doc, tokenizer, lower)
    counts = [max(0, len(units) - w + 1) for w in widths]
    assert len(ids) == sum(counts), (what, len(ids), counts)
    rng = random.Random(5)
    picks, grams, offset = [], [], 0
    for w, count in zip(widths, counts):
        if count:
            starts = {0, count - 1} | {rng.randrange(count) for _ in range(samples // len(widths))}
            for i in sorted(starts):
                gram = units[i:i + w]
                if tokenizer == "char":
                    gram = gram.encode("utf-8")
                elif joiner:
                    gram = joiner.join(gram)
                picks.append(offset + i)
                grams.append(bytes(gram))
        offset += count
    np.testing.assert_array_equal(ids[picks], _hash_ids(grams, ID_BUCKETS),
                                  err_msg=what)


def w_check_garbage(path, doc_name, large=False, max_bytes=4 * MiB):
    """One garbage file through the tf.data pipeline with every extractor.

    Checks: the read equals Python's read; the outputs agree with each other
    (sequence = head of ragged, counts = bincount of ragged ids, sparse =
    counts); the byte features equal tests/python/ember_reference.py. For
    small documents also: every tf.data result equals the eager result on
    the same bytes, and every id equals independent references (tf.strings
    ops, Python, scikit-learn's analyzers and HashingVectorizer). For
    `large` (megabyte) documents the ids of whitespace / word / byte / char
    are checked on a sample. Returns {tokenizer: number of ids}.
    """
    import numpy as np
    import tensorflow as tf
    from sklearn.feature_extraction.text import HashingVectorizer
    import ember_reference as ref
    with open(path, "rb") as f:
        doc = f.read(max_bytes)
    specs = extractor_specs()
    (element,) = list(_pipeline([path], specs, max_bytes))
    assert int(element["code"]) == OK and _scalar(element["message"]) == b""
    assert _scalar(element["contents"]) == doc, "read_files != Python's read"
    if not large:
        eager = _eager(doc, specs)
        for name in specs:
            assert_same(element[name], eager[name],
                        f"{doc_name}: tf.data vs eager {name}")
    summary = {}
    for tok in TOKENIZERS:
        ids = element[f"{tok}/ragged"]
        ids_lower = element[f"{tok}/ragged_lower"]
        summary[tok] = len(ids)
        for x in (ids, ids_lower):
            assert x.dtype == np.int64 and ((0 <= x) & (x < ID_BUCKETS)).all()
        seq = element[f"{tok}/sequence"]
        head = ids[:MAX_TOKENS]
        np.testing.assert_array_equal(seq[:len(head)], head, err_msg=f"{tok} sequence")
        assert (seq[len(head):] == -1).all(), f"{tok} sequence padding"
        want_counts = np.bincount(ids_lower % COUNT_BUCKETS,
                                  minlength=COUNT_BUCKETS).astype(np.float32)
        np.testing.assert_array_equal(element[f"{tok}/counts"], want_counts,
                                      err_msg=f"{doc_name} {tok} counts")
        _, indices, values, shape = element[f"{tok}/sparse"]
        assert shape.tolist() == [COUNT_BUCKETS]
        assert (np.diff(indices[:, 0]) > 0).all(), f"{tok} sparse indices unsorted"
        np.testing.assert_array_equal(indices[:, 0], np.flatnonzero(want_counts))
        np.testing.assert_array_equal(values, want_counts[want_counts != 0])
        for lower, got in ((False, ids), (True, ids_lower)):
            what = f"{doc_name}: {tok} lowercase={lower} vs reference"
            if large:
                if not tok.startswith("sklearn"):
                    _check_sampled(doc, tok, WIDTHS, lower, got, what)
                continue
            want = _hash_ids(reference_grams(doc, tok, WIDTHS, lower), ID_BUCKETS)
            if tok == "sklearn_char_wb":   # sklearn orders by word, then width
                got, want = np.sort(got), np.sort(want)
            np.testing.assert_array_equal(got, want, err_msg=what)
    if not large:
        # The whitespace tokenizer is tf.strings.split + ngrams + Fingerprint64.
        for lower, name in ((False, "whitespace/ragged"),
                            (True, "whitespace/ragged_lower")):
            x = tf.constant([doc])
            if lower:
                x = tf.strings.lower(x)
            want = tf.strings.to_hash_bucket_fast(tf.strings.ngrams(
                tf.strings.split(x), list(WIDTHS), separator=" "), ID_BUCKETS)
            np.testing.assert_array_equal(element[name], want.values.numpy(),
                                          err_msg=f"{doc_name}: {name} vs TF")
        text = doc.decode("utf-8", "replace")
        for tok, analyzer in (("sklearn_word", "word"), ("sklearn_char_wb", "char_wb")):
            hv = HashingVectorizer(analyzer=analyzer, ngram_range=(1, 2),
                                   n_features=COUNT_BUCKETS, lowercase=True,
                                   alternate_sign=True, norm="l2")
            want = hv.transform([text]).toarray()[0]
            _, indices, values, _ = element[f"{tok}/hashing_vectorizer"]
            got = np.zeros(COUNT_BUCKETS, np.float64)
            got[indices[:, 0]] = values
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7,
                                       err_msg=f"{doc_name}: {tok} vs HashingVectorizer")
    np.testing.assert_array_equal(element["byte_histogram"], ref.byte_histogram(doc))
    np.testing.assert_array_equal(element["byte_entropy_histogram"],
                                  ref.byte_entropy_histogram(doc))
    np.testing.assert_array_equal(element["string_features"], ref.string_features(doc))
    np.testing.assert_array_equal(
        element["byte_sequence"], ref.byte_sequence(doc, SEQUENCE_LEN, 1, 0, "head_tail"))
    return summary


def w_pipeline_summary(paths, spec_names, max_bytes, widths=WIDTHS):
    """For the memory tests: runs the pipeline, keeping only each element's
    read status, content length, and each output's size (so the measured
    peak is that of the pipeline, not of kept results)."""
    specs = {k: v for k, v in extractor_specs(widths).items() if k in spec_names}
    assert len(specs) == len(spec_names), spec_names
    out = []
    for element in _pipeline(paths, specs, max_bytes):
        row = {"code": int(element["code"]), "length": len(_scalar(element["contents"]))}
        for name in specs:
            value = element[name]
            row[name] = (value[1].shape[0] if isinstance(value, tuple)
                         else int(value.size))
        out.append(row)
    return out


def w_zero_prefix_read(path, max_bytes, repeats=1):
    """read_files of a (sparse) file: length and whether it is all zeros."""
    import rustfx
    for _ in range(repeats):
        data = rustfx.read_files([path], max_bytes=max_bytes).numpy()[0]
    return len(data), data.count(0) == len(data)


def w_proc_reads(path, max_bytes_list):
    """{max_bytes: (eager read_files, tf.data read_files, Python's read)} of
    a /proc file, in that order, from this (the worker) process."""
    import tensorflow as tf
    import rustfx
    out = {}
    for max_bytes in max_bytes_list:
        eager = rustfx.read_files([path], max_bytes=max_bytes).numpy()[0]
        ds = (tf.data.Dataset.from_tensor_slices([path])
              .map(lambda p: rustfx.read_files(p, max_bytes=max_bytes),
                   num_parallel_calls=tf.data.AUTOTUNE))
        (mapped,) = [x.numpy() for x in ds]
        with open(path, "rb") as f:
            python = f.read()
        out[max_bytes] = (eager, mapped, python)
    return out


def w_python_can_read(path):
    try:
        with open(path, "rb") as f:
            f.read(1)
        return True
    except PermissionError:
        return False


def pattern_bytes(seed, size):
    return random.Random(seed).randbytes(size)


def w_read_while_mutating(path, seed, size, max_bytes, rounds, batch=8):
    """Reads a file that another process keeps growing / shrinking (always
    as a prefix of pattern_bytes(seed, size)), eagerly in batches and in a
    tf.data pipeline. Returns (every read's length, how many were exact
    prefixes); raises if a read failed or was not a prefix of the pattern
    (up to the zeros a read racing a truncate may see)."""
    import tensorflow as tf
    import rustfx
    import numpy as np
    pattern = pattern_bytes(seed, size)
    lengths, exact = [], 0

    def check(contents, codes, messages):
        nonlocal exact
        for data, code, message in zip(contents, codes, messages):
            assert code == OK, (code, message)
            assert len(data) <= max_bytes, len(data)
            if data == pattern[:len(data)]:
                exact += 1
            else:
                # A read racing a truncate can see zeros where the cut pages
                # were (the kernel's semantics; Python's read does the same):
                # every byte is still the pattern's or 0, never shifted.
                got = np.frombuffer(data, np.uint8)
                want = np.frombuffer(pattern[:len(data)], np.uint8)
                assert ((got == want) | (got == 0)).all(), (
                    f"read of {len(data)} bytes is not a prefix of what was "
                    f"written (first difference at "
                    f"{int(np.argmax((got != want) & (got != 0)))})")
            lengths.append(len(data))

    for _ in range(rounds):
        contents, status = rustfx.read_files([path] * batch, max_bytes=max_bytes,
                                             on_error="raise", with_status=True)
        check(contents.numpy().tolist(), status.codes.numpy().tolist(),
              status.messages.numpy().tolist())
    ds = (tf.data.Dataset.from_tensor_slices([path] * (rounds * batch))
          .map(lambda p: rustfx.read_files(p, max_bytes=max_bytes,
                                           on_error="empty", with_status=True),
               num_parallel_calls=tf.data.AUTOTUNE))
    for contents, status in ds:
        check([contents.numpy()], [int(status.codes)], [status.messages.numpy()])
    return lengths, exact


if __name__ == "__main__" and sys.argv[1:] in (["--worker"], ["--bare-worker"]):
    sys.path.insert(0, HERE)
    _serve(load_rustfx=sys.argv[1] == "--worker")
