#!/usr/bin/env bash
# Dev machine: a clean export of HEAD for the lead's GPU pass, with this tree's Release binaries in
# pb/ laid out like a build tree (tools/, tests/, bench/, api/), so the device call compiles nothing.
# x86-64 only; the GPU libraries are opened at run time. dev/lead_device.sh builds when they fail.
#   bash dev/lead_stage.sh [DEST]     (default .devwork/lead in this checkout; BUILD_DIR=build)
set -euo pipefail
DEST=${1:-$(git rev-parse --show-toplevel)/.devwork/lead}
B=${BUILD_DIR:-build}
rm -rf "$DEST" && mkdir -p "$DEST" && git archive HEAD | tar -x -C "$DEST"
for f in tools/ktune tools/ktune-worker tests/gemm_gpu_test tests/gemm_fp8_gpu_test \
         tests/shapes_gpu_test bench/gemm_bench bench/rowwise_bench bench/shape_first_call_bench; do
  mkdir -p "$DEST/pb/$(dirname "$f")" && cp "$B/$f" "$DEST/pb/$f"
done
mkdir -p "$DEST/pb/api" && cp -L "$B/api/libktune.so.0.1" "$DEST/pb/api/"
strip "$DEST"/pb/*/* 2>/dev/null || true
du -sh "$DEST" "$DEST/pb"
