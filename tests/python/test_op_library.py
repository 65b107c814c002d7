"""The op library calls TensorFlow only through its C API, the proof that one
build loads into every TF minor it supports (BUILD_NOTES.md, "One op library
for every TensorFlow"): its undefined dynamic symbols are TF's `TF_*` C
functions, every one exported by the running TF, and the C and C++
runtimes', never a `tensorflow::`, `tsl::`, Abseil or protobuf symbol."""

import os
import re
import shutil

import pytest
import tensorflow as tf

from op_library_symbols import dynamic_symbols, tf_cxx_symbols
from rustfx import _loader

NM = shutil.which("nm")


@pytest.mark.skipif(NM is None, reason="nm (binutils) is not installed")
def test_only_tf_c_api_symbols_from_tensorflow():
    undefined = dynamic_symbols(_loader.library_path(), "--undefined-only")
    tf_symbols = {s for s in undefined if s.startswith("TF_")}
    assert "TF_NewKernelBuilder" in tf_symbols and "TF_AllocateOutput" in tf_symbols
    # No C++ name of TF's, TSL's, Abseil's or protobuf's namespaces.
    assert tf_cxx_symbols(undefined) == []
    # Everything else is the C library, libm, libgcc or the C++ runtime
    # (std::, __cxa_*, operator new/delete), or Rust's std's weak imports.
    allowed = re.compile(r"^(TF_|_ZN?St|_ZdlPv|_ZdaPv|_Znwm|_Znam|_ZTI|_ZTV|_ZTS|__cxa_|"
                         r"__gxx_|_Unwind_|__[a-z_]+|[a-z_][a-z0-9_]*$|_ITM_|_Jv_)")
    assert sorted(s for s in undefined if not allowed.match(s)) == []
    # Each TF_* symbol is exported by the TF running here: the library
    # resolves in this TF whatever TF it was compiled against.
    framework = os.path.join(tf.sysconfig.get_lib(), "libtensorflow_framework.so.2")
    missing = tf_symbols - dynamic_symbols(framework, "--defined-only")
    assert missing == set(), f"not exported by TF {tf.__version__}: {sorted(missing)}"
