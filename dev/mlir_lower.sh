#!/usr/bin/env bash
# Lowers the MLIR-written RMSNorm and SiLU·Mul (templates/mlir/) to PTX, one file per bf16 config,
# on a machine WITH mlir-opt-19 (the dev machine), into .mlirptx/ (ignored by git: carry it to the
# GPU machine, which has no MLIR tools). There tests/gpu/source_fn_mlir_gpu_test.cc tunes them
# through the per-config source callback and bench/rowwise_bench.cc times them (--mlir-ptx).
#   bash dev/mlir_lower.sh [BUILD_DIR] [ARCH]      (defaults: build, sm_90a)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ARCH=${2:-sm_90a}
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache > /dev/null
fi
ninja -C "$BUILD" -j"${JOBS:-2}" rowwise_bench > /dev/null
rm -rf .mlirptx
"$BUILD/bench/rowwise_bench" --lower-mlir=.mlirptx --arch="$ARCH"
ls .mlirptx | wc -l
