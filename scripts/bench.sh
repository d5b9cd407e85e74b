#!/usr/bin/env bash
# skinnylt vs cuBLASLt on an NVIDIA machine (run there). Finds PyTorch's cuBLASLt.
#   usage: bash scripts/bench.sh [skinnylt bench args]
set -u
OUT=${OUT:-/tmp/skinnylt-out}; mkdir -p "$OUT"
if [ -z "${SKINNYLT_CUBLASLT:-}" ]; then
  SKINNYLT_CUBLASLT=$(ls /opt/torch/.venv/lib/python3*/site-packages/nvidia/cu13/lib/libcublasLt.so.* 2>/dev/null | head -1)
  [ -z "$SKINNYLT_CUBLASLT" ] && SKINNYLT_CUBLASLT=$(python3 -c 'import nvidia, os, glob; print(sorted(glob.glob(os.path.join(os.path.dirname(nvidia.__file__), "cu13/lib/libcublasLt.so.*")))[0])' 2>/dev/null)
  export SKINNYLT_CUBLASLT
fi
BIN=${SKINNYLT_BIN:-target/release/skinnylt}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/bench-device.txt"
"$BIN" bench --json "$OUT/bench.json" --svg "$OUT/heatmap.svg" --curves "$OUT/curves.svg" "$@" 2>&1 | tee "$OUT/bench.txt"
