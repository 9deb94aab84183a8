#!/bin/bash
# GPU machine: build gemm_gpu_test and gemm_bench (dev/device_build.sh, carry .devdeps), run the
# decode kind's GPU test, then gemm_bench's fair method on decode shapes (decode and skinny kinds,
# cuBLASLt default/best and the read bound in the same rounds), 3 processes. Logs under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
S=$(date +%s)
T="gemm_gpu_test gemm_bench"; [ -n "${SKIP_TEST:-}" ] && T=gemm_bench
bash dev/device_build.sh $T > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build $(( $(date +%s) - S ))s"
export KTUNE_CACHE_DIR=/tmp/kcache
if [ -z "${SKIP_TEST:-}" ]; then
  timeout 200 /tmp/kb/tests/gemm_gpu_test --gtest_filter='GemmGpu.DecodeVsReference' > "$OUT/gputest.log" 2>&1
  echo "gpu test rc=$?"; grep -E "OK|FAILED|Failure|bad" "$OUT/gputest.log" | head -20
fi
SH=${SHAPES:-small}
for p in 1 2 3; do
  S=$(date +%s)
  timeout 170 /tmp/kb/bench/gemm_bench --kinds=decode,skinny --shapes=$SH --rounds=${ROUNDS:-20} \
    > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
  echo "bench $p rc=$? $(( $(date +%s) - S ))s"
done
for p in 1 2 3; do echo "== process $p"; sed -n '/interleaved rounds/,$p' "$OUT/bench$p.log" | grep -v "^  ktune" | cut -c1-180; done
