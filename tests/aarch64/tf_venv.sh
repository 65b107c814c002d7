#!/usr/bin/env bash
# The aarch64 Python of `make test-aarch64-tf` and its venv, made once and
# reused (BUILD_NOTES.md, "The aarch64 TF cell"); each step is skipped when
# its result is already there, so a second run costs a few seconds.
#  1. binfmt_misc: the kernel hands aarch64 programs to qemu-aarch64-static
#     (Debian's registration, /usr/lib/binfmt.d/qemu-aarch64.conf), because
#     pip and rustfx-worker's script start aarch64 programs themselves.
#  2. An arm64 Debian 12 root (debootstrap --arch=arm64, minbase + python3 +
#     python3-venv) in $ROOT: Debian's python3:arm64 cannot be installed
#     beside the machine's own python3 (Multi-Arch: allowed, not same).
#     Its programs run with QEMU_LD_PREFIX=$ROOT (qemu looks up absolute
#     paths there first), not chrooted, so they see the checkout and /tmp.
#  3. $VENV: a venv of that Python with TensorFlow 2.20 (the newest TF with
#     an aarch64 wheel; `tensorflow`, there is no tensorflow-cpu for aarch64),
#     numpy and pytest, from PyPI.
#  4. The aarch64 rustfx wheel ($1, if given), reinstalled each run, --no-deps.
# Needs root (mount, debootstrap). Prints the venv's python.
set -euo pipefail
wheel=${1:-}
AARCH64_DIR=$(realpath -m "${AARCH64_DIR:-target/aarch64}")  # qemu needs an absolute prefix
ROOT=$AARCH64_DIR/root
VENV=$AARCH64_DIR/venv-tf2.20
TF_REQ=${TF_REQ:-tensorflow==2.20.*}
log() { echo "tf_venv: $*" >&2; }

binfmt=/proc/sys/fs/binfmt_misc
[ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt"
if [ ! -e "$binfmt/qemu-aarch64" ]; then
  log "registering qemu-aarch64 with binfmt_misc"
  cat /usr/lib/binfmt.d/qemu-aarch64.conf > "$binfmt/register"
fi

if [ ! -e "$ROOT/.rustfx-complete" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq --no-install-recommends debootstrap
  log "debootstrap --arch=arm64 into $ROOT"
  rm -rf "$ROOT"
  debootstrap --arch=arm64 --variant=minbase --include=python3,python3-venv \
    bookworm "$ROOT" http://deb.debian.org/debian >&2
  # Nothing in the root should hide the machine's /tmp (QEMU_LD_PREFIX
  # prefers the root's copy of any path that exists there).
  rm -rf "$ROOT/tmp"
  touch "$ROOT/.rustfx-complete"
fi
export QEMU_LD_PREFIX=$ROOT
# The machine's CA bundle, so pip in the root trusts what pip here trusts
# (a proxy's own CA, say): with QEMU_LD_PREFIX the root's bundle would win.
cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/certs/ca-certificates.crt"

vpy=$VENV/bin/python
if [ ! -e "$vpy" ] || ! "$vpy" -m pip --version >/dev/null 2>&1; then
  rm -rf "$VENV"
  log "python3 -m venv $VENV (aarch64, under qemu)"
  "$ROOT/usr/bin/python3" -m venv "$VENV"
fi
if ! "$vpy" -m pip show tensorflow pytest >/dev/null 2>&1; then
  log "pip install $TF_REQ numpy pytest (aarch64, under qemu)"
  "$vpy" -m pip install --disable-pip-version-check --progress-bar off -q "$TF_REQ" numpy pytest >&2
fi
if [ -n "$wheel" ]; then
  log "pip install --force-reinstall --no-deps $wheel"
  "$vpy" -m pip install --disable-pip-version-check -q --force-reinstall --no-deps "$wheel" >&2
fi
echo "$vpy"
