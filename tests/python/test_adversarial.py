"""Adversarial files: hostile paths and garbage contents through read_files
and every extractor, inside tf.data, in a worker process.

Everything that could hang, crash or blow up memory runs in a worker child
process (tests/python/hostile_files.py: `Worker`) that has rustfx loaded
once. Every call to it has a deadline, so a hang fails the test (the worker
is killed) instead of hanging CI, a crash fails the test with the signal,
and the worker measures its own peak RSS. Each test also checks that the
worker it started with is still the one answering (it survived).
"""

import os
import re
import shutil
import stat
import threading
import time

import numpy as np
import pytest

import hostile_files as hf
from hostile_files import (ERROR_CLASS, INVALID_ARGUMENT, MiB, OK,
                           PERMISSION_DENIED)

HOSTILE_NAMES = [
    "missing", "dangling_symlink", "non_utf8_missing", "directory",
    "root_directory", "symlink_to_directory", "fifo_no_writer",
    "symlink_to_fifo", "unix_socket", "dev_zero", "dev_urandom", "dev_null",
    "symlink_to_dev_zero", "symlink_loop", "symlink_chain_of_50", "empty_path",
    "nul_byte", "nul_after_real_file", "overlong_path", "overlong_5000",
    "path_at_limit_missing", "overlong_component", "enotdir",
    "trailing_slash_on_file",
]
MEMORY_SLACK = 64 * MiB   # allocator and TF noise on top of what is derived


def unprivileged_prefix():
    """Root reads everything: drop the capabilities that bypass file
    permissions (setpriv is part of util-linux)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        return None
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


@pytest.fixture(scope="module")
def workers():
    """The worker, and an unprivileged one launched at the same time (its
    TensorFlow import overlaps the first tests)."""
    main = hf.Worker()
    main.launch()
    prefix = unprivileged_prefix()
    unprivileged = hf.Worker(prefix=prefix) if prefix is not None else None
    if unprivileged:
        unprivileged.launch()
    main.start()
    yield main, unprivileged
    main.close()
    if unprivileged:
        unprivileged.close()


@pytest.fixture(scope="module")
def worker(workers):
    return workers[0]


@pytest.fixture
def same_worker(worker):
    """The worker, checked after the test to be the same live process: a
    crash or a killed hang during the test would have replaced it."""
    pid = worker.call("w_ping", timeout=30)
    yield worker
    assert worker.pid == pid and worker.call("w_ping", timeout=30) == pid, (
        "the worker process did not survive the test")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    assert len(bytes(root)) < 90, "AF_UNIX socket paths must be short"
    paths, sock = hf.make_hostile_paths(root)
    assert sorted(paths) == sorted(HOSTILE_NAMES)
    yield paths
    sock.close()


def test_harness_fails_on_hang_and_on_crash_and_recovers():
    """The worker harness itself: a hang and a crash fail the call (they do
    not hang or kill pytest), and the next call gets a fresh worker."""
    w = hf.Worker(load_rustfx=False)
    try:
        first = w.call("w_ping", timeout=30)
        start = time.monotonic()
        with pytest.raises(hf.WorkerError, match="did not finish within 1 s"):
            w.call("w_sleep", 60, timeout=1)
        assert time.monotonic() - start < 10 and not w.alive()
        second = w.call("w_ping", timeout=30)
        with pytest.raises(hf.WorkerError, match="died .signal SIGABRT"):
            w.call("w_abort", timeout=30)
        assert len({first, second, w.call("w_ping", timeout=30)}) == 3
        # An exception in the worker comes back with its traceback.
        with pytest.raises(hf.WorkerError, match="KeyError: 'NoSuchField'"):
            w.call("_status_field", "NoSuchField", timeout=30)
    finally:
        w.close()


# ---- hostile paths: error codes and messages ----------------------------------

@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_path_fails_with_its_code_naming_the_path(name, hostile,
                                                          same_worker):
    path, code, pattern = hostile[name]
    start = time.monotonic()
    raised = same_worker.call("w_read_eager", [path], on_error="raise", timeout=20)
    assert time.monotonic() - start < 5, "read_files must not block"
    assert raised[0] == "raised", f"{name} was read: {raised!r:.200}"
    _, error_class, message, error_code = raised
    assert (error_code, error_class) == (code, ERROR_CLASS[code]), message
    assert re.search(pattern, message), (pattern, message)
    # on_error="empty": b"" and the same code and message, nothing raised.
    got = same_worker.call("w_read_eager", [path, path], on_error="empty",
                           timeout=20)
    status, contents, codes, messages = got
    assert (status, contents, codes) == ("ok", [b"", b""], [code, code]), got
    # The eager exception decorates the status message with the op name.
    assert messages[0] == messages[1] and messages[0].decode() in message
    assert re.search(pattern, messages[0].decode()), messages[0]


def test_fifo_with_a_writer_is_rejected_without_reading_it(tmp_path, same_worker):
    """A FIFO holding data is rejected before any read: the data stays."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)   # writer and reader end
    try:
        os.write(fd, b"secret")
        got = same_worker.call("w_read_eager", [str(fifo)], on_error="empty",
                               timeout=20)
        assert got[2] == [INVALID_ARGUMENT] and b"is a FIFO" in got[3][0], got
        assert os.read(fd, 100) == b"secret"
    finally:
        os.close(fd)


