#!/usr/bin/env bash
# The lead's final call of the ninth session: every GPU test program on the merged tree's prebuilt
# binaries (dev/gpu_pass_device.sh, no benches), then the whole regret set with one shape and the
# suite (dev/regret_device.sh, SUITE_FIRST=1, no peers). Run from the staged tree (.devwork/lead).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/tests" "$OUT/regret"
OUT=$OUT/tests DEADLINE=${TEST_DEADLINE:-150} TEST_S=${TEST_S:-140} GEMM_SHARDS=4 JOBS=6 \
  PROGRAMS=none bash dev/gpu_pass_device.sh 2>&1 | tail -40
OUT=$OUT/regret DEADLINE=${REGRET_DEADLINE:-260} RESERVE=30 SUITE_FIRST=1 AGAIN=0 ROWKEYS=0 \
  PEERS=0 EXH_BUDGET=0.25 GEMM_SHARE=70 bash dev/regret_device.sh 2>&1 | tail -40
