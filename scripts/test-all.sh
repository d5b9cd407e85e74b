#!/usr/bin/env bash
# The whole test suite (CPU only): Rust unit, property and integration tests
# (routing, shadowing, tuning, the static audit of the device code, the header),
# the C fixtures (forwarding fidelity, LD_PRELOAD + RTLD_LOCAL, standalone,
# header as C and C++) and the host-overhead benchmark, the AMD kernels executed
# on the wave-level emulator, and the package install tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
cargo build --release --locked
cargo test --release --locked
# Lints stay at zero where the toolchain has clippy.
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --release --locked --all-targets -- -D warnings
fi
bash ctest/run.sh
bash emu/run.sh
if [ -x packaging/test-install.sh ] || [ -f packaging/test-install.sh ]; then
  bash packaging/test-install.sh --no-build
fi
if [ "${CI:-}" = true ] || [ -n "${SKINNYLT_FUZZ_SMOKE:-}" ]; then bash scripts/fuzz-smoke.sh; fi
./target/release/skinnylt demo
