#!/usr/bin/env bash
# A short check on one GPU after a late kernel-default change (staged like the final call:
# `BUILD_DIR=build BASE=<base build> bash dev/final19_stage.sh DEST`; carry DEST, cd into it):
# the decode GPU tests (GemmGpu.Decode*) beside nothing else, then SUITES cold LLM suites of this
# tree and of the base alternating (empty store, fresh CUDA cache and database, compile workers
# and isolation on, as the final call runs them), each followed by its winners table. DEADLINE s.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=$OUT; T0=$(date +%s); DEADLINE=${DEADLINE:-150}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
[ -d pb ] || tar -xJf pb.tar.xz
PB=$PWD/pb
timeout "${TEST_S:-70}" env LD_LIBRARY_PATH="$PB/api:$PB/lib" "$PB/tests/gemm_gpu_test" \
  --gtest_filter='GemmGpu.Decode*' > "$W/tests.txt" 2>&1
echo "decode tests rc=$? at $(( $(date +%s) - T0 )) s: $(grep -c '^\[       OK' "$W/tests.txt") ok, $(grep -c '^\[  FAILED  \] GemmGpu' "$W/tests.txt") failed"
for i in $(seq 1 "${SUITES:-2}"); do
  for v in this base; do
    [ "$(left)" -gt 16 ] || { echo "suite $v $i: skipped ($(left) s left)"; continue; }
    K=$PB/tools/ktune L="$PB/api:$PB/lib"; [ "$v" = base ] && { K=$PB/base/tools/ktune; L="$PB/base:$PB/lib"; }
    d=/tmp/chk_${v}_$i; rm -rf "$d"; mkdir -p "$d"; sleep 0.6; t=$(date +%s.%N)
    KTUNE_CACHE_DIR=$d/kc CUDA_CACHE_PATH=$d/cc KTUNE_DB=$d/db.json LD_LIBRARY_PATH=$L \
      timeout 40 "$K" tune gemm --suite llm --json > "$W/suite_${v}_$i.json" 2> "$W/suite_${v}_$i.err"
    echo "suite $v $i rc=$? wall $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')"
    python3 dev/suite_winners.py "$W/suite_${v}_$i.json" | grep -E "^16x|JIT winners"
  done
done
