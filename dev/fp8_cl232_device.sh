#!/usr/bin/env bash
# GPU machine, issue 33 in one call (binaries staged by dev/fp8_stage.sh into pb/; nothing is built
# here), steps in order against a deadline of BUDGET seconds, each cut to what is left:
#   1. the main job, `ktune tune gemm --suite llm --json` (empty cache and database; SUITE_S);
#   2. the copy rate (torch), then gemm_bench process 1 (fair method: read flush, ROUNDS interleaved
#      rounds, cuBLASLt #0 and the best of 8 in the same process; $ONLY_NAMES over $SHAPES_A
#      (BENCHA_S) and then $SHAPES, the $TWIN_NAMES timed in the pick's rounds; it compiles: BENCH1_S);
#   3. ncu (clocks left alone, one launch each) of $NCU_NAMES and cuBLASLt's algorithms $NCU_LT at
#      $NCU_SHAPE NT, with dev/ncu_table.py's metrics (grid, cluster, registers, shared memory,
#      tensor pipe, busiest SM, L2, DRAM, stalls): ncu_table.txt;
#   4. gemm_bench processes 2 .. PROCS (BENCH_S each, the kernel cache of process 1);
#   5. the GPU tests: gemm_gpu_test $GEMM_FILTER and $GEMM_FILTER2 in two processes.
# Files back (at most 8): gpu.txt (clocks, device, copy rate), suite.txt, bench_1..3.txt,
# ncu_table.txt, tests.txt (results), raw.tgz (suite.json, ncu.csv, ncu_bench.txt, the benches'
# stderr with the pre-pass lines, the test logs).
# BUDGET (220) SUITE_S (20; 0: no main job) COPY (1) PROCS (3; 0: no bench) ROUNDS (3) BENCH1_S (45)
# BENCH_S (28) NCU_S (30; 0: no ncu) TESTS (1) — a tests-only call: SUITE_S=0 COPY=0 PROCS=0 NCU_S=0.
set -uo pipefail
BUDGET_DEFAULT=220
. dev/fp8_device_common.sh
# The pair's 232-wide tile (BLOCK_N 232: 3000x5000 in 264 pair tiles = 4 rounds of 66 pairs), the
# probe of commit 913f7fa: 12-16% slower than CL4E2, reverted (bench/NOTES.md); not in the kernel now,
# so the space refuses a list that names it.
CL232="BLOCK_N=232,CONSUMERS=2,CLUSTER_M=2,WG_M=1,NUM_STAGES=4,GROUP_M=16,EPI_TMA=2,SPLIT_K=1,PINGPONG=0"
ONLY=$(configs "${ONLY_NAMES:-D}")
TWIN=$(configs "${TWIN_NAMES:-}")
measure_phase
TS=$(( $(left) - 4 ))
: > /tmp/gemm_test.log; : > /tmp/gemm_test2.log
if [ "${TESTS:-1}" != 0 ] && [ "$TS" -ge 15 ]; then
  timeout "$TS" stdbuf -oL "$PB/tests/gemm_gpu_test" --gtest_filter="$GEMM_FILTER2" > /tmp/gemm_test2.log 2>&1 &
  G=$!
  timeout "$TS" stdbuf -oL "$PB/tests/gemm_gpu_test" --gtest_filter="$GEMM_FILTER" > /tmp/gemm_test.log 2>&1
  RB=$?
  wait $G
  at "tests ($TS s): gemm_gpu_test rc=$RB (second: $?)"
else
  echo "tests skipped: $(left) s left"
fi
grep -hE "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|resident clusters|rc=" /tmp/gemm_test.log /tmp/gemm_test2.log |
  cut -c1-200 > "$OUT/tests.txt"
cp /tmp/gemm_test.log /tmp/gemm_test2.log "$OUT/" 2>/dev/null
cp /tmp/ncu.csv /tmp/ncu_bench.txt /tmp/ncu_bench.err "$OUT/" 2>/dev/null
tar -czf "$OUT/raw.tgz" -C "$OUT" $(cd "$OUT" && ls suite.json ncu.csv ncu_bench.txt ncu_bench.err \
  bench_*.err gemm_test.log gemm_test2.log 2>/dev/null) 2>/dev/null &&
  (cd "$OUT" && rm -f suite.json ncu.csv ncu_bench.txt ncu_bench.err bench_*.err gemm_test.log gemm_test2.log)
print_summary
