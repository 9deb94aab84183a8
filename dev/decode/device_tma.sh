#!/bin/bash
# GPU machine, one call (issue 32, the decode kind's TMA-fed body DC_WG=2). Binaries from pb/
# (dev/decode/stage.sh built them on the dev machine; a build with dev/device_build.sh when they
# are missing or do not load). Steps, each cut by its own limit, logs under $OUT:
#   1. GemmGpu.DecodeTma* (or the filter TEST1; TMA_S s); nothing else runs if it fails or hangs;
#   2. PROCS processes (default 1) of gemm_bench --kinds=$KINDS --shapes=$SHAPES --rounds=$ROUNDS
#      (BENCH_S s each; PROBE=1 adds dev/decode/tma_probe.json's configs to the pre-pass); the
#      summary of each, then process 1's pre-pass (every candidate's time, flush) for the decode
#      kind, and the same run's read bound and cuBLASLt best;
#   3. NCU=1: ncu over NCU_CFGS at NCU_SHAPES (see step 4 below);
#   4. the other GemmGpu.Decode* tests (TEST_S s; 0 skips them).
set -uo pipefail
source "$(dirname "$0")/common.sh"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/summary.txt") 2>&1  # the summary survives a cut call
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv,noheader
B=$PWD/pb
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! "$B/bench/gemm_bench" --help > /dev/null 2>&1 || ! "$B/tests/gemm_gpu_test" --gtest_list_tests > /dev/null 2>&1; then
  S=$(date +%s)
  bash dev/device_build.sh gemm_gpu_test gemm_bench > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
  echo "build $(( $(date +%s) - S ))s"; B=/tmp/kb
fi
export KTUNE_CACHE_DIR=/tmp/kcache
S=$(date +%s)
timeout "${TMA_S:-40}" "$B/tests/gemm_gpu_test" --gtest_filter="${TEST1:-GemmGpu.DecodeTma*}" > "$OUT/tmatest.log" 2>&1
rc=$?
echo "tests ${TEST1:-GemmGpu.DecodeTma*} rc=$rc $(( $(date +%s) - S ))s"
grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure|bad|rror" "$OUT/tmatest.log" | head -20
[ "$rc" = 0 ] || [ "${TEST_GATE:-1}" = 0 ] || exit 2  # TEST_GATE=0: bench anyway (its VERIFY lines still check)
CUR=""; [ "${PROBE:-0}" = 1 ] && CUR="--curated=${PROBE_FILE:-dev/decode/tma_probe.json}"
for p in $(seq 1 "${PROCS:-1}"); do
  S=$(date +%s)
  timeout "${BENCH_S:-60}" "$B/bench/gemm_bench" --kinds=${KINDS:-decode} $CUR --shapes=${SHAPES:-1x4096x4096} \
    --rounds=${ROUNDS:-4} > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
  echo "bench $p rc=$? $(( $(date +%s) - S ))s"
done
grep -h "^VERIFY" "$OUT"/bench*.log | grep -v " ok " | head -10
grep -h "compile failed\|failed$" "$OUT"/bench*.err | head -5
print_bench_tables "${PROCS:-1}"
echo "== process 1 pre-pass: the ${TOP:-6} fastest per shape, mode and variant (us)"
python3 dev/decode/prepass_top.py "${TOP:-6}" < "$OUT/bench1.err"
# 4. NCU=1: one ncu pass over the decode configs NCU_CFGS (;-separated) and a linear read of the same
#    bytes (gemm_bench --profile) at NCU_SHAPES: duration, DRAM throughput, L2/DRAM tables.
if [ "${NCU:-0}" = 1 ] && command -v ncu > /dev/null; then
  S=$(date +%s)
  # NCU_AUTO=1: add the pre-pass's fastest decode config (plain, flush) of each NCU_SHAPES shape.
  if [ "${NCU_AUTO:-0}" = 1 ]; then
    AUTO=$(python3 dev/decode/prepass_top.py --best-decode "${NCU_SHAPES:-1x4096x4096,1x28672x4096}" < "$OUT/bench1.err")
    NCU_CFGS="${NCU_CFGS:+$NCU_CFGS;}$AUTO"; echo "ncu configs: $NCU_CFGS"
  fi
  timeout "${NCU_S:-90}" ncu --clock-control none -k 'regex:ktune_gemm_decode|ktune_read_bound' \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
    --section LaunchStats --section Occupancy --section WarpStateStats \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_read.sum.per_second,sm__cycles_active.avg,sm__cycles_active.max,gpc__cycles_elapsed.max,launch__waves_per_multiprocessor,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    "$B/bench/gemm_bench" --kinds=decode --profile --only="${NCU_CFGS:-}" \
    --print-details all --shapes="${NCU_SHAPES:-1x4096x4096,1x28672x4096}" > "$OUT/ncu.txt" 2>&1
  echo "ncu rc=$? $(( $(date +%s) - S ))s"
  # L2 sectors and requests by name (a separate pass: a name this ncu lacks fails only this one).
  timeout "${NCU2_S:-30}" ncu --clock-control none -k 'regex:ktune_gemm_decode|ktune_read_bound' \
    --metrics lts__t_sectors_op_read.sum,lts__t_requests_op_read.sum,lts__t_sectors_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,dram__sectors_read.sum \
    "$B/bench/gemm_bench" --kinds=decode --profile --only="${NCU_CFGS:-}" \
    --shapes="${NCU_SHAPES:-1x4096x4096,1x28672x4096}" > "$OUT/ncu2.txt" 2>&1
  echo "ncu2 rc=$?"; grep -E "^  [a-z_0-9]+.*\(|lts__|dram__|ERROR" "$OUT/ncu2.txt" | head -60
  grep -E "^PROFILE|^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|Memory Throughput|gpu__time|dram__bytes|dram__throughput|sm__cycles_active|gpc__cycles|launch__waves|lts__t_sector_hit|L2 Hit Rate |Warp Cycles Per Issued|Achieved Occupancy|Stall" "$OUT/ncu.txt" | head -${NCU_LINES:-80}
fi
if [ "${TEST_S:-30}" != 0 ]; then
  S=$(date +%s)
  timeout "${TEST_S:-30}" "$B/tests/gemm_gpu_test" \
    --gtest_filter='GemmGpu.Decode*:-GemmGpu.DecodeTma*' > "$OUT/gputest.log" 2>&1
  echo "decode tests rc=$? $(( $(date +%s) - S ))s"
  grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure|bad," "$OUT/gputest.log" | head -20
fi
