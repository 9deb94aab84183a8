#!/usr/bin/env bash
# Final GPU-machine pass (lead): build, the newest gpu tests, call-overhead and isolation benches,
# CLI tuning cold/warm. At most 6 files under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
now() { date +%s.%N; }
el() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}'; }
cp -r ../.devdeps . 2>/dev/null
T0=$(now)
bash dev/device_build.sh > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "build ok $(el $T0)s"
export KTUNE_CACHE_DIR=/tmp/kcache
(cd /tmp/kb && timeout 240 ctest -j4 --timeout 200 -R "isolation_gpu|analysis_gpu|runtime_gpu|rowwise_ops_gpu" --output-on-failure > "$OUT/ctest.log" 2>&1)
grep -E "tests passed|\(Failed\)|Not Run|Timeout|Passed|Skipped" "$OUT/ctest.log" | head -12
echo "tests $(el $T0)s"
{ timeout 90 /tmp/kb/bench/tuned_call_bench --benchmark_counters_tabular=true 2>&1; echo "== isolation_bench"; timeout 120 /tmp/kb/bench/isolation_bench 2>&1; } > "$OUT/bench.txt"
grep -E "BM_|first_call|cand|isolat|steady|overhead" "$OUT/bench.txt" | head -24
K=/tmp/kb/tools/ktune
for i in 1 2; do
  S=$(now); timeout 120 $K tune gemm --m 4096 --n 4096 --k 4096 --layout NT > "$OUT/tune_gemm$i.txt" 2>&1
  echo "gemm 4096^3 run $i rc=$? wall=$(el $S)s"; grep -E "winner|compiled" "$OUT/tune_gemm$i.txt" | cut -c1-150
done
S=$(now); timeout 60 $K tune gemm --m 16 --n 4096 --k 4096 --layout NT > "$OUT/tune_gemm16.txt" 2>&1
echo "gemm 16x4096x4096 rc=$? wall=$(el $S)s"; grep -E "winner|compiled|%" "$OUT/tune_gemm16.txt" | head -6 | cut -c1-150
echo "total $(el $T0)s"
