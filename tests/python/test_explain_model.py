"""Explaining a model's output in the file's bytes: rustfx.explain_model
(Keras, gradient x input and integrated gradients), the mapping of
LightGBM's SHAP values (rustfx_core.attribution) and the reports
(rustfx_core.report), the HTML one rendered by a real browser."""

import os
import shutil
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

import rustfx_core
from rustfx_core import attribution, report

# A document whose weighted byte ("<") is not its most frequent one ("a"),
# with a hostile string for the escaping checks.
DOC = b"aaaaaaaa<script>alert(1)</script>aaaa&amp;\x00\xff" * 4
WEIGHTED, WEIGHT, OTHER, OTHER_WEIGHT = ord("<"), 5.0, ord("a"), -0.5


def histogram_model():
    """ByteHistogram -> Dense(1) with fixed weights: the output is
    sum_b w[b] * count_b / len, so gradient x input at byte b is
    w[b] * count_b / len."""
    import keras
    import rustfx
    contents = keras.Input((), dtype="string")
    dense = keras.layers.Dense(1, use_bias=False)
    model = keras.Model(contents, dense(rustfx.layers.ByteHistogram()(contents)))
    weights = np.zeros((256, 1), np.float32)
    weights[WEIGHTED], weights[OTHER] = WEIGHT, OTHER_WEIGHT
    dense.set_weights([weights])
    return model


def expected_score(byte):
    weight = {WEIGHTED: WEIGHT, OTHER: OTHER_WEIGHT}[byte]
    return weight * DOC.count(bytes([byte])) / len(DOC)


@pytest.mark.parametrize("method", ["grad_x_input", "integrated_gradients"])
def test_keras_histogram_attribution_is_analytic(method):
    import rustfx
    result = rustfx.explain_model(histogram_model(), DOC, method=method, steps=8)
    top = result.top(2)
    # The weighted byte first, at its first offset, with w * count / len.
    assert top.loc[0, "index"] == WEIGHTED and top.loc[0, "offset"] == DOC.index(b"<")
    assert top.loc[0, "score"] == pytest.approx(expected_score(WEIGHTED), rel=1e-5)
    assert top.loc[1, "index"] == OTHER
    assert top.loc[1, "score"] == pytest.approx(expected_score(OTHER), rel=1e-5)
    # A linear model: the scores add up to the output (base 0 for IG).
    assert result.total == pytest.approx(result.output, rel=1e-5)
    assert result.base in (None, pytest.approx(0.0))


def test_keras_logit_of_a_sigmoid_is_linear_in_the_histogram():
    """Dense(1, sigmoid): the logit is the linear part, so its gradient x
    input is w[b] * count_b / len, however saturated the probability."""
    import keras
    import rustfx
    model = histogram_model()
    probability = keras.Model(model.input, keras.activations.sigmoid(model.output * 100.0))
    result = rustfx.explain_model(probability, DOC, score="logit")
    top = result.top(2)
    assert result.prediction[0] > 0.99 and top.loc[0, "index"] == WEIGHTED
    assert top.loc[0, "score"] == pytest.approx(100 * expected_score(WEIGHTED), rel=1e-3)
    assert result.total == pytest.approx(result.output, rel=1e-3)


def test_keras_byte_offsets_share_the_score_per_occurrence():
    import rustfx
    result = rustfx.explain_model(histogram_model(), DOC, byte_offsets=True, top_k=1000)
    spans = result.top()
    weighted = spans[spans["index"] == WEIGHTED]
    # Every "<" is a span with an equal share: score * |value| / sum |values|.
    assert sorted(weighted["offset"]) == [i for i, b in enumerate(DOC) if b == WEIGHTED]
    np.testing.assert_allclose(weighted["score"], expected_score(WEIGHTED) / len(weighted),
                               rtol=1e-5)


def test_keras_nested_model_and_target_class():
    """A rustfx layer inside a softmax classifier: the explained column is
    the predicted class, and a nested model's layers are found."""
    import keras
    import rustfx
    keras.utils.set_random_seed(1)
    contents = keras.Input((), dtype="string")
    head = keras.Sequential([keras.Input((256,)), keras.layers.Dense(3, activation="softmax")])
    model = keras.Model(contents, head(rustfx.layers.ByteHistogram()(contents)))
    result = rustfx.explain_model(model, DOC, labels=["x", "y", "z"])
    assert result.target == int(np.argmax(result.prediction))
    assert result.label == "xyz"[result.target]
    assert len(result.top()) > 0 and len(rustfx.explain_model.__module__) > 0
    with pytest.raises(ValueError, match="method"):
        rustfx.explain_model(model, DOC, method="saliency")


# ---- LightGBM: SHAP values mapped to bytes (no TensorFlow) ------------------------


