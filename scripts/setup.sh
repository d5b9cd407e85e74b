#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine and builds skinnylt (release).
# Needs: cargo (rustup). Installs: clang-22, lld-22, llvm-22 (kernels and their
# audit), cmake, a C/C++ compiler, pkg-config, dpkg-dev, rpm, cpio (C tests, packages).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
for p in clang-22 lld-22 llvm-22 cmake gcc g++ make pkg-config dpkg-dev rpm cpio valgrind; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
command -v cargo >/dev/null || { echo "skinnylt needs cargo: https://rustup.rs"; exit 1; }
cargo build --release --locked
