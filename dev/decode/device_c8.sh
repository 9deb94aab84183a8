#!/bin/bash
# GPU machine, one call (issue 32, lever (a)): the probe knob DC_C8 = 1 (the cluster K split's pairs,
# DC_GRID = 4, launched in clusters of 8 = 4 tiles' pairs, which map whole GPCs, where a cluster of
# 2 per tile fills the SMs in order) against the same configs without it: each key's current pick
# (the first config of its KEYS_AB line) and the other K-split tilings. Binaries from pb/
# (dev/decode/stage.sh); logs under $OUT:
#   1. GemmGpu.DecodeTmaCluster8VsReference in the background beside process 0 of gemm_bench (it
#      compiles every config; its times are not used);
#   2. PROCS gemm_bench processes, --only and --twin every config with and without the knob, so all
#      are timed in the same interleaved rounds (flush and rotation) with cuBLASLt's best (the
#      order reversed in even processes): knob_ab in common.sh;
#   3. dev/decode/l2p_table.py: per key, mode and config, both µs and C81/base per process.
# 16x14336x4096's pick is the persistent grid (G6: no cluster), timed as the reference beside the
# K split's two 128-row tilings (112 tiles: 224 blocks, 28 clusters of 8).
#   OUT=$OUT DEADLINE=150 bash dev/decode/device_c8.sh   (about 140 s: the test 60, 4 processes x 18)
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-150}"
p() { echo "$1:$1,DC_C8=1"; }  # a config and the same with the knob
KEYS_AB="8x6144x4096:$(p "$(d 1 4 2 2 2 0 4)")
16x6144x4096:$(p "$(d 2 4 2 2 2 3 4)"):$(p "$(d 2 4 1 4 2 3 4)")
32x6144x4096:$(p "$(d 4 4 1 4 1 0 4)"):$(p "$(d 4 4 2 2 2 0 4)")
16x4096x4096:$(p "$(d 2 4 1 4 2 3 4)"):$(p "$(d 2 4 1 2 5 3 4)"):$(p "$(d 2 4 2 2 2 3 4)")
16x14336x4096:$(d 2 8 1 4 1 0 6):$(p "$(d 2 4 2 2 2 3 4)"):$(p "$(d 2 8 1 2 2 3 4)")"
SHAPES=${SHAPES:-8x6144x4096,16x6144x4096,32x6144x4096,16x4096x4096,16x14336x4096}
knob_ab "GemmGpu.DecodeTmaCluster8VsReference" 60 35 10 18
python3 dev/decode/l2p_table.py "$OUT" "$n" 2>&1 | grep -v " pre " | cut -c1-260 > "$OUT/ab.txt"
cat "$OUT/ab.txt"
end_call
