#!/usr/bin/env bash
# Dev machine, after dev/decode/stage.sh DEST: adds DEST/pb/bench/gemm_bench_trace, the tree's
# gemm_bench with the decode kernel's per-phase trace on (DC_TRACE = 1 in decode_wg_trace.cuh,
# built here and put back), for `gemm_bench_trace --trace=N` (bench/gemm_bench_modes.h).
#   bash dev/decode/trace_stage.sh DEST [NAME]     (BUILD_DIR=build; NAME: gemm_bench_trace)
set -euo pipefail
DEST=$1; NAME=${2:-gemm_bench_trace}
B=${BUILD_DIR:-build}
F=templates/gemm/decode/decode_wg_trace.cuh
grep -q '^#define DC_TRACE 0$' "$F"
trap 'sed -i "s/^#define DC_TRACE 1$/#define DC_TRACE 0/" "$F"' EXIT
sed -i 's/^#define DC_TRACE 0$/#define DC_TRACE 1/' "$F"
nice ninja -C "$B" -j2 gemm_bench > /dev/null
mkdir -p "$DEST/pb/bench" && cp "$B/bench/gemm_bench" "$DEST/pb/bench/$NAME" && strip "$DEST/pb/bench/$NAME"
sed -i 's/^#define DC_TRACE 1$/#define DC_TRACE 0/' "$F"
nice ninja -C "$B" -j2 gemm_bench > /dev/null
echo "staged $DEST/pb/bench/$NAME"
