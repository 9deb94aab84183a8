#!/bin/bash
# GPU machine, one short call (issue 32, the decode kind's wgmma body DC_WG=1): build gemm_gpu_test
# and gemm_bench (dev/device_build.sh, carry .devdeps), run GemmGpu.DecodeWgmmaVsReference first
# (WG_S seconds; on failure or timeout nothing else runs), then gemm_bench's fair method over
# SHAPES (KINDS, default decode,skinny; ROUNDS) in PROCS processes (default 3) of at most BENCH_S
# seconds each, then the other GemmGpu.Decode* tests in what is left (TEST_S). Logs under $OUT.
set -uo pipefail
source "$(dirname "$0")/common.sh"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/summary.txt") 2>&1  # the summary survives a cut call
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
S=$(date +%s)
bash dev/device_build.sh gemm_gpu_test gemm_bench > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build $(( $(date +%s) - S ))s"
export KTUNE_CACHE_DIR=/tmp/kcache
S=$(date +%s)
timeout "${WG_S:-40}" /tmp/kb/tests/gemm_gpu_test --gtest_filter='GemmGpu.DecodeWgmma*' > "$OUT/wgtest.log" 2>&1
rc=$?
echo "wgmma test rc=$rc $(( $(date +%s) - S ))s"
grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure|bad," "$OUT/wgtest.log" | head -20
[ "$rc" = 0 ] || exit 2
SH=${SHAPES:-32x4096x4096,128x4096x4096,16x4096x4096,64x14336x4096}
for p in $(seq 1 "${PROCS:-3}"); do
  S=$(date +%s)
  timeout "${BENCH_S:-25}" /tmp/kb/bench/gemm_bench --kinds=${KINDS:-decode,skinny} --shapes=$SH \
    --rounds=${ROUNDS:-5} > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
  echo "bench $p rc=$? $(( $(date +%s) - S ))s"
done
grep -h "^VERIFY" "$OUT"/bench*.log | grep -v " ok " | head -10
print_bench_tables "${PROCS:-3}" 220
echo "== process 1 pre-pass (flush): shape kind config us"
grep -h "^cand .* flush " "$OUT/bench1.err" | sed -e 's/DC_PF=1,//; s/DC_XR=0,//; s/^cand //; s/ flush / /' | cut -c1-150 | head -80
S=$(date +%s)
timeout "${TEST_S:-30}" /tmp/kb/tests/gemm_gpu_test \
  --gtest_filter='GemmGpu.Decode*:-GemmGpu.DecodeWgmma*' > "$OUT/gputest.log" 2>&1
echo "decode tests rc=$? $(( $(date +%s) - S ))s"
grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure|bad," "$OUT/gputest.log" | head -20
