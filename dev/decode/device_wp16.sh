#!/bin/bash
# GPU machine, one call (issue 32, twenty-second session, after device_wp.sh): DC_WP = 1 against the
# same configs without it at the few-row keys, where device_wp.sh found 16x4096x4096's pick 3-4%
# faster: every TMA-fed pick with a ring of 4 or more stages at 4..16 rows (DC_WP starves the
# 2-stage rings) beside the 16x4096x4096 pick again; TESTS=none by default (device_wp.sh ran the
# GPU test on the same kernel source). knob_ab in common.sh; the table by l2p_table.py.
#   OUT=$OUT DEADLINE=80 bash dev/decode/device_wp16.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-80}"
export TESTS=${TESTS:-none}
p() { echo "$1:$1,DC_WP=1"; }  # a config and the same with the knob
KEYS_AB="16x4096x4096:$(p "$(d 2 4 1 4 2 3 4)"):$(p "$(d 2 4 1 2 5 3 4)")
8x4096x4096:$(p "$(d 1 4 1 4 2 0 4)")
4x4096x4096:$(p "$(d 1 4 1 2 5 0 4)")
16x6144x4096:$(p "$(d 2 4 2 2 2 3 4)")
16x4096x14336:$(p "$(d 2 4 1 4 2 3 4)"):$(p "$(d 2 4 1 2 5 3 4)")
16x14336x4096:$(p "$(d 2 8 1 2 2 0 6)")"
SHAPES=${SHAPES:-16x4096x4096,8x4096x4096,4x4096x4096,16x6144x4096,16x4096x14336,16x14336x4096}
knob_ab "GemmGpu.DecodeTmaPipelinedVsReference" 70 30 10 20
python3 dev/decode/l2p_table.py "$OUT" "$n" 2>&1 | grep -v " pre " | cut -c1-230 > "$OUT/ab.txt"
cat "$OUT/ab.txt"
end_call
