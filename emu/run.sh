#!/usr/bin/env bash
# Builds the wave-level emulator (emu/) and runs all of its tests: the emulated
# instructions, the prelude parity with target_amdgcn.h, every gfx942/gfx950
# kernel the library compiled on many shapes, the LDS bank-conflict report, and the
# mutation tests. Last line: "N passed, M failed"; exit status non-zero on any
# failure. Usage, from anywhere: bash emu/run.sh [-v] [-j N] [--filter TEXT]
# Needs cmake and the built CLI, target/release/skinnylt (cargo build --release):
# the kernels come from its catalog (`skinnylt kernels`), the compiler is the
# clang++ beside the clang that built them (`skinnylt kernels --toolchain`).
# SKEMU_CXX=<clang++> picks another compiler; SKEMU_BUILD_DIR the build directory.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
build="${SKEMU_BUILD_DIR:-$root/target/emu}"
jobs="$(nproc 2>/dev/null || echo 2)"
skinnylt="$target/release/skinnylt"

fail() {
  echo "emu/run.sh: $1" >&2
  echo "0 passed, 1 failed"
  exit 1
}

[ -x "$skinnylt" ] ||
  fail "$skinnylt not found: build it first (cargo build --release; scripts/test-all.sh does); the emulator runs the kernels its catalog lists"
command -v cmake >/dev/null 2>&1 || fail "cmake not found"
mkdir -p "$build" || fail "cannot create $build"

# The kernel list, rewritten only when it changes (CMake re-generates from it).
list="$build/kernels.tsv"
"$skinnylt" kernels --format tsv >"$list.new" || fail "$skinnylt kernels failed"
if cmp -s "$list.new" "$list"; then rm -f "$list.new"; else mv "$list.new" "$list"; fi

cxx="${SKEMU_CXX:-}"
if [ -z "$cxx" ]; then
  cxx="$("$skinnylt" kernels --toolchain --format tsv | awk -F '\t' '$1 == "clang++" { print $2 }')"
  [ -n "$cxx" ] || fail "no clang++ beside $("$skinnylt" kernels --toolchain --format tsv | awk -F '\t' '$1 == "clang" { print $2 }'), the clang that built the kernels (install it, or set SKEMU_CXX)"
fi

cmake -S "$root/emu" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" -DSKEMU_KERNELS="$list" >"$build/configure.log" 2>&1 ||
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
