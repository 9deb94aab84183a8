#!/bin/bash
# GPU machine, one call (issue 32, twenty-fourth session, helper small; after device_ef.sh): the
# curated DC_EF = 1 twins (the weight boxes evict-first) against their bases, today's picks, at
# 1..16 rows over the issue's N x K in PROCS (default 5) processes (knob_ab beside
# GemmGpu.DecodeCacheHintTwinsVsReference), then `ktune tune gemm` at TUNE_KEYS (the tuned op's
# pick at the suite's 16-row keys) with tunecmp.py's table.
#   OUT=$OUT DEADLINE=115 bash dev/decode/device_ef2.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-115}"
P16=$(d 2 4 1 4 2 3 4); M1="$(d 1 4 1 4 2 0 4),DC_XH=1"; Q16="$(d 2 4 2 2 2 3 4),DC_XH=1,DC_ST=1"
G6U2=$(d 2 8 1 2 2 0 6); G6U4=$(d 2 8 1 4 1 0 6); G0=$(d 2 4 2 4 1 0 0)
G6M1=$(d 1 8 1 4 1 0 6); G0M1=$(d 1 4 2 4 1 0 0)
KEYS_AB="1x4096x4096:$(v "$M1" DC_EF=1)
4x4096x4096:$(v "$M1" DC_EF=1)
16x4096x4096:$(v "$P16" DC_EF=1)
16x6144x4096:$(v "$Q16" DC_EF=1)
16x4096x14336:$(v "$P16" DC_EF=1)
4x4096x14336:$(v "$M1" DC_EF=1)
16x14336x4096:$(v "$G6U2" DC_EF=1):$(v "$G0" DC_EF=1)
4x14336x4096:$(v "$G0M1" DC_EF=1)
16x28672x4096:$(v "$G6U4" DC_EF=1):$(v "$G0" DC_EF=1)
1x28672x4096:$(v "$G6M1" DC_EF=1)"
SHAPES=$(echo "$KEYS_AB" | cut -d: -f1 | paste -sd,)
PROCS=${PROCS:-5} knob_ab "GemmGpu.DecodeCacheHintTwinsVsReference" "${TEST_DEF:-40}" 40 30 "${BENCH_DEF:-11}"
python3 dev/decode/l2p_table.py "$OUT" "$n" 2>&1 | grep -v " pre " > "$OUT/ab.txt"
python3 dev/decode/cfg_ratios.py "$OUT" "$n" > "$OUT/cfg.txt" 2>&1
KEYS=${TUNE_KEYS:-16x28672x4096 16x6144x4096} TUNE_S=${TUNE_S:-14} tune_keys > "$OUT/tune.txt" 2>&1
cut -c1-230 "$OUT/ab.txt"
cut -c1-170 "$OUT/cfg.txt" | head -40
cut -c1-200 "$OUT/tune.txt" | head -40
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err ./*.json 2>/dev/null; rm -f ./*.err ./*.log ./*.json)
