#!/bin/bash
# GPU machine, one call (issue 32, twentieth session): the rotated k order (DC_KROT = 1,
# pb/bench/gemm_bench_krot, built by dev/decode/variant_stage.sh) against the tree (DC_KROT = 0,
# pb/bench/gemm_bench) at the five 16-row keys, each key's two fastest configs of the table's call
# (--only and --twin the same list, reversed in even rounds), PROCS rounds of processes alternating
# the binaries; dev/decode/device_ring_pf.sh does the work (no tests, no trace), ab_table.py the table.
# DC_KROT was refuted and reverted: run it on 26a8c75's tree.
#   OUT=$OUT DEADLINE=85 bash dev/decode/device_krot.sh
source "$(dirname "$0")/common.sh"  # d
export KEYS_AB="16x4096x4096:$(d 2 4 1 2 5 3 4):$(d 2 4 1 4 2 3 4)
16x6144x4096:$(d 2 4 2 2 2 3 4):$(d 2 4 2 2 2 0 4)
16x14336x4096:$(d 2 4 2 4 1 0 0):$(d 2 8 1 4 1 0 6)
16x4096x14336:$(d 2 4 1 2 5 0 4):$(d 2 4 1 4 2 0 4)
16x28672x4096:$(d 2 8 1 2 2 0 6):$(d 2 8 1 4 1 0 6)"
export SHAPES=16x4096x4096,16x6144x4096,16x14336x4096,16x4096x14336,16x28672x4096
export BINS=${BINS:-"gemm_bench_krot gemm_bench"} TESTS=none TRACE_BINS=" "
export BENCH_S=${BENCH_S:-14} C0_S=${C0_S:-30} DEADLINE=${DEADLINE:-85}
bash "$(dirname "$0")/device_ring_pf.sh"
