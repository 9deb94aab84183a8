#!/usr/bin/env bash
# GPU machine, issue 33, the ping-pong consumers (tma PINGPONG = 1): one call against a deadline of
# BUDGET seconds, steps in order, each skipped once it would overrun (binaries staged by
# dev/fp8_stage.sh into pb/, nothing is built here).
#   1. correctness: gemm_fp8_gpu_test's JIT cases (ping-pong e4m3/e5m2, bias, beta, one tile, 4096^3)
#      and, at the same time, gemm_gpu_test's every-layout TMA case (ping-pong at odd shapes in
#      NN/NT/TN/TT, 2048^3 against cuBLASLt). A ping-pong that hangs or fails stops the call here.
#   2. two gemm_bench processes, fair method (read flush, interleaved rounds, cuBLASLt #0 and best of
#      8 in the same process): without ping-pong (--only=$D;$B) and with it (--only=$P1;$P2;$P3;$P4),
#      over the bf16 prefill shapes and fp8 4096^3 / 8192^3.
#   3. ncu (clocks left alone; the metrics of dev/ncu_table.py) over one launch each of D, P1, P2 and
#      cuBLASLt #0 at 4096^3 and 1024x14336x4096.
#   4. the device-to-device copy rate (torch): the memory bounds of the figures.
# Logs under $OUT, tables last.   BUDGET (150) ROUNDS (5) TEST_S (45) TESTS (1) BENCH (1) NCU (1)
set -uo pipefail
. dev/fp8_device_common.sh
P1="BLOCK_N=256,$C2,WG_M=1,NUM_STAGES=4,GROUP_M=16,EPI_TMA=1,SPLIT_K=1,PINGPONG=1"
P2="BLOCK_N=128,$C2,WG_M=2,NUM_STAGES=6,GROUP_M=16,EPI_TMA=1,SPLIT_K=1,PINGPONG=1"
P3="BLOCK_N=256,$C2,WG_M=1,NUM_STAGES=5,GROUP_M=16,EPI_TMA=0,SPLIT_K=1,PINGPONG=1"
P4="BLOCK_N=192,$C2,WG_M=1,NUM_STAGES=6,GROUP_M=16,EPI_TMA=1,SPLIT_K=1,PINGPONG=1"
SHAPES=fp8,4096x4096x4096,8192x8192x8192,4096x6144x4096,4096x4096x14336,1024x14336x4096,2048x28672x8192,3000x5000x1000,3000x5000x1000:NN
TS=${TEST_S:-45}
if [ "${TESTS:-1}" != 0 ]; then  # TESTS=fp8: the fp8 program only
timeout "$TS" stdbuf -oL "$PB/tests/gemm_fp8_gpu_test" --gtest_filter='*JitKernel*:*LargeJit*' > "$OUT/fp8_test.log" 2>&1 &
F=$!
RB=0
[ "${TESTS:-1}" = fp8 ] || { timeout "$TS" stdbuf -oL "$PB/tests/gemm_gpu_test" --gtest_filter='GemmGpu.TmaEveryLayout*' > "$OUT/gemm_test.log" 2>&1; RB=$?; }
wait $F; RF=$?
at "tests: gemm_fp8_gpu_test rc=$RF, gemm_gpu_test rc=$RB"
grep -hE "^\[  (PASSED|FAILED) |Failure|PINGPONG=1.*worst|OK \]" "$OUT/fp8_test.log" "$OUT/gemm_test.log" | cut -c1-220 | head -16
# A test cut by its timeout: where it was (the benches' own timeouts bound a hang there too).
[ "$RF" = 124 ] && tail -3 "$OUT/fp8_test.log" | cut -c1-200
fi
for v in nopp pp; do
  [ "${BENCH:-1}" = 1 ] || break
  ONLY="$D;$B"; [ "$v" = pp ] && ONLY="$P1;$P2;$P3;$P4"
  [ "$(left)" -gt "${BENCH_S:-35}" ] || { echo "bench $v skipped: $(left) s left"; continue; }
  timeout "${BENCH_S:-35}" stdbuf -oL "$PB/bench/gemm_bench" --kinds=tma --only="$ONLY" \
    --shapes=$SHAPES --rounds="${ROUNDS:-5}" > "$OUT/bench_$v.txt" 2> "$OUT/bench_$v.err"
  at "bench $v rc=$?"
  grep -E "^VERIFY" "$OUT/bench_$v.txt" | grep -v " ok " | head -5
done
if [ "${NCU:-1}" = 1 ] && [ "$(left)" -gt 30 ] && command -v ncu > /dev/null; then
  timeout 15 ncu --query-metrics > "$OUT/ncu_query.txt" 2>&1
  M=$(python3 dev/ncu_table.py --metrics "$OUT/ncu_query.txt")
  case "$M" in *gpu__time_duration*) SEC=(--metrics "$M") ;;
    *) SEC=(--section SpeedOfLight --section WarpStateStats) ;; esac
  Q=4096x4096x4096
  timeout $(( $(left) - 12 )) ncu --clock-control none -k 'regex:^(ktune_gemm|[^k])' --launch-count 8 \
    --section LaunchStats "${SEC[@]}" --csv --page raw --log-file "$OUT/ncu.csv" \
    "$PB/bench/gemm_bench" --kinds=tma --profile --only="$D@$Q;$P1;$P2" --profile_lt=0 \
    --shapes="${NCU_SHAPES:-$Q,1024x14336x4096}" > "$OUT/ncu_bench.txt" 2> "$OUT/ncu_bench.err"
  at "ncu rc=$?"
fi
if [ "$(left)" -gt 5 ]; then
  timeout $(( $(left) - 1 )) python3 dev/copy_rate.py > "$OUT/copy.txt" 2>&1
fi
cat "$OUT/gpu.txt" "$OUT/copy.txt" 2>/dev/null
for v in nopp pp; do
  echo "== $v: pre-pass (us)"
  grep -h "^cand" "$OUT/bench_$v.err" 2>/dev/null | grep -v cublaslt |
    sed 's/CONSUMERS=2,CLUSTER_M=1,//; s/GROUP_M=16,//; s/NUM_STAGES=/S/; s/BLOCK_N=/N/; s/WG_M=/W/' | awk '{print $2, $5, $6}'
  grep -E "^(RESULT|RATIO|FP8)" "$OUT/bench_$v.txt" 2>/dev/null | sed 's/ gemm / /' | cut -c1-110
done
[ -f "$OUT/ncu.csv" ] && python3 dev/ncu_table.py "$OUT/ncu.csv" "$OUT/ncu_bench.txt" > "$OUT/ncu_table.txt" 2>&1 &&
  head -c 5000 "$OUT/ncu_table.txt"
at total
