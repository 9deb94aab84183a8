#!/bin/bash
# GPU machine, one call (issue 32, fourteenth session): the wide-N decode shapes (N = 6144, 14336,
# 28672 at 64 and 128 rows) over 256-row tiles (DC_WARPS 8 x DC_NT 2; at 128 rows DC_PF = 3, the
# consumers' 128 accumulators under setmaxnreg) beside the earlier winners and the tma kind's
# curated configs, and an A/B of DC_XR = 3's cluster-scope acquire wait against the CTA-scope one:
#   1. the GemmGpu.Decode* tests (TESTS, one process per ;-separated filter, TEST_S s each), the
#      copy rate (dev/copy_rate.py);
#   2. PROCS gemm_bench processes (decode and tma kinds, --only the lists below, SHAPES, ROUNDS);
#   3. AB_PROCS processes alternating pb/bench/gemm_bench (acquire.cluster) and gemm_bench_base
#      (the CTA-scope wait) on the curated DC_XR = 3 configs at 64 / 128 x 4096x4096.
#   OUT=$OUT bash dev/decode/device_wide.sh     (binaries: dev/decode/stage.sh + the base binary)
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-200}"
d() { echo "DC_WG=2,DC_WARPS=$1,DC_NT=$2,DC_MT=$3,DC_U=$4,DC_DEPTH=$5,DC_PF=$6,DC_XR=$7,DC_GRID=$8"; }
t() { echo "BLOCK_N=$1,CONSUMERS=$2,WG_M=1,NUM_STAGES=$3,GROUP_M=$4,CLUSTER_M=1,EPI_TMA=$5,SPLIT_K=$6,PINGPONG=0"; }
L=""
for c in "8 2 16 1 2 3 3 4" "8 2 16 1 2 3 0 4" "8 2 16 1 2 3 3 5" "8 2 16 2 1 3 3 4" \
         "8 1 16 2 1 1 0 4" "8 1 16 1 2 1 0 0" "4 1 16 2 2 1 3 4" \
         "8 2 8 2 1 1 3 4" "8 2 8 1 2 1 3 4" "8 2 8 2 1 1 0 0" "8 2 8 1 2 1 3 5" "8 2 8 2 1 3 3 4" \
         "4 2 8 2 1 1 0 4" "4 2 8 2 1 2 0 4" "4 1 8 2 2 1 3 4" "8 2 8 2 1 1 0 6"; do L="$L;$(d $c)"; done
for c in "256 2 4 16 2 2" "256 2 4 16 2 1" "256 2 4 16 1 2" "256 2 4 16 2 4" "128 2 5 8 1 2" \
         "128 1 8 8 1 2" "128 1 8 8 1 4" "128 2 6 8 1 4" "256 1 4 8 1 1"; do L="$L;$(t $c)"; done
if [ "${TESTS:-}" != none ] && fits 30 tests; then
  GT_LINES=40 gpu_tests "GemmGpu.DecodeTmaClusterEnd*;GemmGpu.DecodeTmaVsReference;GemmGpu.DecodeTmaPair*:GemmGpu.DecodeTmaQuad*;GemmGpu.DecodeTmaCpAsyncA*:GemmGpu.DecodeFused*:GemmGpu.DecodeOp*;GemmGpu.DecodeWgmma*:GemmGpu.DecodeVs*:GemmGpu.DecodeFma*" 75
fi
fits 12 copy && timeout 20 python3 dev/copy_rate.py 2>&1 | tail -1
SHAPES=${SHAPES:-64x6144x4096,128x6144x4096,64x14336x4096,128x14336x4096,64x28672x4096,128x28672x4096}
bench_procs 3 60 --kinds=decode,tma "--only=${L#;}"
grep -h "^VERIFY" "$OUT"/bench*.log 2>/dev/null | grep -v " ok " | head -10
print_bench_tables "$n" 250
[ "$n" -ge 1 ] && { echo "== process 1 pre-pass: the ${TOP:-6} fastest per shape, mode and variant (us)";
                    python3 dev/decode/prepass_top.py "${TOP:-6}" < "$OUT/bench1.err" | cut -c1-700; }
mkdir -p "$OUT/wide" && mv "$OUT"/bench*.log "$OUT"/bench*.err "$OUT/wide/" 2>/dev/null
X="$(d 4 1 8 2 2 1 3 4);$(d 4 1 16 2 2 1 3 4)"
PROCS=${AB_PROCS:-4} BINS="gemm_bench gemm_bench_base" SHAPES=64x4096x4096,128x4096x4096 bench_procs 4 14 "--only=$X"
for p in $(seq 1 "$n"); do echo "== A/B process $p"; grep -E "^RESULT.* ktune " "$OUT/bench$p.log" | cut -c1-150; done
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err ./*.txt wide 2>/dev/null; rm -rf ./*.err wide)
