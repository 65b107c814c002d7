#!/usr/bin/env bash
# The aarch64 cross toolchain and its runner (BUILD_NOTES.md, "aarch64"),
# installed from Debian only where missing, so a second run costs nothing:
# - rustc-web: Debian's rustc 1.96 (/usr/bin/rustc). rustup has no aarch64
#   standard library to download here; Debian packages one for its rustc.
# - libstd-rust-web-dev:arm64: that aarch64 standard library (multiarch, after
#   `dpkg --add-architecture arm64`).
# - qemu-user-static and libc6:arm64: run the dynamically linked aarch64
#   programs on this x86-64 machine (make test-aarch64).
# Needs root (apt-get); one `apt-get update`, then one install of what is missing.
set -euo pipefail
pkgs=(rustc-web libstd-rust-web-dev:arm64 qemu-user-static libc6:arm64)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "aarch64 toolchain: installing ${missing[*]}"
dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
