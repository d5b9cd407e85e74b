#!/usr/bin/env bash
# Builds the traced kernels (kernels/ with SK_TRACE defined) to PTX here, with the
# same clang as the library; carry scripts/probes/ktrace.ptx to the GPU machine.
set -eu
cd "$(dirname "$0")"
CLANG=${SKINNYLT_CLANG:-$(ls /usr/bin/clang++-2[0-9] /usr/bin/clang++-19 2>/dev/null | sort -V | tail -1)}
"$CLANG" -std=c++17 -O3 -x cuda -nocudainc -nocudalib --cuda-gpu-arch=sm_90a --cuda-device-only \
  --cuda-feature=+ptx85 -S -I ../../kernels ${KTRACE_DEFINES:-} ktrace_kernels.cu -o ${KTRACE_PTX:-ktrace.ptx}
echo "wrote $(pwd)/${KTRACE_PTX:-ktrace.ptx}"
