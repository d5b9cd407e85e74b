#!/usr/bin/env bash
# Builds the wave-level emulator (emu/) and runs all of its tests: the emulated
# instructions, the prelude parity with target_amdgcn.h, every gfx942/gfx950
# kernel of tuning/ on many shapes, the LDS bank-conflict report, and the
# mutation tests. Last line: "N passed, M failed"; exit status non-zero on any
# failure. Usage, from anywhere: bash emu/run.sh [-v] [-j N] [--filter TEXT]
# Needs cmake and clang++ >= 19 (scripts/setup.sh installs clang-22).
# SKEMU_CXX=<clang++> picks the compiler; SKEMU_BUILD_DIR the build directory.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SKEMU_BUILD_DIR:-$root/target/emu}"
jobs="$(nproc 2>/dev/null || echo 2)"

fail() {
  echo "emu/run.sh: $1" >&2
  echo "0 passed, 1 failed"
  exit 1
}

cxx="${SKEMU_CXX:-}"
if [ -z "$cxx" ]; then
  for v in $(seq 30 -1 19); do
    if command -v "clang++-$v" >/dev/null 2>&1; then cxx="clang++-$v"; break; fi
  done
fi
if [ -z "$cxx" ] && command -v clang++ >/dev/null 2>&1; then cxx=clang++; fi
[ -n "$cxx" ] || fail "no clang++ found (apt-get install clang-22, or set SKEMU_CXX)"
command -v cmake >/dev/null 2>&1 || fail "cmake not found"

mkdir -p "$build" || fail "cannot create $build"
cmake -S "$root/emu" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; fail "cmake configure failed"; }
grep '^-- emu:' "$build/configure.log" || true
cmake --build "$build" -j "$jobs" >"$build/build.log" 2>&1 ||
  { tail -n 60 "$build/build.log" >&2; fail "build failed (log: $build/build.log)"; }

log="$build/last-run.log"
"$build/skemu" -j "$jobs" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
last="$(tail -n 1 "$log")"
if ! [[ "$last" =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]]; then
  fail "skemu did not finish (exit status $status)"
fi
exit "$status"
