#!/bin/bash
# GPU machine, one call (issue 32, twenty-sixth session, helper small): DC_ST (the start path cut: the
# first stages issued before the block barrier) on the curated DC_EF twins at 1..16 rows, each beside
# the twin in the same interleaved rounds (knob_ab: GemmGpu.DecodeCacheHintTwinsVsReference beside
# gemm_bench process 0, which compiles, then PROCS processes, read flush and rotation, cuBLASLt's best
# and the read in the same rounds, every second process reversed); sr_table.py's X/twin (TOKEN ST1)
# and cfg_ratios.py's read / X and cuBLASLt best / X.
#   OUT=$OUT DEADLINE=120 bash dev/decode/device_st26.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-120}"
EF=DC_EF=1; ST=DC_ST=1
P16="$(d 2 4 1 4 2 3 4),$EF"; Q="$(d 1 4 1 4 2 0 4),DC_XH=1,$EF"; E="$(d 1 4 2 2 2 0 4),$EF"
G6="$(d 2 8 1 4 1 0 6),$EF"; G6b="$(d 1 8 1 4 1 0 6),$EF"
KEYS_AB=${KEYS_AB:-"16x4096x4096:$P16:$P16,$ST
16x4096x14336:$P16:$P16,$ST
1x4096x4096:$Q:$Q,$ST
4x4096x4096:$Q:$Q,$ST
8x4096x4096:$Q:$Q,$ST
4x4096x14336:$Q:$Q,$ST
1x6144x4096:$E:$E,$ST:$E,DC_XH=1,$ST
4x6144x4096:$E:$E,$ST:$E,DC_XH=1,$ST
16x28672x4096:$G6:$G6,$ST
4x28672x4096:$G6b:$G6b,$ST
16x14336x4096:$G6:$G6,$ST"}
SHAPES=$(echo "$KEYS_AB" | cut -d: -f1 | paste -sd,)
knob_ab "GemmGpu.DecodeCacheHintTwinsVsReference:GemmGpu.DecodeTmaFewRowKnobsVsReference" "${TEST_DEF:-90}" 60 15 "${BENCH_DEF:-16}"
grep -h "^CLOCKS" "$OUT"/bench*.log | awk '{print $4, $5}' | sort | uniq -c | head -3
python3 dev/decode/sr_table.py "$OUT" "$n" ST1 2>&1 | cut -c1-200 > "$OUT/ab.txt"
python3 dev/decode/cfg_ratios.py "$OUT" "$n" 2>&1 | cut -c1-170 > "$OUT/ratios.txt"
cat "$OUT/ab.txt" "$OUT/ratios.txt"
end_call
