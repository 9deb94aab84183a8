#!/bin/bash
# GPU machine, one call (issue 32, twenty-third session): DC_CW = 2 (two consumer warpgroups on the
# same weight slabs, each over half of A's rows) against today's picks at 32/64/128 rows. First the
# per-stage trace (pb/bench/gemm_bench_stage: DC_TRACE 2) of the 128/64-row picks and their CW2
# twins; then GemmGpu.DecodeTmaTwoConsumersVsReference beside gemm_bench process 0 (it compiles),
# then PROCS gemm_bench processes, every key's configs as --only/--twin in the same interleaved
# rounds (flush and rotation, the read bound and cuBLASLt's best), every even process reversed
# (knob_ab, common.sh); dev/decode/cw_table.py: X/ref per process (ref: the key's first config).
#   OUT=$OUT DEADLINE=205 bash dev/decode/device_cw.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-205}"
d() {  # MT WARPS NT U DEPTH XR GRID [PF]
  echo "DC_WG=2,DC_WARPS=$2,DC_NT=$3,DC_MT=$1,DC_U=$4,DC_DEPTH=$5,DC_PF=${8:-1},DC_XR=$6,DC_GRID=$7"
}
A16=$(d 16 4 1 2 2 1 4); A16C="$(d 16 8 1 2 2 1 4),DC_CW=2"; A16C3="$(d 16 8 1 2 2 3 4),DC_CW=2"
B16=$(d 16 8 2 1 2 3 5 3); B16C="$(d 16 8 2 1 2 3 5),DC_CW=2"
C16=$(d 16 8 2 1 2 3 4 3); C16C="$(d 16 8 2 1 2 3 4),DC_CW=2"
P64=$(d 8 4 1 2 2 3 4); P64C="$(d 8 8 1 2 2 3 4),DC_CW=2"
Q64=$(d 8 4 1 2 3 3 4); Q64C="$(d 8 8 1 2 3 3 4),DC_CW=2"
E64=$(d 8 8 2 1 2 3 5); E64C="$E64,DC_CW=2"; F64=$(d 8 8 2 1 2 3 4); F64C="$F64,DC_CW=2"
P32=$(d 4 4 1 2 2 0 4); P32C="$(d 4 8 1 2 2 0 4),DC_CW=2"
KEYS_AB=${KEYS_AB:-"128x4096x4096:$A16:$A16C:$A16C3
128x4096x14336:$A16:$A16C
128x6144x4096:$B16:$B16C:$A16:$A16C
128x14336x4096:$C16:$C16C:$A16:$A16C
128x28672x4096:$C16:$C16C
64x4096x4096:$P64:$P64C
64x4096x14336:$Q64:$Q64C
64x6144x4096:$E64:$E64C:$P64:$P64C
64x14336x4096:$F64:$F64C:$P64:$P64C
32x4096x4096:$P32:$P32C"}
echo "$KEYS_AB" > "$OUT/keys.txt"
SHAPES=$(echo "$KEYS_AB" | cut -d: -f1 | paste -sd,)
if [ -x "$B/bench/gemm_bench_stage" ] && fits 60 trace; then
  TO="$A16@128x4096x4096;$A16C@128x4096x4096;$P64@64x4096x4096;$P64C@64x4096x4096"
  stage_trace 30 "$TO" 64x4096x4096,128x4096x4096
fi
knob_ab "GemmGpu.DecodeTmaTwoConsumersVsReference" 90 60 14 "${AB_S:-30}"
python3 dev/decode/cw_table.py "$OUT" "$n" "$OUT/keys.txt" 2>&1 | cut -c1-260 > "$OUT/ab.txt"
cat "$OUT/ab.txt"
end_call
