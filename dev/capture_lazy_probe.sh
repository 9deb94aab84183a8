#!/usr/bin/env bash
# Device: dev/capture_lazy_probe.cu in fresh processes (lazy loading unless said): a capture of a
# blocking and of a non-blocking stream while another thread (relaxed mode) loads kernels lazily,
# allocates and frees, or runs loaded kernels.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvcc -O2 -o /tmp/probe dev/capture_lazy_probe.cu -lcublasLt -lcuda || exit 1
for kind in blocking nonblock; do
  for mode in alone busy_same busy_malloc busy_blas_warm; do
    for d in 0 300 1000 3000 0 300; do timeout 30 /tmp/probe $mode 0 $d $kind; done
  done
  for d in 0 300 1000; do CUDA_MODULE_LOADING=EAGER timeout 30 /tmp/probe busy_same 0 $d $kind; done
done > "$OUT/probe.log" 2>&1
awk '{print $1, $2, $5, $6, $7}' "$OUT/probe.log" | sort | uniq -c