def test_features_of_a_failed_read_are_those_of_empty_input(same_worker):
    names = same_worker.call("w_empty_features", timeout=60)
    assert len(names) == len(hf.extractor_specs())


def test_hostile_paths_inside_tf_data_with_every_extractor(hostile, tmp_path,
                                                           same_worker):
    """One pipeline: from_tensor_slices(paths).map(read_files(on_error=
    "empty") then every tokenizer x output and every byte feature,
    AUTOTUNE). Failed elements give b"" and the features of b"" (checked
    in the worker), their status names the path; good files around them are
    read whole."""
    good = tmp_path / "good"
    good.write_bytes(b"good file\xff contents")
    names = HOSTILE_NAMES + ["good", "proc_cpuinfo"]
    paths = ([hostile[n][0] for n in HOSTILE_NAMES]
             + [os.fsencode(good), b"/proc/cpuinfo"])
    m = same_worker.call("w_measured", "w_hostile_pipeline", paths,
                         max_bytes=MiB, timeout=120)
    got = m["result"]
    assert len(got) == len(paths)
    # Nothing was read from a device or FIFO: at most a few x max_bytes
    # per element (1 MiB here) above the baseline.
    above = m["peak"] - m["rss_before"]
    assert above < MEMORY_SLACK + 4 * MiB * len(paths), above
    for name, (contents, code, message) in zip(names, got):
        if name == "good":
            assert (contents, code, message) == (good.read_bytes(), OK, b"")
        elif name == "proc_cpuinfo":
            assert code == OK and contents.startswith(b"processor"), contents[:100]
        else:
            _, want_code, pattern = hostile[name]
            assert (contents, code) == (b"", want_code), name
            assert re.search(pattern, message.decode()), (name, message)
    assert m["seconds"] < 60, m["seconds"]


# ---- /proc files: size 0 in stat, read to their end ------------------------------

MAPS_LINE = re.compile(rb"^[0-9a-f]+-[0-9a-f]+ [-rwxps]{4} [0-9a-f]+ "
                       rb"[0-9a-f]+:[0-9a-f]+ \d+ *.*$")


