#!/bin/bash
# GPU machine, one call (issue 32, fifteenth session): the persistent decode grid with its tiles
# taken from a counter (DC_GRID = 8) against the fixed ranges (DC_GRID = 6) at the LLM suite's
# 16-row keys. Binaries from pb/ (dev/decode/stage.sh, dev/decode/trace_stage.sh); logs under $OUT:
#   1. the GemmGpu tests (TESTS, one process per ;-separated filter, TEST_S s each), the copy rate;
#   2. the A/B: one gemm_bench process (--only: G6 / G8 twins, 128- and 64-row tiles, and the
#      256-row G6) at AB_SHAPES, and the per-phase trace of the 128-row twins at 16x28672x4096
#      (each block's exit: a block's rate is its SM's);
#   3. PROCS gemm_bench processes over the four keys (the decode kind's curated list, which holds the
#      DC_GRID = 8 entries from N = 8192; the fair method), every process's pre-pass printed;
#   4. `ktune tune gemm --m 16 --n N --k K --layout NT --json` per key and dev/decode/tunecmp.py.
#   OUT=$OUT DEADLINE=130 bash dev/decode/device_dyn.sh
# DC_GRID = 8 was measured slower and reverted (bench/NOTES.md, fifteenth session): this script needs
# the tree of c9fb0a8 (the kernel, space and curated entries it times), staged from there.
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-130}"
KEYS=${KEYS:-16x6144x4096 16x4096x4096 16x28672x4096 16x4096x14336}
if [ "${TESTS:-}" != none ] && fits 30 tests; then
  GT_LINES=30 gpu_tests "GemmGpu.DecodeTmaVsReference;GemmGpu.DecodeVsReference" "${TEST_S:-50}"
fi
fits 12 copy && timeout 20 python3 dev/copy_rate.py 2>&1 | tail -1
d() { echo "DC_WG=2,DC_WARPS=$1,DC_NT=$2,DC_MT=2,DC_U=$3,DC_DEPTH=$4,DC_PF=1,DC_XR=0,DC_GRID=$5"; }
AB="$(d 8 1 2 2 6);$(d 8 1 2 2 8);$(d 4 1 4 2 6);$(d 4 1 4 2 8);$(d 8 2 1 3 6)"
if fits 25 ab; then
  S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout 16 "$B/bench/gemm_bench" --kinds=decode --only="$AB" \
    --shapes="${AB_SHAPES:-16x28672x4096,16x16896x4096}" --rounds=2 > "$OUT/ab.log" 2> "$OUT/ab.err"
  echo "ab rc=$? $(( $(date +%s) - S ))s"
fi
if fits 20 trace; then
  KTUNE_CACHE_DIR=/tmp/kcache_trace timeout 12 "$B/bench/gemm_bench_trace" --kinds=decode --trace=2 \
    --only="$(d 8 1 2 2 6);$(d 8 1 2 2 8)" --shapes=16x28672x4096 > "$OUT/trace.log" 2> "$OUT/trace.err"
  echo "trace rc=$?"
  python3 dev/decode/trace_table.py < "$OUT/trace.log" | cut -c1-300
fi
SHAPES=$(echo $KEYS | tr ' ' ,) bench_procs 3 "${BENCH_S:-14}"
grep -h "^VERIFY" "$OUT"/bench*.log "$OUT/ab.log" 2>/dev/null | grep -v " ok " | head -10
tune_keys
final_tables "$n" ab "A/B"
