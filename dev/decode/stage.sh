#!/usr/bin/env bash
# Dev machine: a clean export of HEAD into the lead checkout's .devwork/decode (the folder the
# device call carries), with this tree's Release gemm_gpu_test, gemm_bench and ktune (+ worker) in pb/ laid out like
# a build tree, so dev/decode/device_tma.sh compiles nothing there. x86-64; GPU libraries are
# opened at run time.   bash dev/decode/stage.sh [DEST]     (BUILD_DIR=build; FILES: the build
# outputs to stage, default the four above, e.g. FILES=bench/gemm_bench for a bench-only call)
set -euo pipefail
DEST=${1:-$(git rev-parse --show-toplevel)/.devwork/decode}
B=${BUILD_DIR:-build}
rm -rf "$DEST" && mkdir -p "$DEST" && git archive HEAD | tar -x -C "$DEST"
for f in ${FILES:-tests/gemm_gpu_test bench/gemm_bench tools/ktune tools/ktune-worker}; do
  mkdir -p "$DEST/pb/$(dirname "$f")" && cp "$B/$f" "$DEST/pb/$f"
done
mkdir -p "$DEST/pb/lib" && cp -L /lib/x86_64-linux-gnu/libbenchmark.so.1debian "$DEST/pb/lib/"  # not on the GPU machine
cp -L "$B/api/libktune.so.0.1" "$DEST/pb/lib/"  # ktune-worker's (its build rpath is this machine's)
strip "$DEST"/pb/*/* 2>/dev/null || true
du -sh "$DEST" "$DEST/pb"
