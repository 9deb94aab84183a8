#!/usr/bin/env bash
# One call on the GPU machine: build everything, run every test (gpu label included), run the
# benchmarks given in BENCHES (default: all bench/*_bench), write logs under $OUT, print a summary.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
bash dev/device_build.sh > "$OUT/build.log" 2>&1 || { tail -60 "$OUT/build.log"; exit 1; }
echo "build ok"
(cd /tmp/kb && ctest --output-on-failure -j4 --timeout 300 ${CTEST_ARGS:-}) > "$OUT/ctest.log" 2>&1
grep -E "tests passed|Failed|Not Run|\*\*\*" "$OUT/ctest.log" | tail -30
for b in ${BENCHES:-$(ls /tmp/kb/bench/ 2>/dev/null | grep _bench$)}; do
  [ -x "/tmp/kb/bench/$b" ] || continue
  echo "== $b"
  timeout ${BENCH_TIMEOUT:-240} "/tmp/kb/bench/$b" --benchmark_counters_tabular=true ${BENCH_ARGS:-} > "$OUT/$b.txt" 2>&1
  tail -40 "$OUT/$b.txt"
done
cat "$OUT/gpu.txt"