def test_proc_files_are_read_to_their_end_up_to_max_bytes(same_worker):
    assert os.stat("/proc/cpuinfo").st_size == 0
    assert os.stat("/proc/self/maps").st_size == 0
    # Stable files: equal to Python's read, truncated at max_bytes.
    for path in ["/proc/cpuinfo", "/proc/self/cmdline", "/proc/self/environ",
                 "/proc/version"]:
        reads = same_worker.call("w_proc_reads", path, [0, 1, 100, 64 * MiB],
                                 timeout=30)
        for max_bytes, (eager, mapped, python) in reads.items():
            assert len(python) > 0, path
            if path == "/proc/cpuinfo":   # "cpu MHz" changes between reads
                mask = lambda b: re.sub(rb"cpu MHz[^\n]*", b"", b)  # noqa: E731
                eager, mapped, python = mask(eager), mask(mapped), mask(python)
            want = python[:max_bytes]
            if max_bytes == 64 * MiB or path != "/proc/cpuinfo":
                assert eager == want and mapped == want, (path, max_bytes)
            else:   # masking shifts offsets: compare the truncated lengths
                assert len(eager) <= max_bytes and python.startswith(eager)
    # /proc/self/maps of the worker: larger than a page, well-formed lines,
    # read to its end (the same last line as Python's read right after).
    reads = same_worker.call("w_proc_reads", "/proc/self/maps",
                             [100, 64 << 10, 64 * MiB], timeout=30)
    eager, mapped, python = reads[64 * MiB]
    for got in (eager, mapped):
        assert len(got) > 8192 and got.endswith(b"\n"), len(got)
        lines = got.splitlines()
        assert all(MAPS_LINE.match(line) for line in lines), lines[:3]
        assert lines[-1] == python.splitlines()[-1]
        assert got[:100] == python[:100]
    for max_bytes in (100, 64 << 10):
        eager, mapped, python = reads[max_bytes]
        assert len(eager) == len(mapped) == max_bytes
        assert eager[:100] == mapped[:100] == python[:100]
        assert all(MAPS_LINE.match(line) for line in eager.splitlines()[:-1])


# ---- the 10 GB sparse file, and memory ------------------------------------------

def sparse_file(directory, head=b""):
    """A 10 GiB sparse file (no disk space) starting with `head`."""
    path = directory / "sparse_10g"
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(10 * 2**30)
    assert os.stat(path).st_size == 10 * 2**30
    assert os.stat(path).st_blocks * 512 < 64 * MiB + 2 * len(head)
    return str(path)


def test_sparse_10gb_file_is_truncated_quickly_in_bounded_memory(tmp_path,
                                                                 same_worker):
    path = sparse_file(tmp_path)
    report = {}
    for max_bytes in (16 * MiB, 64 * MiB):   # 64 MiB: the default
        m = same_worker.call("w_measured", "w_zero_prefix_read", path, max_bytes,
                             repeats=3, timeout=60)
        above = m["peak"] - m["rss_before"]
        report[max_bytes] = (m["seconds"], above)
        assert m["result"] == (max_bytes, True)
        assert m["seconds"] < 10, m["seconds"]
        # The read buffer, its copy into the string tensor, and the numpy
        # copy: at most 4 x max_bytes (not 10 GB).
        assert above < 4 * max_bytes + MEMORY_SLACK, (max_bytes, above)
    # In tf.data, 8 elements of the same 10 GB file with cheap extractors:
    # at most a few x max_bytes per element (8 in flight at most).
    max_bytes = 16 * MiB
    specs = ["byte_histogram", "byte_entropy_histogram", "string_features",
             "byte_sequence", "whitespace/ragged", "word/counts"]
    m = same_worker.call("w_measured", "w_pipeline_summary", [path] * 8, specs,
                         max_bytes, timeout=120)
    above = m["peak"] - m["rss_before"]
    report["pipeline"] = (m["seconds"], above)
    assert [row["length"] for row in m["result"]] == [max_bytes] * 8
    assert all(row["code"] == OK and row["whitespace/ragged"] == 1
               for row in m["result"])
    assert above < 3 * max_bytes * 8 + MEMORY_SLACK, above
    assert above < 1 << 30
    print("\nsparse 10 GB: (seconds, peak RSS above baseline MiB)",
          {k: (round(s, 2), round(a / MiB)) for k, (s, a) in report.items()})


