#!/bin/bash
# GPU machine, one short call (issue 32: the decode bodies' L2 prefetch before the programmatic-
# launch wait). Binaries from pb/ (bash dev/decode/stage.sh, plus pb/tests/pdl_gpu_test and
# pb/bench/gemm_bench_nopf: gemm_bench built from the tree before the prefetch). Logs under $OUT.
#   1. the GemmGpu.Decode* tests in TESTS parallel processes (one gtest filter each, ';'-separated)
#      and pdl_gpu_test (a chain under programmatic dependent launch), all at once, TEST_S s;
#   2. ALT processes of gemm_bench, alternating the prefetching binary and gemm_bench_nopf (the same
#      kernels without the prefetch; no programmatic launch in the bench, so this is its cost
#      alone), --shapes=$SHAPES --rounds=$ROUNDS, BENCH_S s each: read bound / ktune per process.
set -uo pipefail
source "$(dirname "$0")/common.sh"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/summary.txt") 2>&1
T0=$(date +%s)
B=$PWD/pb
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KTUNE_CACHE_DIR=/tmp/kcache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
start_gpu_tests "GemmGpu.DecodeFma*;GemmGpu.DecodeTma*;GemmGpu.DecodeVsReference:GemmGpu.DecodeWgmma*:GemmGpu.DecodeFused*:GemmGpu.DecodeOp*" 40
timeout "${TEST_S:-40}" "$B/tests/pdl_gpu_test" > "$OUT/pdl.log" 2>&1 & PIDS+=($!)
rcs=""; for p in "${PIDS[@]}"; do wait "$p"; rcs="$rcs $?"; done
echo "tests rc:$rcs ($(( $(date +%s) - T0 ))s)"
grep -hE "^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure|bad," "$OUT"/test*.log "$OUT/pdl.log" | head -30
for p in $(seq 1 "${ALT:-2}"); do
  bin=gemm_bench; [ $((p % 2)) = 0 ] && bin=gemm_bench_nopf
  S=$(date +%s)
  timeout "${BENCH_S:-15}" "$B/bench/$bin" --kinds=decode --shapes=${SHAPES:-1x4096x4096,16x4096x4096} \
    --rounds=${ROUNDS:-3} > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
  echo "bench $p ($bin) rc=$? $(( $(date +%s) - S ))s"
  grep -E "^RESULT .*(ktune|read_bound) |^RATIO .*read_bound/ktune" "$OUT/bench$p.log"
done
grep -h "^VERIFY" "$OUT"/bench*.log 2>/dev/null | grep -v " ok " | head -5
echo "call wall $(( $(date +%s) - T0 ))s"
