#!/usr/bin/env bash
# GPU machine, issue 33 (FP8 GEMM), one call: build the fp8 GPU test and gemm_bench; run the test
# (JIT fp8 kernel and cuBLASLt FP8 against a float64 reference, the tuned op racing both); then
# `gemm_bench --kinds=tma --shapes=fp8` in PROCS processes (fp8 e4m3 and bf16 at 4096^3 and 8192^3,
# cuBLASLt default and best in the same run); with NCU=1 an ncu summary of the 4096^3 fp8 kernel.
# Logs under $OUT, a short table last. Every step checks the time left (BUDGET seconds from the
# start) so a call cut by its timeout still returns what ran.
#   PROCS (3)  ROUNDS (7)  BUDGET (250)  NCU (1)
set -uo pipefail
export PATH="$PATH:/usr/local/cuda/bin"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s)
left() { echo $(( ${BUDGET:-250} - ($(date +%s) - T0) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
bash dev/device_build.sh gemm_fp8_gpu_test gemm_bench > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "build ok at $(( $(date +%s) - T0 )) s"
{
  CUBLASLT_LOG_LEVEL=1 timeout 90 /tmp/kb/tests/gemm_fp8_gpu_test; echo "gpu test rc=$?"
} > "$OUT/gpu_test.log" 2>&1
grep -E -A3 "^\[  (PASSED|FAILED|  OK|SKIPPED) |Failure|worst|rc=|winner|cublasLt\]" "$OUT/gpu_test.log" | cut -c1-400 | head -60
for p in $(seq 1 "${PROCS:-3}"); do
  [ "$(left)" -gt 45 ] || { echo "bench $p skipped: $(left) s left"; break; }
  timeout $(( $(left) - 15 )) /tmp/kb/bench/gemm_bench --kinds=tma --shapes=fp8 --rounds="${ROUNDS:-7}" \
    > "$OUT/bench$p.txt" 2> "$OUT/bench$p.err"
  echo "bench $p rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E "^(FP8|VERIFY)" "$OUT/bench$p.txt" | grep -v " ok " | head -5
  grep -E "^FP8" "$OUT/bench$p.txt"
done
grep -E "compile failed" "$OUT"/bench*.err | head -3
python3 dev/bench_table.py "$OUT"/bench*.txt > "$OUT/table.txt" 2>&1
grep -E "f8e4m3|NT_4096x4096x4096|NT_8192x8192x8192" "$OUT/table.txt" | grep -E "ktune|ltbest|cublaslt" | head -24
sed -n '/^shape/,$p' "$OUT/bench1.txt" | head -20
if [ "${NCU:-1}" = 1 ] && [ "$(left)" -gt 25 ] && command -v ncu > /dev/null; then
  # The first tma launch of this test is the curated 4096^3 fp8 config.
  timeout $(( $(left) - 5 )) ncu -k regex:ktune_gemm_tma --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section Occupancy /tmp/kb/tests/gemm_fp8_gpu_test --gtest_filter='*LargeJit*' > "$OUT/ncu.txt" 2>&1
  echo "ncu rc=$?"
  grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Executed Ipc A|L2 Hit|Block Size|Grid Size" "$OUT/ncu.txt" | head -20
fi
cat "$OUT/gpu.txt"
echo "total $(( $(date +%s) - T0 )) s"
