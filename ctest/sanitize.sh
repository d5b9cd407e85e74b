#!/usr/bin/env bash
# Builds the C fixtures (stubs, clients, stress, header) a second time with
# AddressSanitizer and UndefinedBehaviorSanitizer (gcc) in target/ctest-asan and
# runs them there: any report fails its test. skinnylt itself is not
# instrumented; ASan's malloc/free still cover its heap. The stress tests run
# 5 s each here, without their resident-set check (ASan's quarantine holds freed
# memory). The fault fixtures test skinnylt's reading of its environment, not
# memory: they run in the plain build only (ctest/run.sh), as do the valgrind
# tests (valgrind and ASan exclude each other).
# Usage (after ctest/run.sh has built the library): bash ctest/sanitize.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
lib="$target/release/libskinnylt.so"
build="$root/target/ctest-asan"
include="${SKINNYLT_INCLUDE:-$root/include}"
[ -f "$lib" ] || { echo "sanitize.sh: $lib does not exist (run ctest/run.sh)" >&2; exit 1; }

# A cache made from another checkout cannot be reused.
if [ -f "$build/CMakeCache.txt" ] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$root/ctest" "$build/CMakeCache.txt"; then
    rm -rf "$build"
fi
cmake -S "$root/ctest" -B "$build" -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
      -DSKINNYLT_SANITIZE=address,undefined -DSTRESS_SECONDS=5 \
      -DSKINNYLT_LIB="$lib" -DSKINNYLT_INCLUDE="$include" >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)"
cd "$build"
# Stop at the first report, with a stack; leaks are reported too (LSan).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
ctest --output-on-failure -LE faults
