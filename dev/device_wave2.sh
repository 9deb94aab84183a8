#!/usr/bin/env bash
# Lead's GPU pass after a merge: build everything, run every GPU test and the unit tests that touch
# the engine, then time the CLI's GEMM tuning (cold/warm) and the row-wise bench as a regression
# check against bench/NOTES.md. STAGE=tests|bench|python|fair|mlir|multi|all (default all;
# multi: dev/device_multi_gpu.sh, also added by MULTI_GPU=1). python: only
# the Python package's GPU tests and bench (dev/python_device.sh; PYTHON_STAGE=1 adds it to all);
# fair: only the fair same-run comparisons of dev/bench_device.sh (about 4-6 min); mlir: only the
# MLIR kernels' GPU test and bench (dev/mlir_device.sh; needs the carried .mlirptx; MLIR=1 adds it
# to any stage). Logs under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
now() { date +%s.%N; }
el() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
STAGE=${STAGE:-all}
T0=$(now)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
if [ ! -x /tmp/kb/tools/ktune ] || [ "${REBUILD:-0}" = 1 ]; then
  bash dev/device_build.sh > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
else
  cmake --build /tmp/kb -j"$(nproc)" > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
fi
echo "build ok $(el $T0)s"
if [ "$STAGE" = fair ]; then
  bash dev/bench_device.sh
  cat "$OUT/gpu.txt"; echo "total $(el $T0)s"; exit 0
fi
export KTUNE_CACHE_DIR=/tmp/kcache
if [ "$STAGE" = python ] || [ "${PYTHON_STAGE:-0}" = 1 ]; then
  bash dev/python_device.sh
  [ "$STAGE" = python ] && { echo "total $(el $T0)s"; exit 0; }
fi
if [ "$STAGE" = all ] || [ "$STAGE" = tests ]; then
  (cd /tmp/kb && timeout 420 ctest -j6 --timeout 300 -L gpu --output-on-failure > "$OUT/ctest_gpu.log" 2>&1)
  grep -E "tests passed|\(Failed\)|Not Run|Timeout|Skipped|Passed" "$OUT/ctest_gpu.log" | head -30
  echo "gpu tests $(el $T0)s"
  # Issue 19: the tuned GEMM op vs cuBLASLt's default (recorded interval and an independent
  # interleaved re-timing), and tuning off running the default.
  timeout 300 /tmp/kb/tests/gemm_vs_default_gpu_test > "$OUT/gemm_vs_default.txt" 2>&1
  echo "gemm vs default rc=$?"; grep -E "tuned/default|vs default|OK \]|FAILED" "$OUT/gemm_vs_default.txt" | cut -c1-200
fi
if [ "$STAGE" = all ] || [ "$STAGE" = bench ]; then
  K=/tmp/kb/tools/ktune
  for i in 1 2; do
    S=$(now); timeout 150 $K tune gemm --m 4096 --n 4096 --k 4096 --layout NT > "$OUT/tune_gemm$i.txt" 2>&1
    echo "gemm 4096^3 run $i rc=$? wall=$(el $S)s"; grep -E "winner|vs default|tuned in|compiled" "$OUT/tune_gemm$i.txt" | head -5 | cut -c1-200
  done
  for b in ${BENCHES:-tuned_call_bench}; do
    [ -x /tmp/kb/bench/$b ] || { echo "no $b"; continue; }
    timeout 200 /tmp/kb/bench/$b --benchmark_counters_tabular=true ${BENCH_ARGS:-} > "$OUT/$b.txt" 2>&1
    echo "== $b rc=$?"; grep -E "^BM_|^[A-Za-z].*(ns|us|ms) " "$OUT/$b.txt" | head -30 | cut -c1-170
  done
  # Issue 19 host cost per call (thread CPU time, GPU gated): HOST_REPS processes of
  # host_cost_bench, combined by dev/bench_table.py (median of the process medians, their range).
  # Batches of 128 (the default) and, as a second figure, of 32 calls.
  for b in 128 32; do
    mkdir -p "$OUT/host$b"
    for i in $(seq 1 "${HOST_REPS:-3}"); do
      timeout 200 /tmp/kb/bench/host_cost_bench --rounds=30 --batch=$b > "$OUT/host$b/host.$i.log" 2> "$OUT/host$b/host.$i.err"
      echo "host_cost_bench batch $b process $i rc=$?"
    done
    echo "== host cost, batches of $b"
    python3 dev/bench_table.py "$OUT"/host$b/host.*.log | grep -E "hostcost|clocks" | tee "$OUT/host$b/table.txt" | cut -c1-150
  done
fi
if [ "$STAGE" = mlir ] || [ "${MLIR:-0}" = 1 ]; then
  B=/tmp/kb bash dev/mlir_device.sh
fi
if [ "$STAGE" = multi ] || [ "${MULTI_GPU:-0}" = 1 ]; then
  # Multi-GPU tuning and the queue (issue 17, dev/device_multi_gpu.sh): on one GPU, --devices all
  # vs 0 (no slower) and one server; its own table.
  STAGE=nogtests SKIP_BUILD=0 timeout ${MULTI_TIMEOUT:-400} bash dev/device_multi_gpu.sh 2>&1 | tail -14
fi
cat "$OUT/gpu.txt"
echo "total $(el $T0)s"
