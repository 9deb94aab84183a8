#!/bin/bash
# GPU machine, one call (issue 32, twenty-first session, second task): the probe knob DC_KS (DC_GRID
# = 0 with DC_KS blocks per tile splitting K, reduced through the workspace: the cluster K split
# without the cluster launch) against each key's current pick (the first config of its KEYS line).
# Binaries from pb/ (dev/decode/stage.sh); logs under $OUT:
#   1. GemmGpu.DecodeTmaPlainKSplitVsReference in the background beside process 0 of gemm_bench
#      (it compiles every config; its times are not used);
#   2. PROCS gemm_bench processes, --only and --twin every key's configs, so all are timed in the
#      same interleaved rounds (flush and rotation) with cuBLASLt's best (the order reversed in even
#      processes);
#   3. dev/decode/ks_table.py: per key and mode, each config's µs and X/ref per process.
#   OUT=$OUT DEADLINE=64 bash dev/decode/device_ks.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-64}"
d() {  # MT WARPS NT U DEPTH XR GRID [extra]
  echo "DC_WG=2,DC_WARPS=$2,DC_NT=$3,DC_MT=$1,DC_U=$4,DC_DEPTH=$5,DC_PF=1,DC_XR=$6,DC_GRID=$7${8:+,$8}"
}
KEYS_AB="8x6144x4096:$(d 1 4 2 2 2 0 4):$(d 1 4 2 2 2 0 0 DC_KS=2)
16x6144x4096:$(d 2 4 2 2 2 3 4):$(d 2 4 2 2 2 0 0 DC_KS=2):$(d 2 4 2 4 1 0 0 DC_KS=2)
32x6144x4096:$(d 4 4 1 4 1 0 4):$(d 4 4 2 2 2 0 0 DC_KS=2)
16x4096x4096:$(d 2 4 1 4 2 3 4):$(d 2 4 1 4 2 0 0 DC_KS=2):$(d 2 4 2 2 2 0 0 DC_KS=4)
16x14336x4096:$(d 2 8 1 4 1 0 6):$(d 2 8 2 2 1 0 0 DC_KS=2)"
SHAPES=${SHAPES:-8x6144x4096,16x6144x4096,32x6144x4096,16x4096x4096,16x14336x4096}
knob_ab "GemmGpu.DecodeTmaPlainKSplitVsReference" 30 25 8 12
python3 dev/decode/ks_table.py "$OUT" "$n" 2>&1 | cut -c1-200 > "$OUT/ab.txt"
cat "$OUT/ab.txt"
end_call