def test_lightgbm_shap_maps_to_byte_spans():
    lightgbm = pytest.importorskip("lightgbm", reason="LightGBM is not installed")
    rng = np.random.default_rng(0)
    spec = rustfx_core.FeatureSpec("byte_histogram")
    docs = [bytes(rng.integers(0, 256, rng.integers(50, 400)).astype(np.uint8)) for _ in range(120)]
    x = np.asarray(rustfx_core.extract(spec, docs))
    y = (x[:, WEIGHTED] > np.median(x[:, WEIGHTED])).astype(int)
    booster = lightgbm.train({"objective": "binary", "num_leaves": 4, "verbose": -1,
                              "min_data_in_leaf": 5}, lightgbm.Dataset(x, y), 10)
    row = np.asarray(rustfx_core.extract(spec, [DOC]))
    shap = booster.predict(row, pred_contrib=True)[0]
    raw = booster.predict(row, raw_score=True)[0]
    # LightGBM's own property: per-feature contributions plus the expected
    # value (last column) sum to the raw score.
    assert shap.sum() == pytest.approx(raw, abs=1e-9)
    spans, notes = attribution.explain_scores(spec, DOC, shap[:-1], byte_offsets=True)
    assert not notes
    # The mapping keeps each feature's total.
    totals = spans.groupby("index")["score"].sum()
    for index, value in enumerate(shap[:-1]):
        assert totals.get(index, 0.0) == pytest.approx(value, abs=1e-12)
    result = attribution.Attribution(spans=spans, output=raw, prediction=np.array([raw]),
                                     method="shap", base=shap[-1], size=len(DOC),
                                     contents=DOC)
    assert result.base + result.total == pytest.approx(raw)
    assert shap[WEIGHTED] != 0 and (result.top(300)["index"] == WEIGHTED).any()


def test_attribution_and_reports_import_no_tensorflow():
    code = ("import sys, rustfx_core.attribution, rustfx_core.report; "
            "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_unexplained_scores_are_kept_as_unmapped_rows():
    explanation = attribution.spans(None, np.array([0.0, 2.0, -1.0]), source="x")
    assert list(explanation["offset"]) == [-1, -1] and explanation["score"].sum() == 1.0


# ---- Reports --------------------------------------------------------------------


def hostile_attribution():
    """A hand-made attribution: spans with hostile texts, one positive and
    one negative, so both colours show."""
    import pandas as pd
    hostile = b'\x1b[2J<script>alert("x")</script>&<img src=x onerror=alert(1)>'
    explanation = pd.DataFrame({
        "feature": ["strings_<b>bold</b>", "byte_histogram"], "index": [0, 1],
        "offset": [DOC.index(b"<script>"), 0], "length": [8, 8], "value": [1.0, 1.0],
        "text": [hostile, b""]})
    spans = attribution.spans(explanation, np.array([0.75, -0.5]), source="<i>layer</i>")
    return attribution.Attribution(spans=spans, output=0.25, prediction=np.array([0.25]),
                                   method="test", size=len(DOC), path="/tmp/<evil>.exe",
                                   contents=DOC, notes=["a <note>"])


def test_text_report_lists_the_top_spans():
    text = report.text_report(hostile_attribution())
    # Terminal control bytes are escaped, never printed.
    assert "0x00000008" in text and "\x1b" not in text and "\\x1b[2J" in text
    assert "strings_<b>bold</b>" in text and "+0.75" in text and "-0.5" in text


def test_html_report_escapes_everything():
    page = report.html_report(hostile_attribution())
    assert "<script" not in page.lower() and "<img" not in page and "<evil>" not in page
    assert "&lt;script&gt;" in page and "&lt;b&gt;bold&lt;/b&gt;" in page
    assert "&lt;i&gt;layer&lt;/i&gt;" in page and "a &lt;note&gt;" in page
    assert "default-src 'none'" in page


def test_html_report_of_a_large_file_is_bounded():
    import pandas as pd
    contents = bytes(range(256)) * 4096  # 1 MiB
    explanation = pd.DataFrame({"feature": ["f"] * 3, "index": [0, 1, 2],
                                "offset": [10, 500_000, 1_000_000], "length": [4, 300_000, 1],
                                "value": [1.0] * 3, "text": [b""] * 3})
    spans = attribution.spans(explanation, np.array([1.0, -2.0, 0.5]))
    result = attribution.Attribution(spans=spans, output=0.0, prediction=np.zeros(1),
                                     method="test", contents=contents)
    page = report.html_report(result, max_rows=64)
    assert page.count('<span class="off"') <= 64 and len(page) < 200_000
    for offset in (10, 500_000, 1_000_000):
        assert f"{offset - offset % 16:08x}</span>" in page
    assert "bytes not shown" in page


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB/RGBA PNG,
    decoded with zlib (the five PNG filters)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert depth == 8 and color in (2, 6), (depth, color)
    channels = 3 if color == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    previous, rows, i = bytearray(stride), [], 0
    for _ in range(height):
        kind, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b, c = previous[x], previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, channels)])
        previous = line
    return width, height, rows


def test_html_report_renders_its_colours_in_chromium(tmp_path):
    browser = chromium()
    if browser is None:
        pytest.skip("chromium is not installed (`make chromium` installs it)")
    page, shot = tmp_path / "report.html", tmp_path / "shot.png"
    report.write_html(hostile_attribution(), str(page))
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                           f"--screenshot={shot}", "--window-size=1200,900",
                           page.as_uri()], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert shot.exists(), proc.stderr[-2000:]
    _, _, rows = png_pixels(str(shot))

    def bands(rgb, tolerance=6):
        """The runs of screen rows where the colour shows (at least 20 px)."""
        hit = [sum(all(abs(p - q) <= tolerance for p, q in zip(px, rgb)) for px in row) >= 20
               for row in rows]
        return sum(1 for y, h in enumerate(hit) if h and (y == 0 or not hit[y - 1]))
    # The largest positive span has the full red, the negative one (two
    # thirds of it: level 4 of 5) its blue. Each shows in the legend, both
    # tables and the hex view: four bands of rows (three would do: the
    # legend's two lines may merge with nothing else).
    red, blue = report.level_rgb(report.LEVELS, True), report.level_rgb(4, False)
    assert bands(red) >= 3, "the top span's colour does not show beyond the legend"
    assert bands(blue) >= 3, "the negative span's colour does not show beyond the legend"
