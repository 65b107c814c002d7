"""Build-time parts of the rustfx wheel (the rest is in pyproject.toml).

One wheel for every supported TensorFlow and CPython (BUILD_NOTES.md,
"Wheels"): the op library calls TF only through its C API and neither
library uses the Python C API (both are loaded with tf.load_op_library or
ctypes, never imported), so the wheel is tagged py3-none-<platform>, and it
requires no TensorFlow distribution (any one it named would replace the
user's tensorflow, tensorflow-cpu or tf-nightly). `make wheel` builds it
with zig for glibc 2.17 and gives it the manylinux2014 tag.

build.rs asks the TF importable here for its C API headers (any TF from
2.16 on has them; the build environment's).
"""

import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools_rust import Binding, RustBin, RustExtension

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel

# The two libraries: loaded, never imported as Python modules.
RUST_LIBS = ("rustfx._rustfx_ops", "rustfx_core._rustfx_core")


class build_ext_plain_so(build_ext):
    """Names the Rust libraries `_rustfx_ops.so` / `_rustfx_core.so`, not
    `<name>.cpython-311-x86_64-linux-gnu.so`: no Python version is in them."""

    def get_ext_filename(self, fullname):
        # distutils' get_ext_fullpath passes the last component only.
        if fullname in RUST_LIBS or fullname in [n.rsplit(".", 1)[1] for n in RUST_LIBS]:
            return os.path.join(*fullname.split(".")) + ".so"
        return super().get_ext_filename(fullname)


class bdist_wheel_py3_none(bdist_wheel):
    """Tags the wheel py3-none-<platform> (auditwheel then sets the
    manylinux platform)."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


# build.rs asks this Python for TF's include directory and version.
os.environ["PYTHON"] = sys.executable
# The release profile keeps debug info for profiling; a wheel does not need it.
os.environ.setdefault("CARGO_PROFILE_RELEASE_DEBUG", "0")

setup(
    cmdclass={"build_ext": build_ext_plain_so, "bdist_wheel": bdist_wheel_py3_none},
    rust_extensions=[
        # The op library: the workspace's root package (cpp/, src/bridge.rs).
        RustExtension(
            "rustfx._rustfx_ops",
            path="Cargo.toml",
            binding=Binding.NoBinding,
        ),
        # The core's C ABI (crates/rustfx-capi), no TensorFlow linked: for
        # python/rustfx_core (specs, numpy extraction, the corpus workers).
        RustExtension(
            "rustfx_core._rustfx_core",
            path="crates/rustfx-capi/Cargo.toml",
            binding=Binding.NoBinding,
        ),
        # The pure-Rust CLI (no TF), installed as a script.
        RustBin("rustfx-features", path="crates/rustfx-features/Cargo.toml"),
    ],
    zip_safe=False,
)
