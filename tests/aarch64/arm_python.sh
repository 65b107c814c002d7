#!/usr/bin/env bash
# The aarch64 Python of the aarch64 cell (`make test-aarch64`; BUILD_NOTES.md,
# "The aarch64 cell"): Debian 12's CPython 3.11 for arm64 with TensorFlow
# 2.20, run by qemu-user, made without running anything under qemu, so a
# cold start takes about a minute, not the 11 of a debootstrap root with pip
# under qemu. Each part is kept and skipped when it is already there:
#  1. binfmt_misc: the kernel hands aarch64 programs to qemu-aarch64-static
#     (Debian's registration, /usr/lib/binfmt.d/qemu-aarch64.conf), for the
#     programs that aarch64 Python starts itself (sys.executable).
#  2. $ROOT: the arm64 .debs of python3.11-minimal, its standard library and
#     the libraries they and TF load, fetched by `apt-get download` and
#     unpacked by `dpkg -x` (nothing configured, nothing run). Not multiarch:
#     python3.11:arm64 is `Multi-Arch: allowed`, so apt would replace the
#     machine's x86-64 Python with it.
#  3. $TF_SITE: TensorFlow 2.20 (the newest TF with an aarch64 wheel;
#     `tensorflow`, there is no tensorflow-cpu for aarch64), numpy and
#     pytest, installed by this machine's pip for the other CPU (--platform
#     manylinux aarch64, --only-binary): wheels are only unpacked.
#  4. $RUSTFX_SITE: the aarch64 rustfx wheel ($1, if given), each run.
#  5. $BIN/python: runs that Python with QEMU_LD_PREFIX=$ROOT (qemu looks up
#     absolute paths in $ROOT first: the loader, libc, the standard library)
#     and both sites on PYTHONPATH.
# Needs root (mount) and the toolchain's qemu-user-static
# (tests/aarch64/toolchain.sh). Prints $BIN/python.
set -euo pipefail
wheel=${1:-}
AARCH64_DIR=$(realpath -m "${AARCH64_DIR:-target/aarch64}")  # qemu needs an absolute prefix
ROOT=$AARCH64_DIR/py-root
TF_SITE=$AARCH64_DIR/tf2.20-site
RUSTFX_SITE=$AARCH64_DIR/rustfx-site
BIN=$AARCH64_DIR/bin
TF_REQ=${TF_REQ:-tensorflow==2.20.*}
HOST_PYTHON=${HOST_PYTHON:-.venv/bin/python}
log() { echo "arm_python: $*" >&2; }

binfmt=/proc/sys/fs/binfmt_misc
[ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt"
if [ ! -e "$binfmt/qemu-aarch64" ]; then
  log "registering qemu-aarch64 with binfmt_misc"
  cat /usr/lib/binfmt.d/qemu-aarch64.conf > "$binfmt/register"
fi

# python3.11-minimal's and libpython3.11-stdlib's dependencies (apt-cache
# depends --recurse), libstdc++ and libgcc for TF, and the C library.
PACKAGES="python3.11-minimal libpython3.11-minimal libpython3.11-stdlib libssl3 libexpat1
  zlib1g libbz2-1.0 libcrypt1 libdb5.3 libffi8 liblzma5 libncursesw6 libnsl2 libreadline8
  libsqlite3-0 libtinfo6 libtirpc3 libuuid1 libgssapi-krb5-2 libk5crypto3 libkeyutils1
  libkrb5-3 libkrb5support0 libcom-err2 libstdc++6 libgcc-s1 libc6"
if [ "$(cat "$ROOT/.rustfx-packages" 2>/dev/null)" != "$PACKAGES" ]; then
  log "arm64 Python: apt-get download and dpkg -x into $ROOT"
  rm -rf "$ROOT" && mkdir -p "$ROOT/.debs"
  (cd "$ROOT/.debs" && apt-get download -qq $(for p in $PACKAGES; do echo "$p:arm64"; done) \
    2> >(grep -v "unsandboxed" >&2))
  for deb in "$ROOT"/.debs/*.deb; do dpkg -x "$deb" "$ROOT"; done
  rm -rf "$ROOT/.debs" "$ROOT/tmp"  # the root's /tmp would hide the machine's
  echo "$PACKAGES" > "$ROOT/.rustfx-packages"
fi

if [ "$(cat "$TF_SITE/.rustfx-req" 2>/dev/null)" != "$TF_REQ" ]; then
  log "pip install $TF_REQ numpy pytest for aarch64 CPython 3.11 into $TF_SITE"
  rm -rf "$TF_SITE"
  "$HOST_PYTHON" -m pip install --disable-pip-version-check --progress-bar off -q \
    --target "$TF_SITE" --only-binary=:all: --implementation cp --python-version 3.11 \
    --abi cp311 --platform manylinux2014_aarch64 --platform manylinux_2_17_aarch64 \
    --platform manylinux_2_28_aarch64 "$TF_REQ" numpy pytest 2> >(grep -v \
    -e "dependency resolver does not currently" -e "which is incompatible" >&2)
  echo "$TF_REQ" > "$TF_SITE/.rustfx-req"
fi

if [ -n "$wheel" ]; then
  log "unpacking $wheel into $RUSTFX_SITE"
  rm -rf "$RUSTFX_SITE"
  "$HOST_PYTHON" -m pip install --disable-pip-version-check -q --no-deps --target \
    "$RUSTFX_SITE" --platform manylinux2014_aarch64 --only-binary=:all: "$wheel" >&2
fi

mkdir -p "$BIN"
cat > "$BIN/python" <<EOF
#!/bin/sh
# aarch64 CPython 3.11 under qemu-user (tests/aarch64/arm_python.sh)
export QEMU_LD_PREFIX="$ROOT"
export PYTHONPATH="$RUSTFX_SITE:$TF_SITE\${PYTHONPATH:+:\$PYTHONPATH}"
exec qemu-aarch64-static "$ROOT/usr/bin/python3.11" "\$@"
EOF
chmod +x "$BIN/python"
echo "$BIN/python"
