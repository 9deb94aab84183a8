#!/usr/bin/env bash
# GPU machine, issue 33, ping-pong with 128-row consumer tiles (tma PINGPONG = 1, WG_M 2): one call
# against a deadline of BUDGET seconds, steps in order, each skipped once it would overrun
# (binaries staged by dev/fp8_stage.sh into pb/, nothing is built here).
#   1. TESTS=1 (fp8: the first only): gemm_fp8_gpu_test's JIT cases and gemm_gpu_test's every-layout
#      TMA case (GEMM_FILTER: other gemm_gpu_test cases) at odd shapes against the float64 reference.
#   2. PROCS gemm_bench processes, fair method (read flush, interleaved rounds, cuBLASLt #0 and the
#      best of 8 in the same process) over $ONLY (default: the cooperative default D and B, and the
#      ping-pong tiles Q1..Q4) on $SHAPES.
#   3. NCU=1: ncu's source page (PC-sampled warp stalls per SASS instruction, dev/ncu_stalls.py) and
#      the SOL/stall metrics of dev/ncu_table.py for one launch each of $NCU_CFGS at $NCU_SHAPE.
#   4. the device-to-device copy rate (torch): the memory bound of the figures (COPY_FIRST=1: before 2).
# Logs under $OUT, tables last.   BUDGET (150) ROUNDS (3) PROCS (1) BENCH_S (45) TEST_S (40)
# BENCH_BIN: another gemm_bench of pb/bench for steps 2 and 3 (a probe binary staged beside it).
set -uo pipefail
. dev/fp8_device_common.sh
Q1="BLOCK_N=192,$C2,WG_M=2,NUM_STAGES=5,GROUP_M=16,EPI_TMA=1,SPLIT_K=1,PINGPONG=1"
Q2="BLOCK_N=128,$C2,WG_M=2,NUM_STAGES=6,GROUP_M=16,EPI_TMA=1,SPLIT_K=1,PINGPONG=1"
Q3="BLOCK_N=256,$C2,WG_M=1,NUM_STAGES=5,GROUP_M=16,EPI_TMA=1,SPLIT_K=1,PINGPONG=1"
Q4="BLOCK_N=192,$C2,WG_M=2,NUM_STAGES=4,GROUP_M=16,EPI_TMA=1,SPLIT_K=1,PINGPONG=1"
# C192: the curated cooperative 128x192 tile.
C192="BLOCK_N=192,$C2,WG_M=1,NUM_STAGES=4,GROUP_M=8,EPI_TMA=1,SPLIT_K=1,PINGPONG=0"
ONLY=${ONLY:-"$D;$B;$Q1;$Q2;$Q3;$Q4"}
# ONLY_NAMES="D W224 Q4@8192x8192x8192 ...": the configs of those names (this file's and
# dev/fp8_device_common.sh's), each for every shape or only at the @ shape.
[ -n "${ONLY_NAMES:-}" ] && ONLY=$(configs "$ONLY_NAMES")
SHAPES=${SHAPES:-fp8,4096x4096x4096,8192x8192x8192,1024x14336x4096,4096x6144x4096,4096x4096x14336,2048x28672x8192}
if [ "${TESTS:-0}" != 0 ]; then  # TESTS=fp8: the fp8 program only
  TS=${TEST_S:-40}
  timeout "$TS" stdbuf -oL "$PB/tests/gemm_fp8_gpu_test" --gtest_filter="${FP8_FILTER:-*JitKernel*}" > "$OUT/fp8_test.log" 2>&1 &
  F=$!
  RB=0
  [ "$TESTS" = fp8 ] || { timeout "$TS" stdbuf -oL "$PB/tests/gemm_gpu_test" --gtest_filter="${GEMM_FILTER:-GemmGpu.TmaEveryLayout*}" > "$OUT/gemm_test.log" 2>&1; RB=$?; }
  wait $F; RF=$?
  at "tests: gemm_fp8_gpu_test rc=$RF, gemm_gpu_test rc=$RB"
  grep -hE "^\[  (PASSED|FAILED|  OK) |Failure|PINGPONG=1.*worst|BLOCK_N=(176|224).*worst" "$OUT/fp8_test.log" "$OUT/gemm_test.log" 2>/dev/null | cut -c1-200 | head -18
  [ "$RF" = 124 ] && tail -3 "$OUT/fp8_test.log" | cut -c1-200
