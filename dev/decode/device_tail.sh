#!/bin/bash
# GPU machine, one call (issue 32, twenty-third session, helper small, second task: lever (c)):
# GemmGpu.DecodeTmaPersistentTailVsReference beside gemm_bench process 0 (compiles), then the
# paired A/B of DC_TAIL (the persistent grid's leftover tiles cut in k steps over every block,
# streamed first, reduced through the workspace) against the picks at 1/4/16 rows x 28672x4096
# and 14336x4096, PROCS (default 4) processes x 5 interleaved rounds, read flush and rotation, the
# read and cuBLASLt's best in the same rounds, every second process reversed; l2p_table.py's X/base.
#   OUT=$OUT DEADLINE=72 bash dev/decode/device_tail.sh   (needs c3854da, the DC_TAIL tree: the knob is reverted)
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-72}"
G6M1=$(d 1 8 1 4 1 0 6); G6M2=$(d 2 8 1 4 1 0 6); G6M2U2=$(d 2 8 1 2 2 0 6)
G0M1=$(d 1 4 2 4 1 0 0); G0M2=$(d 2 4 2 4 1 0 0)
KEYS_AB="1x28672x4096:$(v "$G6M1" DC_TAIL=1)
4x28672x4096:$(v "$G6M1" DC_TAIL=1)
16x28672x4096:$(v "$G6M2" DC_TAIL=1):$(v "$G6M2U2" DC_TAIL=1)
1x14336x4096:$(v "$G6M1" DC_TAIL=1)
4x14336x4096:$G0M1:$(v "$G6M1" DC_TAIL=1)
16x14336x4096:$G0M2:$(v "$G6M2" DC_TAIL=1)"
SHAPES=$(echo "$KEYS_AB" | cut -d: -f1 | paste -sd,)
PROCS=${PROCS:-4} knob_ab "GemmGpu.DecodeTmaPersistentTailVsReference" "${TEST_DEF:-45}" 35 8 "${BENCH_DEF:-10}"
python3 dev/decode/l2p_table.py "$OUT" "$n" 2>&1 | grep -v " pre " > "$OUT/ab.txt"
cut -c1-230 "$OUT/ab.txt"
end_call
