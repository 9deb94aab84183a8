#!/usr/bin/env bash
# GPU machine, issue 33's whole list in one call (binaries staged by dev/fp8_stage.sh into pb/,
# nothing is built here), steps in order against a deadline of BUDGET seconds:
#   1. the device-to-device copy rate (torch; the memory bound of the figures);
#   2. PROCS gemm_bench processes, fair method (read flush, ROUNDS interleaved rounds, cuBLASLt #0
#      and the best of 8 in the same process; ktune = the fastest --only config of the process's
#      pre-pass) over $SHAPES; the first process compiles (BENCH1_S), the others hit its cache;
#   3. the GPU tests after the figures (so a slow compile cannot cost them): gemm_gpu_test
#      ($GEMM_FILTER, and $GEMM_FILTER2 in a second process) and gemm_fp8_gpu_test ($FP8_FILTER) side
#      by side, for what is left.
# At most 8 files under $OUT (the return limit): gpu.txt (+ copy rate), bench_P.txt / .err,
# tests.log. Tables last.   BUDGET (190) PROCS (3) ROUNDS (3) BENCH1_S (50) BENCH_S (36) TESTS (1)
# TWIN_NAMES (names timed beside the pick in its rounds)
# COPY (1; 0: no copy rate, for a second pass that runs only the tests: PROCS=0)
set -uo pipefail
BUDGET_DEFAULT=190
. dev/fp8_device_common.sh
# The tuning-off default everywhere; the other curated winners where they won before (P176,
# CL2E2, Q4) or may (CL2E2 at the cubes), and the four-block cluster probe CL4E2 at short K.
ONLY_NAMES=${ONLY_NAMES:-"D P176@1024x14336x4096 Q4@4096x6144x4096 Q4@8192x8192x8192 CL2E2@3000x5000x1000 CL4E2@3000x5000x1000 CL2E2@4096x4096x4096"}
ONLY=$(configs "$ONLY_NAMES")
# TWIN_NAMES: configs timed in the same interleaved rounds as the pick (--twin), ratios to it.
TWIN=$(configs "${TWIN_NAMES:-}")
SHAPES=${SHAPES:-fp8,4096x4096x4096,8192x8192x8192,4096x6144x4096,4096x4096x14336,1024x14336x4096,2048x28672x8192,3000x5000x1000,3000x5000x1000:NN}
[ "${COPY:-1}" = 0 ] || { timeout 15 python3 dev/copy_rate.py >> "$OUT/gpu.txt" 2>&1; at "copy rate"; }
for p in $(seq 1 "${PROCS:-3}"); do
  S=${BENCH_S:-36}
  [ "$p" = 1 ] && S=${BENCH1_S:-50}
  [ "$(left)" -ge "$S" ] || { echo "bench $p skipped: $(left) s left"; break; }
  timeout "$S" stdbuf -oL "$PB/bench/gemm_bench" --kinds=tma --only="$ONLY" --shapes="$SHAPES" \
    --rounds="${ROUNDS:-3}" ${TWIN:+--twin="$TWIN"} > "$OUT/bench_$p.txt" 2> "$OUT/bench_$p.err"
  at "bench $p rc=$?"
  grep -E "^VERIFY" "$OUT/bench_$p.txt" | grep -v " ok " | head -5
done
TS=$(( $(left) - 3 ))
if [ "${TESTS:-1}" != 0 ] && [ "$TS" -ge 15 ]; then
  timeout "$TS" stdbuf -oL "$PB/tests/gemm_fp8_gpu_test" --gtest_filter="${FP8_FILTER:-*JitKernel*:*LargeJit*}" > /tmp/fp8_test.log 2>&1 &
  F=$!
  # GEMM_FILTER2: a second gemm_gpu_test process beside the first (its tests then do not wait for
  # the first's in definition order).
  : > /tmp/gemm_test2.log
  if [ -n "${GEMM_FILTER2:-}" ]; then
    timeout "$TS" stdbuf -oL "$PB/tests/gemm_gpu_test" --gtest_filter="$GEMM_FILTER2" > /tmp/gemm_test2.log 2>&1 &
    G=$!
  fi
  timeout "$TS" stdbuf -oL "$PB/tests/gemm_gpu_test" --gtest_filter="${GEMM_FILTER:-GemmGpu.TmaSplitTail*:GemmGpu.TmaEveryLayout*}" > /tmp/gemm_test.log 2>&1
  RB=$?
  wait $F; RF=$?
  RB2=-
  [ -n "${GEMM_FILTER2:-}" ] && { wait $G; RB2=$?; }
  at "tests ($TS s): gemm_fp8_gpu_test rc=$RF, gemm_gpu_test rc=$RB (second: $RB2)"
  cat /tmp/gemm_test.log /tmp/gemm_test2.log /tmp/fp8_test.log > "$OUT/tests.log"
  grep -hE "^\[ +(OK|FAILED|PASSED) |Failure" "$OUT/tests.log" | cut -c1-160 | head -12
else
  echo "tests skipped: $(left) s left"
fi
[ -s "$OUT/prebuilt.err" ] || rm -f "$OUT/prebuilt.err"
cat "$OUT/gpu.txt"
for p in $(seq 1 "${PROCS:-3}"); do
  [ -f "$OUT/bench_$p.txt" ] || continue
  echo "== process $p: pre-pass (us; configs: process 1 only), then the rounds"
  [ "$p" = 1 ] && grep -h "^cand" "$OUT/bench_$p.err" | grep -v cublaslt |
    sed 's/CONSUMERS=2,//; s/CLUSTER_M=1,//; s/GROUP_M=16,//; s/NUM_STAGES=/S/; s/BLOCK_N=/N/; s/WG_M=/W/; s/SPLIT_K=/SK/; s/PINGPONG=/PP/; s/EPI_TMA=/E/' |
    awk '{print $2, $5, $6}'
  grep -h "^cand" "$OUT/bench_$p.err" | grep cublaslt | sort -k2,2 -k6,6g | awk '!seen[$2]++ {print $2, $5, $6}'
  grep -E "^(RATIO|FP8|TWIN)" "$OUT/bench_$p.txt" | sed 's/ gemm / /; s/cublaslt/lt/g' | cut -c1-100
done
at total
