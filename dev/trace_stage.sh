#!/usr/bin/env bash
# Dev machine: a probe build of gemm_bench with one kernel's per-phase trace on, staged beside the
# binaries of an earlier stage script (dev/fp8_stage.sh, dev/decode/stage.sh) as DEST/pb/bench/NAME,
# for `NAME --trace=N` (bench/gemm_bench_modes.h). The header's `#define MACRO 0` is set to 1 for
# the build (VALUE: another value, e.g. 2: decode_wg_trace.cuh's per-stage stamps) and put back
# (the tree's binaries rebuilt as they were).
#   bash dev/trace_stage.sh HEADER MACRO DEST [NAME]   (BUILD_DIR=build; NAME: gemm_bench_trace; VALUE=1)
#   e.g. bash dev/trace_stage.sh templates/gemm/tma/tma_trace.cuh KT_TRACE .devwork/fp8
set -euo pipefail
F=$1; MACRO=$2; DEST=$3; NAME=${4:-gemm_bench_trace}
B=${BUILD_DIR:-build}
V=${VALUE:-1}
grep -q "^#define $MACRO 0\$" "$F"
trap 'sed -i "s/^#define $MACRO $V\$/#define $MACRO 0/" "$F"' EXIT
sed -i "s/^#define $MACRO 0\$/#define $MACRO $V/" "$F"
nice ninja -C "$B" -j2 gemm_bench > /dev/null
mkdir -p "$DEST/pb/bench" && cp "$B/bench/gemm_bench" "$DEST/pb/bench/$NAME" && strip "$DEST/pb/bench/$NAME"
sed -i "s/^#define $MACRO $V\$/#define $MACRO 0/" "$F"
nice ninja -C "$B" -j2 gemm_bench > /dev/null
echo "staged $DEST/pb/bench/$NAME"
