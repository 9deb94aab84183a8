#!/usr/bin/env bash
# GPU machine: dev/silu_probe.cu (SiLU·Mul structure and load cache hints vs a D2D copy, per-call
# events after a read flush) at the small and a large shape, then the Python bench's call and
# row-wise tables (dev/python_device.sh with PY_TESTS=0). Logs under $OUT.
#   bash dev/python_probe_device.sh        PROBE_ONLY=1: the probe alone (no ktune build)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 dev/silu_probe.cu -o /tmp/silu_probe \
     > "$OUT/probe_build.log" 2>&1; then
  /tmp/silu_probe 4096 2048 80 > "$OUT/silu_probe.txt" 2>&1
  /tmp/silu_probe 4096 14336 20 >> "$OUT/silu_probe.txt" 2>&1
  cat "$OUT/silu_probe.txt"
else
  tail -20 "$OUT/probe_build.log"
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
[ "${PROBE_ONLY:-0}" = 1 ] && exit 0
PY_TESTS=0 PY_BENCH_ARGS="${PY_BENCH_ARGS:---only=call,bandwidth --no-compile}" \
  bash dev/python_device.sh
