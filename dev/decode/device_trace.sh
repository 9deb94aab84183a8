#!/bin/bash
# GPU machine, one call (issue 32, twelfth session): the per-phase trace of the decode kernel and an
# A/B of a kernel source, binaries from pb/ (dev/decode/stage.sh, then dev/decode/trace_stage.sh
# for pb/bench/gemm_bench_trace*); logs under $OUT; each step skipped when DEADLINE (s) would pass:
#   1. the GemmGpu tests (TESTS: ;-separated filters, one process each, all at once, TEST_S s each;
#      none: skip), then the copy rate (dev/copy_rate.py);
#   2. for each binary of TRACE_BINS: `--trace=$TRACE_N --only=$TRACE_ONLY` at TRACE_SHAPES, then
#      dev/decode/trace_table.py over its DCT lines;
#   3. PROCS gemm_bench processes over SHAPES (ROUNDS, BENCH_S s each; ONLY: their --only), cycling over BINS (each its
#      own kernel cache), their summaries and process 1's pre-pass.
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble 170
if [ "${TESTS:-none}" != none ] && fits 30 tests; then
  S=$(date +%s)
  start_gpu_tests "" "${TEST_S:-70}"
  rcs=""; for q in "${PIDS[@]}"; do wait "$q"; rcs="$rcs $?"; done
  echo "tests rc:$rcs ($(( $(date +%s) - S ))s, limit ${TEST_S:-70}s)"
  grep -hE "^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure|bad," "$OUT"/test*.log | cut -c1-220 | head -40
fi
fits 12 copy && timeout 20 python3 dev/copy_rate.py 2>&1 | tail -1
for bin in ${TRACE_BINS:-gemm_bench_trace}; do
  fits 15 "trace $bin" || break
  S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_$bin timeout "${TRACE_S:-40}" "$B/bench/$bin" --kinds=decode --trace="${TRACE_N:-6}" \
    --only="$TRACE_ONLY" --shapes="${TRACE_SHAPES:-64x4096x4096,128x4096x4096}" > "$OUT/$bin.log" 2> "$OUT/$bin.err"
  echo "trace $bin rc=$? $(( $(date +%s) - S ))s, $(grep -c '^DCT' "$OUT/$bin.log") lines"
  python3 dev/decode/trace_table.py < "$OUT/$bin.log" | cut -c1-280
done
bench_procs 0 30 ${ONLY:+"--only=$ONLY"}
grep -h "^VERIFY" "$OUT"/bench*.log 2>/dev/null | grep -v " ok " | head -10
print_bench_tables "$n" 250
[ "$n" -ge 1 ] && { echo "== process 1 pre-pass: the ${TOP:-3} fastest per shape, mode and variant (us)";
                    python3 dev/decode/prepass_top.py "${TOP:-3}" < "$OUT/bench1.err" | head -${TOP_LINES:-40}; }
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err ./*.txt 2>/dev/null; rm -f ./*.err gemm_bench_trace*.log)
