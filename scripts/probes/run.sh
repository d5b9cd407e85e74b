#!/usr/bin/env bash
# Runs the probes on an NVIDIA sm_90 machine (nvcc, g++, libcuda); results under $OUT.
#   bash scripts/probes/run.sh [stream|mcast|store|cluster|handoff|scatter|trace ...]   (default: all)
# `trace` needs scripts/probes/ktrace.ptx (build-ptx.sh, run here, then carry it).
set -eu
cd "$(dirname "$0")"
export PATH=$PATH:/usr/local/cuda/bin
OUT=${OUT:-/tmp/probes}; mkdir -p "$OUT"
what=${*:-stream mcast store cluster handoff scatter trace}
for w in $what; do
  case $w in
    stream) nvcc -O3 -std=c++17 -arch=sm_90a stream_probe.cu -lcuda -o /tmp/stream_probe
            for s in "2880 2880" "5120 2880" "2112 7168" "1024 7168"; do /tmp/stream_probe $s; done > "$OUT/stream.txt" ;;
    mcast)  nvcc -O3 -std=c++17 -arch=sm_90a mcast_probe.cu -lcuda -o /tmp/mcast_probe && /tmp/mcast_probe > "$OUT/mcast.txt" ;;
    store|cluster|handoff|scatter) nvcc -O3 -arch=sm_90a ${w}_probe.cu -o /tmp/${w}_probe && /tmp/${w}_probe > "$OUT/$w.txt" ;;
    trace)  g++ -O2 -std=c++17 ktrace_host.cpp -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda -o /tmp/ktrace
            { /tmp/ktrace ktrace.ptx m64n128k64_s8_cl_tma 64 128 64 1 1 64 2880 2880 1 2 4
              /tmp/ktrace ktrace.ptx m32n64k128_s6_cl_tma 32 64 128 1 1 64 2880 2880 1 2
              /tmp/ktrace ktrace.ptx sk_m8n16k128_s8_w114_cl 8 16 128 1 0 1 64 7168 8
              /tmp/ktrace ktrace.ptx sk_m8n16k256_s6_w118_cl 8 16 256 1 0 1 640 2880 4
            } > "$OUT/trace.txt" 2>&1 ;;
    *) echo "unknown probe: $w" >&2; exit 2 ;;
  esac
  echo "$w: $OUT/$w.txt"
done
