"""The committed PE corpus (tests/golden/pe) is what its scripts build.

The thrember golden vectors were computed on these exact bytes, so the
scripts that made them must still make them: the derived, directory and
resource cases (standard library only) always; the MinGW-built files only
where the cross compilers are installed (`make pe-corpus` installs them and
runs the same check), else that part is skipped.
"""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def check(script):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "pe", script), "--check"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert " 0 differences" in out.stdout, out.stdout


@pytest.mark.parametrize("script", ["build_directory_cases.py", "build_resource_cases.py"])
def test_patched_cases_are_rebuilt_byte_for_byte(script):
    check(script)


def test_mingw_built_corpus_is_rebuilt_byte_for_byte():
    if not (shutil.which("x86_64-w64-mingw32-gcc") and shutil.which("i686-w64-mingw32-gcc")):
        pytest.skip("mingw-w64 cross compilers not installed (make pe-corpus installs them)")
    check("build_corpus.py")
