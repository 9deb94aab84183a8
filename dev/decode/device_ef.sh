#!/bin/bash
# GPU machine, one call (issue 32, twenty-fourth session, helper small): the TMA boxes' L2 eviction
# priority (DC_EF 1: the weight boxes evict-first, as the read bound's ld.global.cs; 2: also A's
# boxes evict-last) beside today's picks at 1..16 rows over the issue's N x K: knob_ab beside
# GemmGpu.DecodeTmaCacheHintVsReference, PROCS (default 4) processes, l2p_table.py's X/base and
# cfg_ratios.py's read / X and cuBLASLt best / X.
#   OUT=$OUT DEADLINE=110 bash dev/decode/device_ef.sh   (DC_EF = 2 was removed after the call: run it
#   on 816b04d's tree)
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-110}"
P16=$(d 2 4 1 4 2 3 4); M1=$(d 1 4 1 4 2 0 4); Q16="$(d 2 4 2 2 2 3 4),DC_XH=1,DC_ST=1"
G6U2=$(d 2 8 1 2 2 0 6); G6U4=$(d 2 8 1 4 1 0 6); G0=$(d 2 4 2 4 1 0 0); G6M1=$(d 1 8 1 4 1 0 6)
E="DC_EF=1 DC_EF=2"
KEYS_AB="16x4096x4096:$(v "$P16" $E)
8x4096x4096:$(v "$M1,DC_XH=1" $E)
16x6144x4096:$(v "$Q16" $E)
16x4096x14336:$(v "$P16" $E)
16x14336x4096:$(v "$G6U2" $E):$(v "$G0" $E)
16x28672x4096:$(v "$G6U4" $E):$(v "$G0" $E)
4x28672x4096:$(v "$G6M1" $E)
1x14336x4096:$(v "$G6M1" $E)"
SHAPES=$(echo "$KEYS_AB" | cut -d: -f1 | paste -sd,)
PROCS=${PROCS:-4} knob_ab "GemmGpu.DecodeTmaCacheHintVsReference" "${TEST_DEF:-50}" 40 12 "${BENCH_DEF:-14}"
python3 dev/decode/l2p_table.py "$OUT" "$n" 2>&1 | grep -v " pre " > "$OUT/ab.txt"
python3 dev/decode/cfg_ratios.py "$OUT" "$n" > "$OUT/cfg.txt" 2>&1
cut -c1-230 "$OUT/ab.txt"
cut -c1-200 "$OUT/cfg.txt" | head -60
end_call
