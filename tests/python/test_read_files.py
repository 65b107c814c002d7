"""read_files: contents equal Python's own reads; every error path."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import rustfx


def test_contents_equal_python_reads(machine_files):
    got = rustfx.read_files(machine_files).numpy().tolist()
    assert got == [open(p, "rb").read() for p in machine_files]


def test_max_bytes_truncates(machine_files):
    got = rustfx.read_files(machine_files, max_bytes=100).numpy().tolist()
    assert got == [open(p, "rb").read()[:100] for p in machine_files]


def test_shape_is_kept(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"xyz")
    got = rustfx.read_files([[str(p)], [str(p)]])
    assert got.shape == (2, 1)
    assert rustfx.read_files(str(p)).numpy() == b"xyz"


def test_eager_function_and_tf_data_agree(machine_files):
    eager = rustfx.read_files(machine_files).numpy().tolist()
    graph = tf.function(rustfx.read_files)(tf.constant(machine_files))
    ds = (tf.data.Dataset.from_tensor_slices(machine_files)
          .map(rustfx.read_files, num_parallel_calls=tf.data.AUTOTUNE))
    assert eager == graph.numpy().tolist() == [x.numpy() for x in ds]


def make_hostile(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    loop_a, loop_b = tmp_path / "loop_a", tmp_path / "loop_b"
    os.symlink(loop_b, loop_a)
    os.symlink(loop_a, loop_b)
    dangling = tmp_path / "dangling"
    os.symlink(tmp_path / "nowhere", dangling)
    return {
        str(tmp_path / "missing"): (tf.errors.NotFoundError, "missing"),
        str(dangling): (tf.errors.NotFoundError, "dangling"),
        str(tmp_path): (tf.errors.InvalidArgumentError, "is a directory"),
        str(fifo): (tf.errors.InvalidArgumentError, "is a FIFO"),
        "/dev/zero": (tf.errors.InvalidArgumentError, "is a character device"),
        str(loop_a): (tf.errors.InvalidArgumentError, "loop_a"),
        "": (tf.errors.InvalidArgumentError, "empty path"),
        "a\0b": (tf.errors.InvalidArgumentError, "NUL byte"),
        "/" + "x" * 5000: (tf.errors.InvalidArgumentError, "bytes long"),
    }


def test_each_error_path_raises_its_code_naming_the_path(tmp_path):
    for path, (error, message) in make_hostile(tmp_path).items():
        start = time.monotonic()
        with pytest.raises(error, match=message):
            rustfx.read_files([path])
        assert time.monotonic() - start < 5, path


def test_on_error_empty_reports_status(tmp_path):
    good = tmp_path / "good"
    good.write_bytes(b"fine")
    hostile = make_hostile(tmp_path)
    paths = [str(good)] + list(hostile) + [str(good)]
    contents, status = rustfx.read_files(paths, on_error="empty",
                                         with_status=True)
    assert contents.numpy().tolist() == [b"fine"] + [b""] * len(hostile) + [b"fine"]
    codes = status.codes.numpy().tolist()
    assert codes[0] == codes[-1] == 0
    for code, (error, _) in zip(codes[1:-1], hostile.values()):
        assert code == error(None, None, "").error_code
    messages = status.messages.numpy().tolist()
    assert messages[0] == b"" and all(messages[1:-1])


def test_one_status_code_table(tmp_path):
    """The core's status codes (error::STATUS_CODES, which the kernels' enum
    is checked against when the bridge compiles) are TF's, and are what
    Python reads (rustfx_core) and what the C++ op and the C ABI report for
    the same file."""
    from rustfx_core import _abi
    import rustfx_core
    codes = _abi.STATUS_CODES
    assert codes == {"OK": 0, "INVALID_ARGUMENT": tf.errors.INVALID_ARGUMENT,
                     "NOT_FOUND": tf.errors.NOT_FOUND,
                     "PERMISSION_DENIED": tf.errors.PERMISSION_DENIED,
                     "UNKNOWN": tf.errors.UNKNOWN, "INTERNAL": tf.errors.INTERNAL}, codes
    assert rustfx.DEFAULT_MAX_BYTES == rustfx_core.DEFAULT_MAX_BYTES == 64 << 20
    hostile = make_hostile(tmp_path)
    paths = list(hostile)
    _, status = rustfx.read_files(paths, on_error="empty", with_status=True)
    core = rustfx_core.read_files(paths)
    assert status.codes.numpy().tolist() == list(core.codes), (paths, list(core.codes))
    assert set(core.codes) <= set(codes.values())


def test_fifo_is_never_opened(tmp_path):
    """A writer blocked opening a FIFO stays blocked: read_files rejects the
    FIFO from stat alone, without opening it (which would release the
    writer and throw its data away)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(
        [sys.executable, "-c",
         f"print('opening', flush=True); open({str(fifo)!r}, 'wb').write(b'data')"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "opening"
        time.sleep(0.5)  # now blocked in open(), waiting for a reader
        with pytest.raises(tf.errors.InvalidArgumentError, match="is a FIFO"):
            rustfx.read_files([str(fifo)])
        time.sleep(0.5)
        assert writer.poll() is None, "read_files opened the FIFO"
    finally:
        writer.kill()
        writer.wait()


def test_first_failing_element_is_reported(tmp_path):
    paths = [str(tmp_path / "first_missing"), "/dev/zero"]
    with pytest.raises(tf.errors.NotFoundError, match="first_missing"):
        rustfx.read_files(paths)


def test_permission_denied(tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(b"no")
    secret.chmod(0)
    code = ("import rustfx, tensorflow as tf\n"
            "try:\n"
            f"    rustfx.read_files([{str(secret)!r}])\n"
            "except tf.errors.PermissionDeniedError as e:\n"
            f"    assert {str(secret)!r} in e.message, e.message\n"
            "    print('denied')\n")
    # Root reads everything: as root, drop the capabilities that bypass
    # file permissions (setpriv is part of util-linux).
    prefix = (["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
              if os.geteuid() == 0 else [])
    out = subprocess.run(prefix + [sys.executable, "-c", code],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert "denied" in out.stdout, out.stderr[-2000:]


@pytest.mark.parametrize("max_bytes", [-1, 2**31])
def test_bad_max_bytes(max_bytes):
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_bytes must be in"):
        rustfx.read_files(["/etc/hostname"], max_bytes=max_bytes)


def test_bad_on_error():
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError, TypeError),
                       match="on_error"):
        rustfx.read_files(["/etc/hostname"], on_error="ignore")


def test_unsupported_tensorflow_versions_are_explained(tmp_path, monkeypatch):
    # One op library serves TF 2.16-2.21 (TF's C kernel API): an older TF is
    # refused with the supported range; a newer minor is tried, with a
    # warning, and a failure to load says it is untested.
    from rustfx import _loader
    monkeypatch.setattr(tf, "__version__", "2.15.1")
    with pytest.raises(ImportError, match=r"older than this rustfx supports "
                                          r"\(TensorFlow 2\.16 to 2\.21\)"):
        _loader.load()
    monkeypatch.setattr(tf, "__version__", "2.99.0")
    with pytest.warns(UserWarning, match=r"2\.99\.0 is newer than .* tested with"):
        assert _loader.load() is not None
    fake = tmp_path / "lib.so"
    fake.write_bytes(b"\0rustfx-built-against-tensorflow=2.21.0\0")
    monkeypatch.setenv(_loader.LIBRARY_ENV, str(fake))
    with pytest.raises(ImportError, match=r"failed to load in TensorFlow 2\.99\.0, newer"):
        _loader.load()
    assert _loader.built_against(_loader.library_path()) == "2.21.0"
