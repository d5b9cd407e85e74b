#!/usr/bin/env bash
# Builds libskinnylt.so (release), then builds and runs the C tests in ctest/
# with CMake + CTest. Usage, from anywhere: bash ctest/run.sh
# Needs gcc, g++, cmake, valgrind (and cargo, unless target/release/libskinnylt.so exists).
# SKINNYLT_INCLUDE=<dir> overrides where skinnylt.h is taken from (default include/).
# SKINNYLT_CTEST_SANITIZE=0 skips the ASan/UBSan build (sanitize.sh).
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

# A cache made from another checkout (a copied target/) cannot be reused.
if [ -f "$build/CMakeCache.txt" ] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$root/ctest" "$build/CMakeCache.txt"; then
    rm -rf "$build"
fi
cmake -S "$root/ctest" -B "$build" -DCMAKE_BUILD_TYPE=Debug \
      -DSKINNYLT_LIB="$lib" -DSKINNYLT_INCLUDE="$include"
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)"
cd "$build"
ctest --output-on-failure

# The same fixtures under ASan + UBSan.
if [ "${SKINNYLT_CTEST_SANITIZE:-1}" != 0 ]; then
    bash "$root/ctest/sanitize.sh"
fi

# Host-overhead benchmark (informational).
SKINNYLT_REAL_LIB="$build/stub-full/libhipblaslt.so.1" "$build/overhead" "$build/stub-full/libhipblaslt.so.1"
