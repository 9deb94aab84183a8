#!/bin/bash
# GPU machine, one call (issue 32, twenty-second session): the probe knob DC_WP = 1 (the TMA-fed
# consumers keep a stage's wgmmas in flight and release its slot a stage later) against the same
# configs without it, paired: GemmGpu.DecodeTmaPipelinedVsReference beside gemm_bench process 0
# (it compiles), then PROCS gemm_bench processes, every config with and without the knob as --only
# and --twin in the same interleaved rounds (flush and rotation, cuBLASLt's best), every even
# process reversed (knob_ab in common.sh); the table by dev/decode/l2p_table.py (WP1/base).
# Keys: the 32/64/128-row picks at 4096x4096 and 6144x4096 (and 128x4096x14336, the long stream),
# the U1 D4 ring at 128 rows (the per-stage-bound shape of the ring probe), the 16-row picks
# (16x4096x4096, the persistent 16x28672x4096) as controls.
#   OUT=$OUT DEADLINE=130 bash dev/decode/device_wp.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-130}"
p() { echo "$1:$1,DC_WP=1"; }  # a config and the same with the knob
KEYS_AB="128x4096x4096:$(p "$(d 16 4 1 2 2 1 4)"):$(p "$(d 16 4 1 1 4 1 4)")
128x4096x14336:$(p "$(d 16 4 1 2 2 1 4)")
64x4096x4096:$(p "$(d 8 4 1 2 2 3 4)"):$(p "$(d 8 4 1 2 3 3 4)")
32x4096x4096:$(p "$(d 4 4 1 2 2 0 4)")
32x6144x4096:$(p "$(d 4 4 1 4 1 0 4)")
16x4096x4096:$(p "$(d 2 4 1 4 2 3 4)")
16x28672x4096:$(p "$(d 2 8 1 2 2 0 6)"):$(p "$(d 2 8 1 4 1 0 6)")"
SHAPES=${SHAPES:-128x4096x4096,128x4096x14336,64x4096x4096,32x4096x4096,32x6144x4096,16x4096x4096,16x28672x4096}
knob_ab "GemmGpu.DecodeTmaPipelinedVsReference" 70 40 12 25
python3 dev/decode/l2p_table.py "$OUT" "$n" 2>&1 | grep -v " pre " | cut -c1-230 > "$OUT/ab.txt"
cat "$OUT/ab.txt"
end_call