def text_like_bytes(seed, size):
    """Random bytes skewed towards text: letters, spaces, newlines, UTF-8
    and invalid bytes, so every tokenizer sees many tokens."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"abcdefgh   \n\t_0Z\xc3\xa9\xff\xe2\x82\xac.", np.uint8)
    return alphabet[rng.integers(0, len(alphabet), size)].tobytes()


@pytest.fixture(scope="module")
def sparse_text_file(tmp_path_factory):
    """10 GiB sparse, its first 6 MiB text-like bytes."""
    return sparse_file(tmp_path_factory.mktemp("sparse_text"),
                       text_like_bytes(1, 6 * MiB))


MEMORY_MAX_BYTES = 2 * MiB
MEMORY_WIDTHS = (1, 2)


@pytest.mark.parametrize("tokenizer", hf.TOKENIZERS)
def test_extractor_memory_is_bounded_by_input_and_output(tokenizer,
                                                         sparse_text_file,
                                                         same_worker):
    """Each n-gram output on max_bytes of text-like bytes (read from the
    10 GB sparse file) in tf.data: the peak RSS above the baseline stays
    under a bound derived from the parameters. Input side: the contents and
    their copies, and an index per input byte (16 x max_bytes covers both).
    Output side: ragged ids, 8 bytes each in Rust and again in the output
    tensor (plus vector growth: 24 bytes x n-grams); sequence, counts and
    sparse: their fixed-size output and a sum per bucket (64 x buckets),
    nothing per n-gram."""
    max_bytes = MEMORY_MAX_BYTES
    figures = {}
    grams = None
    for output in ("ragged_lower", "sequence", "counts", "sparse"):
        name = f"{tokenizer}/{output}"
        m = same_worker.call("w_measured", "w_pipeline_summary",
                             [sparse_text_file], [name], max_bytes,
                             widths=MEMORY_WIDTHS, timeout=60)
        (row,) = m["result"]
        assert row["code"] == OK and row["length"] == max_bytes
        above = m["peak"] - m["rss_before"]
        figures[output] = (round(m["seconds"], 2), round(above / MiB))
        if output == "ragged_lower":
            grams = row[name]
            per_output = 24 * grams
        elif output == "sequence":
            per_output = 2 * 8 * hf.MAX_TOKENS
        else:
            per_output = 64 * hf.COUNT_BUCKETS
        bound = MEMORY_SLACK + 16 * max_bytes + per_output
        assert above < bound, (name, above, bound, grams)
        assert m["seconds"] < 30, (name, m["seconds"])
    print(f"\n{tokenizer}: {grams} n-grams of {max_bytes >> 20} MiB; "
          f"(seconds, peak MiB above baseline): {figures}")


@pytest.mark.parametrize("name", ["byte/counts", "char/sparse"])
def test_counts_memory_is_bounded_by_the_output_not_the_ngrams(
        name, sparse_text_file, same_worker):
    """counts / sparse hold one sum per bucket, not one entry per n-gram:
    with widths 1-4, 4 MiB of input has ~16M n-grams (an entry per n-gram
    would be 16 bytes x 16M = 256 MiB) but at most 4096 buckets."""
    max_bytes = 4 * MiB
    m = same_worker.call("w_measured", "w_pipeline_summary", [sparse_text_file],
                         [name], max_bytes, widths=(1, 2, 3, 4), timeout=60)
    assert m["result"][0]["length"] == max_bytes
    above = m["peak"] - m["rss_before"]
    print(f"\n{name}, widths 1-4, {max_bytes >> 20} MiB: peak "
          f"{above / MiB:.0f} MiB above baseline in {m['seconds']:.2f} s")
    # Input copies and an index per byte, plus a hash table of the buckets
    # (num_buckets = 4096 here): no term in the number of n-grams.
    assert above < MEMORY_SLACK + 16 * max_bytes + 64 * hf.COUNT_BUCKETS, above


# ---- garbage contents ----------------------------------------------------------

@pytest.mark.parametrize("name", sorted(hf.garbage_documents()))
def test_garbage_contents_through_every_extractor(name, tmp_path, same_worker):
    doc = hf.garbage_documents()[name]
    path = tmp_path / "garbage"
    path.write_bytes(doc)
    grams = same_worker.call("w_check_garbage", str(path), name,
                             large=name in hf.LARGE_DOCUMENTS, timeout=90)
    n = len(doc)
    widths = hf.WIDTHS
    contiguous = lambda units: sum(max(0, units - w + 1) for w in widths)  # noqa: E731
    # Every byte is a unit of the byte tokenizer.
    assert grams["byte"] == contiguous(n)
    assert grams["char"] == contiguous(len(doc.decode("utf-8", "replace")))
    if name == "megabyte_whitespace":
        assert grams["whitespace"] == grams["word"] == grams["sklearn_word"] == 0
        assert grams["sklearn_char_wb"] == 0
        assert grams["sklearn_char"] == 1           # collapsed to one " "
    if name == "megabyte_token":
        assert grams["whitespace"] == grams["word"] == grams["sklearn_word"] == 1
    if name == "million_1char_tokens":
        assert grams["whitespace"] == grams["word"] == contiguous(10**6)
        assert grams["sklearn_word"] == 0           # needs 2+ word characters
    if name in ("megabyte_nul", "all_00"):
        assert grams["whitespace"] == 1 and grams["word"] == 0


# ---- hostile PE files -------------------------------------------------------------

def test_mutated_pe_files_parse_in_bounded_time_and_memory(same_worker):
    """3,000 mutations of the PE corpus (fields set to 0 / 0xFF.. / random,
    truncations, junk) through ember_features: no crash, finite values, and
    neither time nor memory grows with what the headers claim (counts of
    0xFFFF sections, huge sizes and loops are bounded by pefile's own
    limits): the peak above baseline stays under the slack plus 64 bytes
    per input byte of one batch."""
    count = 3000
    m = same_worker.call("w_measured", "w_ember_mutations", 7, count, timeout=240)
    rows, pe_rows = m["result"]
    above = m["peak"] - m["rss_before"]
    print(f"\n{count} mutated PEs ({pe_rows} still parse as PE): "
          f"{m['seconds']:.1f} s, peak {above / MiB:.0f} MiB above baseline")
    assert rows == count and pe_rows > count // 4
    assert above < MEMORY_SLACK + 64 * 256 * 200_000, above
    assert m["seconds"] < 120


def test_hostile_documents_explain_within_the_caps(same_worker):
    """Explanations are as safe as extraction: every garbage document under
    every extractor spec (each tokenizer and output of hashed_ngrams, every
    registry example) and 300 mutated PE files under the PE extractors,
    through the C ABI: no crash, every table within the documented caps
    (rows, texts, spans inside the document), and memory bounded by the cap
    of one table, not by what the documents hold."""
    m = same_worker.call("w_measured", "w_explain_hostile", 5, 300, timeout=600)
    explanations, rows, truncated = m["result"]
    above = m["peak"] - m["rss_before"]
    print(f"\n{explanations} explanations, {rows} contributions ({truncated} capped): "
          f"{m['seconds']:.1f} s, peak {above / MiB:.0f} MiB above baseline")
    # The megabyte documents reach the cap under the n-gram specs.
    assert truncated > 0 and explanations > 1000
    # One table at the cap: 100,000 rows of 5 numbers and a bytes object of
    # at most 256 bytes (about 400 bytes each in pandas and Python).
    assert above < MEMORY_SLACK + 100_000 * 1024, above


# ---- files that change while being read -----------------------------------------

class Mutator(threading.Thread):
    """Keeps a file a prefix of pattern_bytes(seed, size): "grow" appends
    chunks and starts over from empty; "shrink" truncates it to ever smaller
    sizes and rewrites it whole. Never extends with a hole."""

    def __init__(self, path, seed, size, mode):
        super().__init__(daemon=True)
        self.path, self.mode = path, mode
        self.pattern = hf.pattern_bytes(seed, size)
        self.stop = threading.Event()
        self.changes = 0
        self.error = None

    def run(self):
        fd = os.open(self.path, os.O_WRONLY)
        rng = np.random.default_rng(3)
        size = len(self.pattern)
        try:
            while not self.stop.is_set():
                if self.mode == "grow":
                    at = os.fstat(fd).st_size
                    if at >= size:
                        os.ftruncate(fd, 0)
                        at = 0
                    chunk = int(rng.integers(1, 256 << 10))
                    os.pwrite(fd, self.pattern[at:at + chunk], at)
                else:
                    at = os.fstat(fd).st_size
                    if at < 4096:
                        os.pwrite(fd, self.pattern[at:], at)
                    else:
                        os.ftruncate(fd, int(rng.integers(0, at)))
                self.changes += 1
        except BaseException as e:  # noqa: BLE001 (reported by the test)
            self.error = e
        finally:
            os.close(fd)


@pytest.mark.parametrize("mode", ["grow", "shrink"])
def test_file_changing_while_read_gives_prefixes(mode, tmp_path, same_worker):
    size, max_bytes, seed = 3 * MiB, 2 * MiB, 11
    path = tmp_path / "changing"
    path.write_bytes(hf.pattern_bytes(seed, size) if mode == "shrink" else b"")
    mutator = Mutator(str(path), seed, size, mode)
    mutator.start()
    try:
        lengths, exact = same_worker.call("w_read_while_mutating", str(path),
                                          seed, size, max_bytes, rounds=60,
                                          timeout=90)
    finally:
        mutator.stop.set()
        mutator.join(10)
    assert not mutator.is_alive() and mutator.error is None, mutator.error
    assert len(lengths) == 2 * 60 * 8
    assert max(lengths) <= max_bytes
    # Every read was checked byte by byte in the worker (the pattern's bytes,
    # or zeros where a racing truncate cut pages: the kernel's semantics).
    # How often reads race is timing, not a property of rustfx: 88-100%
    # exact prefixes were seen depending on load, so only require some.
    assert exact > 0, (exact, len(lengths))
    print(f"\n{mode}: {mutator.changes} changes, {len(lengths)} reads, "
          f"{len(set(lengths))} distinct lengths, {exact} exact prefixes")
    # The file really changed under the reads.
    assert mutator.changes > 10 and len(set(lengths)) > 10, (
        mutator.changes, sorted(set(lengths))[:20])


# ---- unreadable files (as root: without CAP_DAC_OVERRIDE) -----------------------

@pytest.fixture
def unprivileged_worker(workers):
    if workers[1] is None:
        pytest.skip("needs setpriv (util-linux) to drop root's file capabilities")
    workers[1].start()
    return workers[1]


def test_unreadable_files_are_permission_denied(tmp_path, unprivileged_worker,
                                                same_worker):
    secret = tmp_path / "secret"
    secret.write_bytes(b"top secret")
    secret.chmod(0)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "inside").write_bytes(b"inside")
    link = tmp_path / "link_to_secret"
    link.symlink_to(secret)
    good = tmp_path / "good"
    good.write_bytes(b"fine")
    locked.chmod(0)
    paths = [str(secret), str(locked / "inside"), str(link)]
    try:
        assert not unprivileged_worker.call("w_python_can_read", str(secret))
        for path in paths:
            raised = unprivileged_worker.call("w_read_eager", [path], timeout=20)
            assert raised[:2] == ("raised", "PermissionDeniedError"), raised
            assert raised[3] == PERMISSION_DENIED and path in raised[2], raised
        got = unprivileged_worker.call("w_hostile_pipeline", paths + [str(good)],
                                       timeout=120)
        for path, (contents, code, message) in zip(paths, got):
            assert (contents, code) == (b"", PERMISSION_DENIED)
            assert path in message.decode(), message
        assert got[-1] == (b"fine", OK, b"")
        assert unprivileged_worker.alive()
        # Root with its capabilities reads mode-000 files.
        if os.geteuid() == 0:
            ok = same_worker.call("w_read_eager", [str(secret)], timeout=20)
            assert ok == ("ok", [b"top secret"], [OK], [b""])
    finally:
        locked.chmod(stat.S_IRWXU)
