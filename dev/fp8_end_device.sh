#!/usr/bin/env bash
# GPU machine, issue 33: an A/B of kernel changes with the main job and ncu in one call (binaries
# staged by dev/fp8_stage.sh into pb/; nothing is built here), steps in order against BUDGET:
#   1. dev/fp8_final_device.sh without tests: the copy rate and PROCS gemm_bench processes (fair
#      method; $ONLY_NAMES timed in each pre-pass, a name given twice twice) over $SHAPES;
#   2. the main job (`ktune tune gemm --suite llm --json`, empty cache and database; SUITE_S);
#   3. ncu of $NCU_NAMES beside cuBLASLt's $LT at 4096^3 (dev/fp8_ncu_device.sh; NCU_S);
#   4. the GPU tests ($GEMM_FILTER, $FP8_FILTER side by side) in what is left.
# Files back (at most 8): bench_1..3.txt, suite.txt, ncu_table.txt, tests.log, rest.tgz (the
# benches' tables and stderr, gpu.txt, suite.json, ncu's csv).
# BUDGET (185) SUITE_S (20) NCU_S (35) TEST_S (55: the benches get what the others leave)
set -uo pipefail
BUDGET_DEFAULT=185
. dev/fp8_device_common.sh
BUDGET=${BUDGET:-$BUDGET_DEFAULT}
NCU_S=${NCU_S:-35}; SUITE_S=${SUITE_S:-20}; TEST_S=${TEST_S:-55}
BUDGET=$(( $(left) - SUITE_S - NCU_S - TEST_S )) TESTS=0 bash dev/fp8_final_device.sh > "$OUT/bench_tables.txt" 2>&1
cp "$OUT/bench_tables.txt" /tmp/bench_tables.txt
at "benches"
run_suite "$SUITE_S"
if [ "$NCU_S" -gt 0 ]; then
  BUDGET=$NCU_S ONLY_NAMES="${NCU_NAMES:-D@4096x4096x4096 B@4096x4096x4096}" \
    LT="${LT:-0@4096x4096x4096}" SHAPES=4096x4096x4096 bash dev/fp8_ncu_device.sh > "$OUT/ncu_table.txt" 2>&1
  at "ncu"
fi
TS=$(( $(left) - 4 ))
if [ "$TS" -ge 15 ]; then
  timeout "$TS" stdbuf -oL "$PB/tests/gemm_fp8_gpu_test" --gtest_filter="${FP8_FILTER:-*JitKernel*:*LargeJit*}" > /tmp/fp8_test.log 2>&1 &
  F=$!
  timeout "$TS" stdbuf -oL "$PB/tests/gemm_gpu_test" --gtest_filter="${GEMM_FILTER:-GemmGpu.TmaSplitTail*:GemmGpu.TmaEveryLayout*}" > /tmp/gemm_test.log 2>&1
  RB=$?
  wait $F; RF=$?
  cat /tmp/gemm_test.log /tmp/fp8_test.log > "$OUT/tests.log"
  at "tests ($TS s): gemm_gpu_test rc=$RB, gemm_fp8_gpu_test rc=$RF"
  grep -hE "^\[ +(OK|FAILED|PASSED) |Failure" "$OUT/tests.log" | cut -c1-160 | head -12
else
  echo "tests skipped: $(left) s left"
fi
tar -czf "$OUT/rest.tgz" -C "$OUT" $(cd "$OUT" && ls bench_tables.txt bench_*.err gpu.txt suite.json ncu.csv ncu_bench.txt ncu_bench.err 2>/dev/null) 2>/dev/null &&
  (cd "$OUT" && rm -f bench_*.err gpu.txt suite.json ncu.csv ncu_bench.txt ncu_bench.err)
rm -f "$OUT/prebuilt.err"
grep -v "^cand" /tmp/bench_tables.txt | tail -60
cat "$OUT/suite.txt"
grep -vE "^(==|$)" "$OUT/ncu_table.txt" | head -40
at total
