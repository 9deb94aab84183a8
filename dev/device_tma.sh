#!/usr/bin/env bash
# GPU machine: build the GEMM tests/bench, check the TMA kernel against the references, then time
# the Hopper kernels against cuBLASLt. Logs under $OUT; a short table last.
#   KINDS (default tma,wgmma)  SHAPES (default all: large|small|all)  FILTER (gtest filter)
#   TUNE=1: also time `ktune tune gemm` 4096^3 cold and warm, with the default candidates and with
#   TUNE_ARGS (default "--kinds tma --full-space").
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > /tmp/gpu.txt 2>&1
bash dev/device_build.sh gemm_gpu_test gemm_bench ${EXTRA_TESTS:-} > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "build ok"
# EXTRA_TESTS: more test executables (tests/<name>) to build and run, output in extra_tests.log.
for t in ${EXTRA_TESTS:-}; do
  bash dev/device_build.sh ktune ktune-worker >> "$OUT/build.log" 2>&1
  echo "== $t" >> "$OUT/extra_tests.log"
  timeout 240 /tmp/kb/tests/$t >> "$OUT/extra_tests.log" 2>&1; echo "$t rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" "$OUT/extra_tests.log" | tail -4
done
[ "${FILTER:-}" = none ] || timeout 240 /tmp/kb/tests/gemm_gpu_test --gtest_filter="${FILTER:-*Tma*}" > "$OUT/gpu_test.log" 2>&1
echo "gpu test rc=$?"; grep -E "^\[  (PASSED|FAILED|  OK|SKIPPED) |Failure|mismatch|error" "$OUT/gpu_test.log" | head -20
sargs=(); [ "${SHAPES:-all}" != all ] && sargs=(--shapes="$SHAPES")
[ "${KINDS:-}" = none ] || timeout ${BENCH_TIMEOUT:-300} /tmp/kb/bench/gemm_bench --kinds="${KINDS:-tma,wgmma}" "${sargs[@]}" ${BENCH_ARGS:-} > "$OUT/gemm_bench.txt" 2> "$OUT/gemm_bench.err"
echo "bench rc=$?"
grep -E "compile failed|failed" "$OUT/gemm_bench.err" | head -5
sort -t' ' -k6 -g "$OUT/gemm_bench.err" | grep "^cand" | awk '{print $2, $4, $5, $6}' | sort -k1,1 -k4,4g | awk '$1!=p{n=0} {p=$1; n++} n<=3' > /tmp/top3.txt
cat /tmp/top3.txt | head -40
sed -n '/^shape/,$p' "$OUT/gemm_bench.txt"
if [ "${TUNE:-0}" = 1 ]; then
  bash dev/device_build.sh ktune ktune-worker >> "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
  now() { date +%s.%N; }
  el() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}'; }
  # 4096^3 with the default candidates (curated JIT configs of every kernel + cuBLASLt). cold: empty
  # code cache and database; warm: code objects cached, fresh database (so every candidate is
  # measured again, nothing resumed).
  export KTUNE_CACHE_DIR=/tmp/kc
  i=0
  for run in ${TUNE_RUNS:-cold warm warm-noiso warm-rep10}; do
    i=$((i+1)); rm -rf /tmp/kdb$i; export KTUNE_DB=/tmp/kdb$i/db  # fresh database every run
    extra=""; envs=""
    case "$run" in *noiso*) extra=--no-isolate;; *rep10*) envs="KTUNE_REP_MS=10 KTUNE_WARMUP_MS=2";; esac
    case "$run" in *nopipe*) envs="$envs KTUNE_PIPELINE=0";; esac
    case "$run" in cold*) rm -rf "$KTUNE_CACHE_DIR";; esac  # every cold run starts from an empty cache
    S=$(now); env $envs timeout 150 /tmp/kb/tools/ktune tune gemm --m 4096 --n 4096 --k 4096 --layout NT $extra ${TUNE_ARGS:-} > "$OUT/tune$i.txt" 2>&1
    echo "tune [$run] rc=$? wall=$(el $S)s"
    grep -iE "compiled|winner|bench in this" "$OUT/tune$i.txt" | head -3 | cut -c1-150
  done
  unset KTUNE_DB
fi
cat /tmp/gpu.txt
