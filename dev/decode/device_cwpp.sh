#!/bin/bash
# GPU machine, one call (issue 32, twenty-third session, call 2): DC_PP = 1 (DC_CW = 2's two consumer
# warpgroups on alternate stages over all of A's rows, the sums traded after the loop) against
# today's picks and DC_CW = 2 alone at 32/64/128 rows: the per-stage trace (pb/bench/gemm_bench_stage,
# DC_TRACE 2), GemmGpu.DecodeTmaTwoConsumersVsReference (DC_CW 2 and DC_PP 1) beside gemm_bench
# process 0, then PROCS processes of the paired rounds (knob_ab, common.sh; cw_table.py).
#   OUT=$OUT DEADLINE=75 bash dev/decode/device_cwpp.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-75}"
d() {  # MT WARPS NT U DEPTH XR GRID [PF]
  echo "DC_WG=2,DC_WARPS=$2,DC_NT=$3,DC_MT=$1,DC_U=$4,DC_DEPTH=$5,DC_PF=${8:-1},DC_XR=$6,DC_GRID=$7"
}
A16=$(d 16 4 1 2 2 1 4); A16C3="$(d 16 8 1 2 2 3 4),DC_CW=2"; A16P3="$A16C3,DC_PP=1"
A16P1="$(d 16 8 1 2 2 1 4),DC_CW=2,DC_PP=1"
B16=$(d 16 8 2 1 2 3 5 3); C16=$(d 16 8 2 1 2 3 4 3)
P64=$(d 8 4 1 2 2 3 4); P64P="$(d 8 8 1 2 2 3 4),DC_CW=2,DC_PP=1"
Q64=$(d 8 4 1 2 3 3 4); Q64P="$(d 8 8 1 2 3 3 4),DC_CW=2,DC_PP=1"
P32=$(d 4 4 1 2 2 0 4); P32P="$(d 4 8 1 2 2 0 4),DC_CW=2,DC_PP=1"
KEYS_AB=${KEYS_AB:-"128x4096x4096:$A16:$A16C3:$A16P3:$A16P1
128x4096x14336:$A16:$A16C3:$A16P3
128x6144x4096:$B16:$A16C3:$A16P3
128x14336x4096:$C16:$A16P3
64x4096x4096:$P64:$P64P
64x4096x14336:$Q64:$Q64P
32x4096x4096:$P32:$P32P"}
echo "$KEYS_AB" > "$OUT/keys.txt"
SHAPES=$(echo "$KEYS_AB" | cut -d: -f1 | paste -sd,)
if [ -x "$B/bench/gemm_bench_stage" ] && fits 50 trace; then
  TO="$A16C3@128x4096x4096;$A16P3@128x4096x4096;$P64P@64x4096x4096"
  stage_trace 20 "$TO" 64x4096x4096,128x4096x4096
fi
knob_ab "GemmGpu.DecodeTmaTwoConsumersVsReference" 40 30 10 "${AB_S:-12}"
python3 dev/decode/cw_table.py "$OUT" "$n" "$OUT/keys.txt" 2>&1 | cut -c1-260 > "$OUT/ab.txt"
cat "$OUT/ab.txt"
end_call
