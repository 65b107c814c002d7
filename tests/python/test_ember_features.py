"""ember_features (EMBER2024, thrember feature version 3) through the op.

tests/golden/thrember_pe.tsv holds thrember's own vectors for the PE corpus
in tests/golden/pe (tests/pe/README.md says how both were made). The Rust
test crates/rustfx/src/ember2024/tests.rs checks the core against it group by group and
lists the few known differences with their reasons; here the op must give
exactly the pure-Rust program's rows (so the same known differences, no
other), and everything a user touches is checked: names, groups, shapes,
tf.data, errors. With THREMBER_PYTHON set to a Python that can import
thrember (see ../shared/oracles/thrember/README.md), the goldens are
regenerated live and must equal the committed file.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import rustfx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "golden", "pe")
GOLDEN = os.path.join(ROOT, "tests", "golden", "thrember_pe.tsv")
RUST_CLI = os.path.join(ROOT, "target", "release", "rustfx-features")
THREMBER = os.path.join(ROOT, "..", "shared", "oracles", "thrember")
GROUPS = ["general", "histogram", "byteentropy", "strings", "header", "section",
          "imports", "exports", "datadirectories", "richheader", "authenticode",
          "pefilewarnings"]
WIDTHS = [7, 256, 256, 177, 74, 224, 1282, 129, 34, 33, 8, 88]


def golden():
    rows = []
    with open(GOLDEN) as f:
        for line in f:
            if line.startswith("#"):
                continue
            path, _sha, *groups, _warnings = line.rstrip("\n").split("\t")
            rows.append((path, groups))
    return rows


ROWS = golden()
PATHS = [os.path.join(CORPUS, p) for p, _ in ROWS]


def contents():
    out = []
    for p in PATHS:
        with open(p, "rb") as f:
            out.append(f.read())
    return out


def bits(x):
    return np.ascontiguousarray(x, np.float32).view(np.uint32)


def group_bits(text):
    return np.array([int(v, 16) for v in text.split(",")], np.uint32)


@pytest.fixture(scope="module")
def op_rows():
    return rustfx.ember_features(tf.constant(contents())).numpy()


def test_op_equals_the_pure_rust_program_on_the_corpus(op_rows):
    out = subprocess.run([RUST_CLI, "ember_features", "feature_version=3", *PATHS],
                         check=True, capture_output=True, text=True).stdout
    cli = np.array([[float(v) for v in line.split()[-2568:]]
                    for line in out.splitlines()], np.float32)
    assert op_rows.shape == cli.shape == (len(PATHS), 2568)
    np.testing.assert_array_equal(bits(op_rows), bits(cli))


def test_op_equals_thrember_on_almost_every_group(op_rows):
    """The exact list of differences is crates/rustfx/src/ember2024/tests.rs's; here,
    their number, so the op cannot drift from the core unnoticed."""
    same = differ = 0
    for (path, groups), row in zip(ROWS, op_rows):
        if groups[0].startswith("crash:"):
            # thrember fails on the whole file; rustfx: not a PE.
            assert row[2] == 0 and (row[696:] == 0).all(), path
            continue
        offset = 0
        for name, width, want in zip(GROUPS, WIDTHS, groups):
            ours = row[offset:offset + width]
            offset += width
            if want.startswith("error:"):
                assert (ours == 0).all(), (path, name)
                continue
            if np.array_equal(bits(ours), group_bits(want)):
                same += 1
            else:
                differ += 1
    # thrember fails on a file or a group in a handful of cases (skipped
    # above); every other group is compared.
    assert same + differ >= 12 * len(ROWS) - 16 and differ <= 4, (same, differ)


def test_names_and_groups(op_rows):
    names = rustfx.ember_feature_names()
    assert len(names) == 2568 == len(set(names))
    assert names[2] == "general_is_pe" and names[-1] == "pefilewarnings_count"
    offset = 0
    data = contents()[:4]
    for group, width in zip(GROUPS, WIDTHS):
        alone = rustfx.ember_features(data, groups=[group]).numpy()
        assert alone.shape == (4, width)
        np.testing.assert_array_equal(bits(alone), bits(op_rows[:4, offset:offset + width]))
        group_names = rustfx.ember_feature_names(groups=[group])
        assert group_names == names[offset:offset + width]
        assert all(n.startswith(group + "_") for n in group_names)
        offset += width
    two = rustfx.ember_features(data, groups=["exports", "header"]).numpy()
    assert two.shape == (4, 129 + 74)
    np.testing.assert_array_equal(two[:, :129], op_rows[:4, 2276:2405])
    np.testing.assert_array_equal(two[:, 129:], op_rows[:4, 696:770])


def test_shapes_tf_data_and_graph():
    data = contents()[:6]
    grid = tf.reshape(tf.constant(data), [2, 3])
    assert rustfx.ember_features(grid).shape == (2, 3, 2568)
    assert rustfx.ember_features(tf.constant(b"")).shape == (2568,)
    eager = rustfx.ember_features(data).numpy()
    ds = (tf.data.Dataset.from_tensor_slices(data).batch(4)
          .map(rustfx.ember_features, num_parallel_calls=2))
    np.testing.assert_array_equal(np.concatenate([b.numpy() for b in ds]), eager)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def header(x):
        return rustfx.ember_features(x, groups=["header"])
    assert header.get_concrete_function().structured_outputs.shape.as_list() == [None, 74]


def test_non_pe_files_get_zeros_in_the_pe_groups():
    x = rustfx.ember_features([b"", b"plain text, not a PE", b"MZ" + bytes(100)]).numpy()
    assert (x[0] == 0).all()
    assert (x[:, 2] == 0).all(), "is_pe"
    assert (x[:, 696:] == 0).all()


@pytest.mark.parametrize("kwargs,message", [
    (dict(feature_version=2), "feature_version must be 3"),
    (dict(groups=["headers"]), "group must be one of general, histogram"),
    (dict(groups=["header", "header"]), "groups must be distinct"),
    (dict(groups="header"), "groups must be a list"),
])
def test_bad_parameters_fail_with_what_is_allowed(kwargs, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        rustfx.ember_features([b"x"], **kwargs)


def test_goldens_are_thrembers_own_output_live():
    python = os.environ.get("THREMBER_PYTHON")
    if not python or not os.path.isdir(THREMBER):
        pytest.skip("set THREMBER_PYTHON to a Python that imports thrember "
                    "(../shared/oracles/thrember/README.md)")
    out = subprocess.run([python, os.path.join(ROOT, "tests", "golden", "generate_thrember_pe.py"),
                          THREMBER], check=True, capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONHASHSEED": "0"}).stdout
    with open(GOLDEN) as f:
        assert out == f.read()


def test_ember_classifier_example_trains_and_exports():
    """python/demo/train_ember_classifier.py, small: it trains on ember
    vectors computed in tf.data, beats chance (4 kinds) by far, and its
    exported model (extraction included) reloads and agrees."""
    script = os.path.join(ROOT, "python", "demo", "train_ember_classifier.py")
    out = subprocess.run([sys.executable, script, "--per-kind", "60",
                          "--epochs", "8"], check=True, capture_output=True, text=True).stdout
    accuracy = float(out.split("held-out accuracy: ")[1].split()[0])
    assert accuracy > 0.6, out
    assert "the reloaded model agrees" in out, out


def numpy_histograms(data, window=2048, step=1024):
    """thrember's histogram and byteentropy groups, written with numpy as
    its definition does: float32 counts, numpy's float32 sum, float32
    division."""
    a = np.frombuffer(data, dtype=np.uint8)
    counts = np.bincount(a, minlength=256).astype(np.float32)
    histogram = counts / counts.sum()
    grid = np.zeros((16, 16), dtype=np.int32)
    shape = (a.shape[0] - window + 1, window)
    blocks = np.lib.stride_tricks.as_strided(a, shape=shape, strides=(1, 1))[::step, :]
    for block in blocks:
        c = np.bincount(block >> 4, minlength=16)
        p = c.astype(np.float32) / window
        wh = np.where(c)[0]
        h = np.sum(-p[wh] * np.log2(p[wh])) * 2
        grid[min(int(h * 2), 15), :] += c
    g = grid.flatten().astype(np.float32)
    return histogram, g / g.sum()


def test_histograms_follow_numpys_float32_sums_on_large_files():
    """Past 2^24 counts numpy's float32 sum rounds: ember_features follows
    thrember's numpy arithmetic there (byte_histogram divides by the exact
    sum, so the two differ, which shows the case is exercised)."""
    # 2^25 + 1 zeros (a count float32 cannot hold: numpy rounds it) and
    # every other byte value three times, then 64 KiB of random bytes.
    rng = np.random.default_rng(5)
    data = (bytes((1 << 25) + 1) + bytes(range(1, 256)) * 3
            + rng.integers(0, 256, 1 << 16).astype(np.uint8).tobytes())
    histogram, byteentropy = numpy_histograms(data)
    ours = rustfx.ember_features([data], groups=["histogram", "byteentropy"]).numpy()[0]
    np.testing.assert_array_equal(bits(ours[:256]), bits(histogram))
    np.testing.assert_array_equal(bits(ours[256:]), bits(byteentropy))
    exact = rustfx.byte_histogram([data]).numpy()[0]
    assert (bits(exact) != bits(histogram)).any()
