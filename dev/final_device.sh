#!/usr/bin/env bash
# The lead's GPU pass after merging the third wave's first branches (one call, under 10 minutes):
# builds the CLI, its worker and the GEMM GPU test, runs the decode kind's GPU test against the
# float64 reference, then dev/regret_device.sh (guided vs exhaustive) on the same build.
# Usage: bash dev/final_device.sh   (GEMM_LIMIT, ROW_LIMIT as in regret_device.sh); logs under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
S=$(date +%s)
bash dev/device_build.sh ktune ktune-worker gemm_gpu_test > "$OUT/build.log" 2>&1 ||
  { tail -30 "$OUT/build.log"; exit 1; }
echo "build $(( $(date +%s) - S ))s"
timeout 120 /tmp/kb/tests/gemm_gpu_test --gtest_filter='*Decode*' > "$OUT/decode_gpu_test.log" 2>&1
echo "decode gpu test rc=$?"; tail -4 "$OUT/decode_gpu_test.log"
SKIP_BUILD=1 bash dev/regret_device.sh
