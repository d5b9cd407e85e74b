#!/usr/bin/env bash
# Builds libskinnylt.so (release), then builds and runs the C tests in ctest/
# with CMake + CTest. Usage, from anywhere: bash ctest/run.sh
# Needs gcc, g++, cmake (and cargo, unless target/release/libskinnylt.so exists).
# SKINNYLT_INCLUDE=<dir> overrides where skinnylt.h is taken from (default include/).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
lib="$target/release/libskinnylt.so"
build="$root/target/ctest-build"
include="${SKINNYLT_INCLUDE:-$root/include}"

if command -v cargo >/dev/null 2>&1; then
    cargo build --release          # no-op when up to date
elif [ ! -f "$lib" ]; then
    echo "run.sh: cargo not found and $lib does not exist" >&2
    exit 1
fi
[ -f "$lib" ] || { echo "run.sh: $lib was not built" >&2; exit 1; }
[ -f "$include/skinnylt.h" ] || { echo "run.sh: $include/skinnylt.h is missing" >&2; exit 1; }

cmake -S "$root/ctest" -B "$build" -DCMAKE_BUILD_TYPE=Debug \
      -DSKINNYLT_LIB="$lib" -DSKINNYLT_INCLUDE="$include"
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)"
cd "$build"
ctest --output-on-failure
# Host-overhead benchmark (informational).
SKINNYLT_REAL_LIB="$build/stub-full/libhipblaslt.so.1" "$build/overhead" "$build/stub-full/libhipblaslt.so.1"
