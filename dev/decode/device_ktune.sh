#!/bin/bash
# GPU machine: build gemm_gpu_test and gemm_bench (dev/device_build.sh, carry .devdeps), run the
# decode kind's GPU tests (TEST_FILTER; skip with SKIP_TEST=1), then gemm_bench's fair method on
# decode shapes (KINDS, SHAPES; cuBLASLt default/best, the read bound and the gate/up epilogue in the
# same rounds), PROCS processes (default 3), each cut at BENCH_S seconds. Logs under $OUT.
set -uo pipefail
source "$(dirname "$0")/common.sh"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
S=$(date +%s)
T="gemm_gpu_test gemm_bench"; [ -n "${SKIP_TEST:-}" ] && T=gemm_bench
bash dev/device_build.sh $T > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build $(( $(date +%s) - S ))s"
export KTUNE_CACHE_DIR=/tmp/kcache
if [ -z "${SKIP_TEST:-}" ]; then
  S=$(date +%s)
  timeout "${TEST_S:-200}" /tmp/kb/tests/gemm_gpu_test \
    --gtest_filter="${TEST_FILTER:-GemmGpu.Decode*}" > "$OUT/gputest.log" 2>&1
  echo "gpu test rc=$? $(( $(date +%s) - S ))s"
  grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure|bad," "$OUT/gputest.log" | head -30
fi
SH=${SHAPES:-small}
for p in $(seq 1 "${PROCS:-3}"); do
  S=$(date +%s)
  timeout "${BENCH_S:-170}" /tmp/kb/bench/gemm_bench --kinds=${KINDS:-decode,skinny} --shapes=$SH \
    --rounds=${ROUNDS:-20} > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
  echo "bench $p rc=$? $(( $(date +%s) - S ))s"
done
grep -h "^VERIFY" "$OUT"/bench*.log | grep -v " ok " | head -10
print_bench_tables "${PROCS:-3}" 200
