"""Build-time parts of the rustfx wheel (the rest is in pyproject.toml).

The op library is C++ kernels + the Rust core in one cdylib
(`cargo build --features tensorflow`), compiled against the TensorFlow
importable here (the build environment's). Two things depend on that TF and
are computed here: the wheel's TensorFlow requirement, pinned to its minor
version (the C++ kernel ABI changes between minors), and TF's
_GLIBCXX_USE_CXX11_ABI flag, which the cxx runtime only sees via CXXFLAGS.
"""

import importlib.metadata
import os
import sys

import tensorflow as tf
from setuptools import setup
from setuptools_rust import Binding, RustExtension


def tensorflow_requirement():
    """`<dist>>=X.Y,<X.(Y+1)` for the TF distribution installed here
    (tensorflow-cpu or tensorflow), or $RUSTFX_TF_REQUIREMENT."""
    if os.environ.get("RUSTFX_TF_REQUIREMENT"):
        return os.environ["RUSTFX_TF_REQUIREMENT"]
    major, minor = (int(x) for x in tf.__version__.split(".")[:2])
    for dist in ("tensorflow-cpu", "tensorflow", "tensorflow-intel"):
        try:
            importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
        return f"{dist}>={major}.{minor},<{major}.{minor + 1}"
    return f"tensorflow>={major}.{minor},<{major}.{minor + 1}"


abi = [f for f in tf.sysconfig.get_compile_flags() if "CXX11_ABI" in f]
os.environ["CXXFLAGS"] = " ".join([os.environ.get("CXXFLAGS", "")] + abi).strip()
# build.rs asks this Python for TF's flags and version.
os.environ["PYTHON"] = sys.executable
# The release profile keeps debug info for profiling; a wheel does not need it.
os.environ.setdefault("CARGO_PROFILE_RELEASE_DEBUG", "0")

setup(
    install_requires=[tensorflow_requirement(), "numpy"],
    rust_extensions=[
        RustExtension(
            "rustfx._rustfx_ops",
            path="Cargo.toml",
            binding=Binding.NoBinding,
            features=["tensorflow"],
        ),
        # The same core with no TensorFlow linked: its C ABI (src/c_abi.rs)
        # for the Ray corpus workers, which then do not import TF.
        RustExtension(
            "rustfx._rustfx_core",
            path="Cargo.toml",
            binding=Binding.NoBinding,
        ),
    ],
    zip_safe=False,
)
