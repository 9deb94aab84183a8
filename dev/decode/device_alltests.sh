#!/bin/bash
# GPU machine, one call (issue 32, twenty-third session, call 4): every GemmGpu.Decode* test on this tree
# (the curated DC_CW / DC_PP twins run in DecodeVsReference's curated configs over M = 1..128), in
# SHARDS gtest shards at once (each its own kernel cache), each cut at TEST_S s.
#   OUT=$OUT bash dev/decode/device_alltests.sh     (binaries staged by dev/decode/stage.sh)
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-100}"
S=$(date +%s); PIDS=()
for i in $(seq 0 $(( ${SHARDS:-5} - 1 ))); do
  GTEST_TOTAL_SHARDS=${SHARDS:-5} GTEST_SHARD_INDEX=$i KTUNE_CACHE_DIR=/tmp/kcache_s$i timeout "${TEST_S:-85}" \
    "$B/tests/gemm_gpu_test" --gtest_filter='GemmGpu.Decode*' > "$OUT/test$i.log" 2>&1 &
  PIDS+=($!)
done
wait_gpu_tests "$S" 40 200 "${PIDS[@]}"
grep -hE "^\[ *(RUN|OK|FAILED) " "$OUT"/test*.log | grep -c "OK \]" | sed 's/^/tests OK: /'
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./test*.log 2>/dev/null; rm -f ./test*.log)
