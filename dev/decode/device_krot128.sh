#!/bin/bash
# GPU machine, one call (issue 32, twenty-second session): the rotated k order (DC_KROT = 1: each
# block's K segment streamed from a step rotated by its index, so the blocks of a K half do not
# request the same A box at once; pb/bench/gemm_bench_krot, built by dev/decode/variant_stage.sh on
# the kstep() patch of 26a8c75) against the tree (pb/bench/gemm_bench) at 64 and 128 rows, where A is
# half or two thirds of a stage (the twentieth session refuted it at 16 rows, where A is a fifth):
# the picks and the per-stage-bound U1 D4 ring (device_ring128.sh), process rounds alternating the
# binaries (device_ring_pf.sh, ab_table.py); then one cold `ktune tune gemm --suite llm` (the
# tuned op's picks at the decode keys, with the DC_WP twins curated) if SUITE_S seconds are left.
#   OUT=$OUT DEADLINE=75 SUITE_S=30 bash dev/decode/device_krot128.sh
export KEYS_AB="128x4096x4096:$(d 16 4 1 2 2 1 4):$(d 16 4 1 1 4 1 4)
128x4096x14336:$(d 16 4 1 2 2 1 4):$(d 16 4 1 1 4 1 4)
64x4096x4096:$(d 8 4 1 2 2 3 4)
64x4096x14336:$(d 8 4 1 2 3 3 4)"
export SHAPES=128x4096x4096,128x4096x14336,64x4096x4096,64x4096x14336
export BINS=${BINS:-"gemm_bench_krot gemm_bench"} TESTS=none TRACE_BINS=" " PROCS=${PROCS:-2}
export BENCH_S=${BENCH_S:-14} C0_S=${C0_S:-30}
S0=$(date +%s)
DEADLINE=${AB_S:-60} bash "$(dirname "$0")/device_ring_pf.sh"
left=$(( ${DEADLINE:-75} - ($(date +%s) - S0) ))
if [ "$left" -gt "${SUITE_S:-30}" ]; then
  source "$(dirname "$0")/common.sh"
  B=$PWD/pb; export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  run_suite "$(( left - 3 ))" 2>&1 | tee "$OUT/suite.txt" | cut -c1-220
else
  echo "suite skipped: $left s left"
fi
