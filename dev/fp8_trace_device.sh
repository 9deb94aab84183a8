#!/usr/bin/env bash
# GPU machine, issue 33 (twelfth session): the tma kernel's per-phase trace and a same-process A/B
# in one call (its probe, EPI_TMA 3, is gone: name a probe config in a variable before use) (binaries staged by dev/fp8_stage.sh and dev/trace_stage.sh into pb/; nothing built):
#   1. pb/bench/gemm_bench_trace --trace=$TRACE_N over $TRACE_NAMES at $TRACE_SHAPE, then
#      dev/tma_trace_table.py (the start / loop / switch / end split);
#   2. dev/fp8_final_device.sh without tests: PROCS gemm_bench processes (fair method, cuBLASLt
#      best in the same process) with $ONLY_NAMES in each pre-pass, at $SHAPES.
# Files back: trace_table.txt, trace.log.gz, bench_tables.txt (+ fp8_final_device.sh's).
# BUDGET (125) TRACE_S (35) TRACE_N (4) TESTS (1: the TMA and fp8 GPU tests after the trace) TEST_S (50)
set -uo pipefail
BUDGET_DEFAULT=125
. dev/fp8_device_common.sh
BUDGET=${BUDGET:-$BUDGET_DEFAULT}
ONLY=""
for n in ${TRACE_NAMES:-D Q4}; do ONLY="$ONLY${ONLY:+;}${!n}"; done
timeout "${TRACE_S:-35}" stdbuf -oL "$PB/bench/gemm_bench_trace" --kinds=tma --trace="${TRACE_N:-4}" \
  --only="$ONLY" --shapes="${TRACE_SHAPE:-4096x4096x4096}" > "$OUT/trace.log" 2> /tmp/trace.err
at "trace rc=$? ($(grep -c '^TMT ' "$OUT/trace.log") block lines, $(grep -c '^TMTK' "$OUT/trace.log") launches)"
grep -v "^TMT" "$OUT/trace.log" | head -5; tail -3 /tmp/trace.err
python3 dev/tma_trace_table.py < "$OUT/trace.log" > "$OUT/trace_table.txt" 2>&1
gzip -f "$OUT/trace.log"
if [ "${TESTS:-1}" != 0 ]; then  # three processes side by side, TEST_S each
  timeout "${TEST_S:-50}" "$PB/tests/gemm_gpu_test" --gtest_filter=GemmGpu.TmaEveryLayout* > /tmp/t1.log 2>&1 &
  timeout "${TEST_S:-50}" "$PB/tests/gemm_gpu_test" --gtest_filter=GemmGpu.TmaSplitTail* > /tmp/t2.log 2>&1 &
  timeout "${TEST_S:-50}" "$PB/tests/gemm_fp8_gpu_test" --gtest_filter=*LargeJit*:*JitKernel* > /tmp/t3.log 2>&1 &
  wait
  cat /tmp/t1.log /tmp/t2.log /tmp/t3.log > "$OUT/tests.log"
  at "tests"; grep -hE "^\[ +(OK|FAILED|PASSED) |Failure" "$OUT/tests.log" | cut -c1-160 | head -12
fi
BUDGET=$(left) TESTS=0 ONLY_NAMES="${ONLY_NAMES:-D Q4}" SHAPES="${SHAPES:-4096x4096x4096}" \
  bash dev/fp8_final_device.sh > "$OUT/bench_tables.txt" 2>&1
(cd "$OUT" && tar czf benches.tgz bench_[0-9].txt bench_[0-9].err prebuilt.err 2>/dev/null; rm -f bench_[0-9].txt bench_[0-9].err prebuilt.err)
cat "$OUT/trace_table.txt"
grep -v "^cand" "$OUT/bench_tables.txt" | tail -40
at total