fi
# COPY_FIRST=1: the copy rate before the benches (so a budget cut cannot lose the bound).
if [ "${COPY_FIRST:-0}" = 1 ]; then
  timeout 15 python3 dev/copy_rate.py > "$OUT/copy.txt" 2>&1
  at "copy rate"
fi
for p in $(seq 1 "${PROCS:-1}"); do
  [ "$(left)" -ge "${BENCH_S:-45}" ] || { echo "bench $p skipped: $(left) s left"; break; }
  timeout "${BENCH_S:-45}" stdbuf -oL "$PB/bench/${BENCH_BIN:-gemm_bench}" --kinds=tma --only="$ONLY" \
    --shapes="$SHAPES" --rounds="${ROUNDS:-3}" > "$OUT/bench_$p.txt" 2> "$OUT/bench_$p.err"
  at "bench $p rc=$?"
  grep -E "^VERIFY" "$OUT/bench_$p.txt" | grep -v " ok " | head -5
done
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null; then
  Q=${NCU_SHAPE:-4096x4096x4096}
  i=0
  # Beside the sections: L2 requests and sectors from the SMs (a row that is not 128-byte aligned
  # costs the copy engine more requests), the tensor pipe, the busiest SM, how many clusters fit.
  NCU_M=lts__t_requests_srcunit_tex.sum,lts__t_sectors_srcunit_tex.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_active.max,sm__cycles_active.avg,launch__cluster_max_active,lts__throughput.avg.pct_of_peak_sustained_elapsed
  for c in ${NCU_CFGS:-D Q1}; do
    [ "$(left)" -gt 14 ] || { echo "ncu $c skipped: $(left) s left"; continue; }
    i=$((i + 1))
    timeout $(( $(left) - 8 )) ncu --clock-control none -k 'regex:^ktune_gemm' --launch-count 1 \
      --section SourceCounters --section WarpStateStats --section SpeedOfLight --section LaunchStats \
      --metrics "$NCU_M" -f -o "/tmp/ncu_$c" \
      "$PB/bench/${BENCH_BIN:-gemm_bench}" --kinds=tma --profile --only="${!c}" --profile_lt= --shapes="$Q" \
      > "$OUT/ncu_bench_$c.txt" 2>&1
    at "ncu $c rc=$?"
    { echo "== $c: ${!c} at $Q"
      ncu -i "/tmp/ncu_$c.ncu-rep" --page details --section SpeedOfLight --section WarpStateStats 2>&1 |
        grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Stall|Warp Cycles Per Issued" | head -14
      ncu -i "/tmp/ncu_$c.ncu-rep" --page raw --csv --metrics "$NCU_M" 2>&1 | tail -2
      ncu -i "/tmp/ncu_$c.ncu-rep" --page source --csv --print-source sass > "/tmp/src_$c.csv" 2> "/tmp/src_$c.err" &&
        python3 dev/ncu_stalls.py "/tmp/src_$c.csv" || tail -3 "/tmp/src_$c.err"
    } >> "$OUT/ncu_stalls.txt" 2>&1
  done
fi
if [ "${COPY_FIRST:-0}" != 1 ] && [ "$(left)" -gt 5 ]; then
  timeout $(( $(left) - 1 )) python3 dev/copy_rate.py > "$OUT/copy.txt" 2>&1
fi
cat "$OUT/gpu.txt" "$OUT/copy.txt" 2>/dev/null
for p in $(seq 1 "${PROCS:-1}"); do
  [ -f "$OUT/bench_$p.err" ] || continue
  echo "== process $p: pre-pass (us)"
  grep -h "^cand" "$OUT/bench_$p.err" | grep -v cublaslt |
    sed 's/CONSUMERS=2,CLUSTER_M=1,//; s/GROUP_M=16,//; s/NUM_STAGES=/S/; s/BLOCK_N=/N/; s/WG_M=/W/' | awk '{print $2, $5, $6}'
  grep -h "^cand" "$OUT/bench_$p.err" | grep cublaslt | awk '{print $2, $5, $6}' | sort -k1,1 -k3,3n | awk '!seen[$1]++'
  grep -E "^(RESULT|RATIO|FP8)" "$OUT/bench_$p.txt" | sed 's/ gemm / /' | cut -c1-110
done
[ -f "$OUT/ncu_stalls.txt" ] && cat "$OUT/ncu_stalls.txt"
at total
