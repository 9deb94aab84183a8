#!/bin/bash
# GPU machine, one call (issue 32, twenty-third session, helper small; after device_small.sh): the
# confirmation A/B of the few-row knobs that device_small.sh found faster in 4 of 4 processes, in
# PROCS (default 6) processes: DC_XH at 1..8 rows (DC_MT 1) on every cluster-split pick, DC_XH +
# DC_ST on the 16-row cluster picks (and the DC_WP twin), DC_ST on the persistent (G6) and
# one-block-per-tile (G0) picks at 1..16 rows and on the 10-stage ring (its early stages capped at
# 4). Run at a53a4ef as DC_ST=3, the same code as today's DC_ST=1; knob_ab beside
# GemmGpu.DecodeTmaFewRowKnobsVsReference, l2p_table.py's X/base.
#   OUT=$OUT DEADLINE=95 bash dev/decode/device_small2.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-95}"
M1=$(d 1 4 1 4 2 0 4); M1W="$M1,DC_WP=1"; M1D5=$(d 1 4 1 2 5 0 4)
P16=$(d 2 4 1 4 2 3 4); P16W="$P16,DC_WP=1"; P16D5=$(d 2 4 1 2 5 3 4); Q16=$(d 2 4 2 2 2 3 4)
G6M1=$(d 1 8 1 4 1 0 6); G6M2=$(d 2 8 1 4 1 0 6); G0M1=$(d 1 4 2 4 1 0 0); G0M2=$(d 2 4 2 4 1 0 0)
XS="DC_XH=1,DC_ST=1"
KEYS_AB="1x4096x4096:$(v "$M1" DC_XH=1)
2x4096x4096:$(v "$M1" DC_XH=1)
4x4096x4096:$(v "$M1D5" DC_XH=1 DC_ST=1):$(v "$M1" DC_XH=1)
8x4096x4096:$(v "$M1" DC_XH=1):$(v "$M1W" DC_XH=1)
4x6144x4096:$(v "$(d 1 4 2 4 1 0 4)" DC_XH=1)
8x6144x4096:$(v "$(d 1 4 2 2 2 0 4)" DC_XH=1)
4x4096x14336:$(v "$M1" DC_XH=1)
8x4096x14336:$(v "$M1" DC_XH=1)
16x4096x4096:$(v "$P16" $XS):$(v "$P16W" $XS):$(v "$P16D5" DC_ST=1)
16x6144x4096:$(v "$Q16" $XS)
16x4096x14336:$(v "$P16" $XS)
16x14336x4096:$(v "$G6M2" DC_ST=1):$(v "$G0M2" DC_ST=1)
16x28672x4096:$(v "$G6M2" DC_ST=1)
8x28672x4096:$(v "$G6M1" DC_ST=1)
4x28672x4096:$(v "$G6M1" DC_ST=1)
1x14336x4096:$(v "$G6M1" DC_ST=1)
4x14336x4096:$(v "$G0M1" DC_ST=1)
8x14336x4096:$(v "$G0M1" DC_ST=1)"
SHAPES=$(echo "$KEYS_AB" | cut -d: -f1 | paste -sd,)
PROCS=${PROCS:-6} knob_ab "GemmGpu.DecodeTmaFewRowKnobsVsReference" "${TEST_DEF:-60}" 45 12 "${BENCH_DEF:-14}"
python3 dev/decode/l2p_table.py "$OUT" "$n" 2>&1 | grep -v " pre " > "$OUT/ab.txt"
cut -c1-230 "$OUT/ab.txt"
end_call
