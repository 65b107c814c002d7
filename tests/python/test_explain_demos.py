"""The analyst's job end to end: the two explain examples on a real PE file
print the top spans behind the model's score, each span holds the bytes
its text names (an import's name at its offset), and the HTML report
renders its highlights in a real browser."""

import os
import re
import subprocess
import sys

import pytest

from test_explain_model import chromium, png_pixels

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PE = os.path.join(ROOT, "tests", "golden", "pe", "launchers", "distlib_t32.exe")
# A span line of rustfx_core.report.text_report: score, offset, length,
# feature, text.
SPAN = re.compile(r"^\s+([+-][0-9.e+-]+)\t0x([0-9a-f]+)\t(\d+)\t(\S+)\t(.*)$")


def run_demo(script, *args):
    run = subprocess.run([sys.executable, os.path.join(ROOT, "python", "demo", script), PE,
                          *args], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")})
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def check_spans(stdout):
    """The report's spans lie in the file, and an import's text names the
    bytes at its offset (thrember hashes `dll:function`)."""
    data = open(PE, "rb").read()
    spans = [SPAN.match(line) for line in stdout.splitlines()]
    spans = [m.groups() for m in spans if m]
    assert len(spans) >= 10, stdout
    imports = 0
    for score, offset, length, feature, text in spans:
        offset, length = int(offset, 16), int(length)
        assert offset + length <= len(data), (offset, length)
        named = re.fullmatch(r'"[a-z0-9_.-]+\.dll:([A-Za-z0-9_]+)"', text)
        if named and feature.startswith("imports_"):
            assert data[offset:offset + length] == named.group(1).encode(), text
            imports += 1
    return spans, imports


def check_renders(page, tmp_path):
    browser = chromium()
    if browser is None:
        pytest.skip("chromium is not installed (`make chromium` installs it)")
    shot = tmp_path / "shot.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                    f"--screenshot={shot}", "--window-size=1200,1400", f"file://{page}"],
                   capture_output=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    _, _, rows = png_pixels(str(shot))
    # Highlighted bytes: saturated red or blue cells, far from the page's
    # white, grey and black.
    coloured = sum(1 for row in rows for r, g, b in row
                   if max(r, g, b) - min(r, g, b) > 60)
    assert coloured > 2000, f"{coloured} coloured pixels in the screenshot"


def test_keras_classifier_explains_a_pe_file(tmp_path):
    page = tmp_path / "keras.html"
    stdout = run_demo("explain_file.py", "--retrain", "--html", str(page))
    assert "grad_x_input" in stdout and "prediction:" in stdout
    _, imports = check_spans(stdout)
    # The EMBER2024 vector of a launcher: its imports are among the top
    # 15 spans of a model trained on PE vs ELF vs scripts.
    assert imports >= 1, stdout
    check_renders(page, tmp_path)


def test_lightgbm_shap_explains_a_pe_file(tmp_path):
    page = tmp_path / "lightgbm.html"
    stdout = run_demo("explain_ember_lightgbm.py", "--model", str(tmp_path / "none.txt"),
                      "--html", str(page))
    assert "pred_contrib" in stdout
    check_spans(stdout)
    check_renders(page, tmp_path)
