#!/usr/bin/env bash
# GPU machine, issue 33's profile: one call against a deadline of BUDGET seconds, steps in order,
# each skipped once it would overrun (binaries staged by dev/fp8_stage.sh into pb/).
#   1. ncu (clocks left alone) over `gemm_bench --profile`: the tuning-off default tma config ($D)
#      and cuBLASLt's best algorithms at 4096^3, 1024x14336x4096 and 8192^3; at 4096^3 also the
#      two-block cluster configs ($CL, and $CL2 with the deferred epilogue) and the cluster-less
#      twin of $CL ($T) (the cluster probe).
#      Metrics: those of dev/ncu_table.py that this ncu knows (throughputs, tensor pipe, stall
#      reasons, launch/cluster figures), plus the LaunchStats and Occupancy sections.
#   2. one gemm_bench process, fair method (read flush, interleaved rounds, cuBLASLt #0 and best of
#      8 in the same run): bf16 and fp8 at 4096^3 and 8192^3 (FP8 JIT / bf16 JIT), the tail shape,
#      and a K sweep at 4096x4096 (K 2048 / 8192: the K-independent share of a tile's time).
#   3. the device-to-device copy rate (torch), for the memory bounds.
#   4. gemm_fp8_gpu_test's JIT cases (TESTS=1).
# Logs under $OUT, the tables last.   BUDGET (120) ROUNDS (3) NCU (1) BENCH (1) TESTS (1)
set -uo pipefail
BUDGET_DEFAULT=120
. dev/fp8_device_common.sh
P='BLOCK_N=256,CONSUMERS=2,WG_M=1,NUM_STAGES=4,PINGPONG=0'
D="$P,GROUP_M=16,CLUSTER_M=1,EPI_TMA=2,SPLIT_K=2"
T="$P,GROUP_M=8,CLUSTER_M=1,EPI_TMA=1,SPLIT_K=1"
CL="$P,GROUP_M=8,CLUSTER_M=2,EPI_TMA=1,SPLIT_K=1"
CL2="$P,GROUP_M=16,CLUSTER_M=2,EPI_TMA=2,SPLIT_K=1"
E1="$P,GROUP_M=16,CLUSTER_M=1,EPI_TMA=1,SPLIT_K=2"
S4="$P,GROUP_M=16,CLUSTER_M=1,EPI_TMA=2,SPLIT_K=4"
Q=4096x4096x4096
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null; then
  timeout 20 ncu --query-metrics > "$OUT/ncu_query.txt" 2>&1
  M=$(python3 dev/ncu_table.py --metrics "$OUT/ncu_query.txt")
  case "$M" in *gpu__time_duration*) SEC=(--metrics "$M") ;;
    *) echo "metric query gave nothing usable: sections"; SEC=(--section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis) ;; esac
  echo "ncu query done at $(( $(date +%s) - T0 )) s"
  timeout $(( $(left) - 45 )) ncu --clock-control none -k 'regex:^(ktune_gemm|[^k])' --launch-count 12 \
    --section LaunchStats --section Occupancy "${SEC[@]}" --csv --page raw --log-file "$OUT/ncu.csv" \
    "$PB/bench/gemm_bench" --kinds=tma --profile --only="$D;$T@$Q;$CL@$Q;$CL2@$Q" \
    --profile_lt="0,6@8192x8192x8192" --shapes=$Q,1024x14336x4096,8192x8192x8192 \
    > "$OUT/ncu_bench.txt" 2> "$OUT/ncu_bench.err"
  echo "ncu rc=$? at $(( $(date +%s) - T0 )) s"
fi
if [ "${BENCH:-1}" = 1 ] && [ "$(left)" -gt 25 ]; then
  timeout $(( $(left) - 8 )) "$PB/bench/gemm_bench" --kinds=tma --only="$D;$E1;$T;$CL;$CL2;$S4@1024x14336x4096" \
    --shapes=fp8,$Q,8192x8192x8192,1024x14336x4096,4096x4096x2048,4096x4096x8192 \
    --rounds="${ROUNDS:-3}" > "$OUT/bench1.txt" 2> "$OUT/bench1.err"
  echo "bench rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E "^VERIFY" "$OUT/bench1.txt" | grep -v " ok " | head -5
fi
# The cluster variant's barriers changed: the fp8 JIT cases (a cluster pair at an odd M, the deferred
# epilogue over a stream-K tail, splits) against the float64 reference.
if [ "${TESTS:-1}" = 1 ] && [ "$(left)" -gt 20 ] && [ -x "$PB/tests/gemm_fp8_gpu_test" ]; then
  timeout $(( $(left) - 8 )) "$PB/tests/gemm_fp8_gpu_test" --gtest_filter='*JitKernel*' > "$OUT/fp8_test.log" 2>&1
  echo "gemm_fp8_gpu_test rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E "^\[  (PASSED|FAILED) |Failure|worst error" "$OUT/fp8_test.log" | cut -c1-200 | head -12
fi
if [ "$(left)" -gt 6 ]; then
  timeout $(( $(left) - 2 )) python3 dev/copy_rate.py > "$OUT/copy.txt" 2>&1
fi
cat "$OUT/gpu.txt" "$OUT/copy.txt" 2>/dev/null
grep -h "^cand" "$OUT"/bench1.err 2>/dev/null | sed 's/BLOCK_N=256,CONSUMERS=2,WG_M=1,NUM_STAGES=4,//; s/CLUSTER_M=1,//; s/GROUP_M=//'
[ -f "$OUT/ncu.csv" ] && python3 dev/ncu_table.py "$OUT/ncu.csv" "$OUT/ncu_bench.txt" | tee "$OUT/ncu_table.txt"
grep -E "^(RESULT|RATIO|FP8)" "$OUT/bench1.txt" 2>/dev/null | cut -c1-140
echo "total $(( $(date +%s) - T0 )) s"
