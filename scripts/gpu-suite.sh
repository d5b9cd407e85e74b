#!/usr/bin/env bash
# The GPU correctness suite on an NVIDIA machine (run there, on the device).
# Build here first (cargo build --release), then carry target/release/skinnylt.
#   usage: bash scripts/gpu-suite.sh [extra `skinnylt check` args]
set -u
OUT=${OUT:-/tmp/skinnylt-out}; mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin
BIN=${SKINNYLT_BIN:-target/release/skinnylt}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
"$BIN" info 2>&1 | tee "$OUT/info.txt"
"$BIN" audit > "$OUT/audit.txt" 2>&1; echo "audit exit $?"; tail -1 "$OUT/audit.txt"
"$BIN" demo 2>&1 | tee "$OUT/demo.txt"
set -o pipefail
# Every kernel the fallback picks (empty tuning table), then the shipped table.
"$BIN" check --tuning fallback --out "$OUT/check.jsonl" "$@" 2>&1 | tee "$OUT/check.txt"
"$BIN" check --tuning shipped --out "$OUT/check-shipped.jsonl" "$@" 2>&1 | tee "$OUT/check-shipped.txt"
# Which kernels round alike (the classes batch-invariant plans keep to).
"$BIN" check --summation-classes --out "$OUT/classes.jsonl" 2>&1 | tee "$OUT/classes.txt"
