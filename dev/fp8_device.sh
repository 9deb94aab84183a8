#!/usr/bin/env bash
# GPU machine, issue 33 (the TMA GEMM at prefill shapes; FP8), one call against a deadline of BUDGET
# seconds, steps in order, each skipped once it would overrun:
#   TESTS=1   gemm_gpu_test's TMA split-tail and every-layout cases, gemm_fp8_gpu_test (the JIT
#             kernels against float64 / cuBLASLt references);
#   PROCS=N   N processes of `gemm_bench --kinds=tma --shapes=$SHAPES --rounds=$ROUNDS` (fair method:
#             read flush, interleaved rounds, cuBLASLt #0 and best in the same run), then the table;
#   NCU=1     ncu (SpeedOfLight, WarpStateStats, MemoryWorkloadAnalysis; clocks left alone) over
#             `gemm_bench --profile --only=$NCU_CFGS --shapes=$NCU_SHAPES`: one launch of each listed
#             tma config and of cuBLASLt #0 per shape.
# Binaries from pb/ (dev/fp8_stage.sh on the dev machine); when they do not run, a build (/tmp/kb).
# Logs under $OUT, a short table last.   BUDGET (230) TESTS (1) PROCS (3) ROUNDS (7) SHAPES (prefill)
set -uo pipefail
export PATH="$PATH:/usr/local/cuda/bin"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s)
left() { echo $(( ${BUDGET:-230} - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
PB=$PWD/pb
export LD_LIBRARY_PATH="$PB/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! "$PB/bench/gemm_bench" --shapes=none > /dev/null 2> "$OUT/prebuilt.err"; then
  echo "prebuilt binaries do not run ($(tail -1 "$OUT/prebuilt.err")): building"
  bash dev/device_build.sh gemm_gpu_test gemm_fp8_gpu_test gemm_bench > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  PB=/tmp/kb
fi
export KTUNE_CACHE_DIR=/tmp/kc-fp8
echo "binaries ok at $(( $(date +%s) - T0 )) s"
run_test() {  # name budget args...
  local n=$1 b=$2; shift 2
  [ "$(left)" -gt "$b" ] || { echo "$n skipped: $(left) s left"; return; }
  timeout "$b" "$@" > "$OUT/$n.log" 2>&1
  echo "$n rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure|worst error" "$OUT/$n.log" | cut -c1-300 | head -20
}
if [ "${TESTS:-1}" = 1 ]; then
  run_test gemm_gpu_test "${TEST_S:-75}" "$PB/tests/gemm_gpu_test" --gtest_brief=1 \
    --gtest_filter='GemmGpu.TmaSplitTail*:GemmGpu.TmaEveryLayout*'
  run_test gemm_fp8_gpu_test 30 "$PB/tests/gemm_fp8_gpu_test" --gtest_filter='*JitKernel*:*LargeJit*'
fi
for p in $(seq 1 "${PROCS:-3}"); do
  [ "$(left)" -gt "${BENCH_S:-60}" ] || { echo "bench $p skipped: $(left) s left"; break; }
  timeout "${BENCH_S:-60}" "$PB/bench/gemm_bench" --kinds=tma --shapes="${SHAPES:-prefill}" \
    --rounds="${ROUNDS:-7}" > "$OUT/bench$p.txt" 2> "$OUT/bench$p.err"
  echo "bench $p rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E "^VERIFY" "$OUT/bench$p.txt" | grep -v " ok " | head -5
done
grep -E "compile failed" "$OUT"/bench*.err | head -3
if [ "${NCU:-1}" = 1 ] && [ "$(left)" -gt 30 ] && command -v ncu > /dev/null; then
  timeout $(( $(left) - 8 )) ncu --clock-control none -k 'regex:^(ktune_gemm|[^k])' --launch-count 16 \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
    "$PB/bench/gemm_bench" --kinds=tma --profile --only="${NCU_CFGS:-}" \
    --shapes="${NCU_SHAPES:-4096x4096x4096,1024x14336x4096}" > "$OUT/ncu.txt" 2>&1
  echo "ncu rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E "^PROFILE|^  [a-z_0-9]+.*\(|Duration|Compute \(SM\) Throughput|DRAM Throughput|L2 Hit Rate |Warp Cycles Per Issued|Stall" "$OUT/ncu.txt" | head -60
fi
python3 dev/bench_table.py "$OUT"/bench*.txt > "$OUT/table.txt" 2>&1
cat "$OUT/gpu.txt"
# The fastest candidates of the pre-pass per shape (every curated tma config is timed there).
grep -h "^cand" "$OUT"/bench1.err 2>/dev/null | grep -v cublaslt | sort -k2,2 -k6,6g |
  awk '$2!=p{n=0} {p=$2; n++} n<=3 {print $2, $5, $6}' | sed 's/CLUSTER_M=1,//; s/GROUP_M=//; s/NUM_STAGES=/S/'
grep -h "^cand" "$OUT"/bench1.err 2>/dev/null | grep -E "CLUSTER_M=2|idx=" | awk '{print $2, $5, $6}' | head -30
grep -E "^RATIO" "$OUT/table.txt" | cut -c1-130
grep -E "^RESULT" "$OUT/table.txt" | cut -c1-130
echo "total $(( $(date +%s) - T0 )) s"
