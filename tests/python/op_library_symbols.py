"""The rules that say the op library calls TensorFlow only through its C
API, read from its dynamic symbols: test_op_library.py checks the x86-64
library with them, tests/aarch64/tf_cell.py the aarch64 wheel's. Standard
library only (tf_cell.py runs outside any venv)."""

import re
import subprocess

# C++ names of TF's, TSL's, Abseil's or protobuf's namespaces (mangled as
# _ZN<len><name>, also nested in templates and vtables).
CXX_TF = re.compile(r"(10tensorflow|3tsl|4absl|6google8protobuf|5Eigen)")


def dynamic_symbols(path, *flags, nm="nm"):
    """The dynamic symbols `nm -D FLAGS` lists for `path`, unversioned."""
    out = subprocess.run([nm, "-D", *flags, path], check=True, capture_output=True,
                         text=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


def tf_cxx_symbols(undefined):
    """The symbols of TF's C++ namespaces among `undefined`, sorted."""
    return sorted(s for s in undefined if s.startswith("_Z") and CXX_TF.search(s))
