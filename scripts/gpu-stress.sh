#!/usr/bin/env bash
# The device stress run on an NVIDIA machine (run there): builds the cuBLASLt-backed
# stand-in hipBLASLt (tools/standin/), then runs `skinnylt stress` interposed on it
# (16 threads x 4 streams, 600 s, then 10,000 graph replays by default).
# Build here first (cargo build --release -p skinnylt-tools), then carry
# target/release/skinnylt. Results go under $OUT: device.txt, standin-build.txt,
# stress-$TAG.txt and .json, dmon-$TAG.txt.
#   usage: bash scripts/gpu-stress.sh [skinnylt stress args, e.g. --seconds 60]
#   STRESS_MODE=standalone: no stand-in (forwarded calls must be refused)
#   STRESS_TAG: names this run's files; STRESS_DMON=0: no nvidia-smi dmon log
#   STANDIN_RAW_HANDLES=1: the stand-in passes cuBLASLt's handles through (aliased)
#   SKINNYLT_BIN, STANDIN_SRC: where the binary and the stand-in's source are
set -u
OUT=${OUT:-/tmp/skinnylt-out}; mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${SKINNYLT_BIN:-$here/target/release/skinnylt}
SRC=${STANDIN_SRC:-$here/tools/standin/hipblaslt_cublaslt.c}
MODE=${STRESS_MODE:-interposed}
TAG=${STRESS_TAG:-$MODE}
LIBDIR=${STANDIN_DIR:-/tmp/skinnylt-standin}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader | tee -a "$OUT/device.txt"

args=()
if [ "$MODE" != standalone ]; then
  # PyTorch's cuBLASLt, as scripts/bench.sh finds it.
  if [ -z "${SKINNYLT_CUBLASLT:-}" ]; then
    SKINNYLT_CUBLASLT=$(ls /opt/torch/.venv/lib/python3*/site-packages/nvidia/cu13/lib/libcublasLt.so.* 2>/dev/null | head -1)
    [ -z "$SKINNYLT_CUBLASLT" ] && SKINNYLT_CUBLASLT=$(python3 -c 'import nvidia, os, glob; print(sorted(glob.glob(os.path.join(os.path.dirname(nvidia.__file__), "cu13/lib/libcublasLt.so.*")))[0])' 2>/dev/null)
  fi
  export STANDIN_CUBLASLT=$SKINNYLT_CUBLASLT
  echo "cuBLASLt: ${STANDIN_CUBLASLT:-not found}" | tee -a "$OUT/device.txt"
  if [ ! -e "$LIBDIR/libhipblaslt.so.1" ]; then
    mkdir -p "$LIBDIR"
    flags=(-O2 -Wall -shared -fPIC -Wl,-Bsymbolic -Wl,-soname,libhipblaslt.so.1)
    # With cublasLt.h at hand, every enum value the stand-in writes out is checked
    # against it at compile time.
    inc=()
    for d in /usr/local/cuda/include "$(dirname "$(dirname "${STANDIN_CUBLASLT:-/x/x}")")/include"; do
      [ -d "$d" ] && inc+=(-I"$d")
    done
    if gcc "${flags[@]}" -DSTANDIN_CHECK_HEADERS "${inc[@]}" -o "$LIBDIR/libhipblaslt.so.1" "$SRC" -ldl -lpthread >"$OUT/standin-build.txt" 2>&1; then
      echo "stand-in: built; its enum values match cublasLt.h"
    else
      echo "stand-in: cublasLt.h check not possible (standin-build.txt); building without it"
      gcc "${flags[@]}" -o "$LIBDIR/libhipblaslt.so.1" "$SRC" -ldl -lpthread 2>>"$OUT/standin-build.txt" || { cat "$OUT/standin-build.txt"; exit 1; }
    fi
  fi
  args+=(--real-lib "$LIBDIR/libhipblaslt.so.1")
else
  unset SKINNYLT_REAL_LIB
fi

dmon=
if [ "${STRESS_DMON:-1}" != 0 ]; then
  nvidia-smi dmon -s puc -d 15 >"$OUT/dmon-$TAG.txt" 2>&1 &
  dmon=$!
fi
set -o pipefail
SKINNYLT_LOG=${SKINNYLT_LOG:-warn} "$BIN" stress "${args[@]}" --out "$OUT/stress-$TAG.json" "$@" 2>&1 | tee "$OUT/stress-$TAG.txt"
rc=$?
[ -n "$dmon" ] && kill "$dmon" 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,memory.used --format=csv,noheader | tee -a "$OUT/device.txt"
echo "skinnylt stress ($TAG) exit $rc"
exit $rc
