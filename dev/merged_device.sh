#!/usr/bin/env bash
# The lead's short GPU pass over a merged tree (one call, about 3 minutes on a warm start): builds
# the CLI, its worker and two GPU test programs, then runs the capture test and the GEMM op's tests
# (the tuned op on every kind incl. decode, the decode kernels against float64). Logs under $OUT.
# Usage: bash dev/merged_device.sh   (FILTER: gemm_gpu_test's gtest filter)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
S=$(date +%s)
bash dev/device_build.sh ktune ktune-worker gemm_gpu_test shapes_gpu_test > "$OUT/build.log" 2>&1 ||
  { tail -30 "$OUT/build.log"; exit 1; }
echo "build $(( $(date +%s) - S ))s"
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
export KTUNE_CACHE_DIR=/tmp/kcache-merged
timeout 60 /tmp/kb/tests/shapes_gpu_test --gtest_brief=1 > "$OUT/shapes_gpu_test.log" 2>&1
echo "shapes_gpu_test rc=$?"; grep -E "PASSED|FAILED|Failure" "$OUT/shapes_gpu_test.log" | head -8
FILTER=${FILTER:-GemmGpu.TunableOp*:GemmGpu.Decode*}
timeout 150 /tmp/kb/tests/gemm_gpu_test --gtest_brief=1 --gtest_filter="$FILTER" > "$OUT/gemm_gpu_test.log" 2>&1
echo "gemm_gpu_test ($FILTER) rc=$?"; grep -E "^\[  (PASSED|FAILED) |Failure|tests? from" "$OUT/gemm_gpu_test.log" | head -12
echo "total $(( $(date +%s) - S ))s"
