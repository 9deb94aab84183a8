#!/usr/bin/env bash
# Dev machine: a clean export of HEAD for dev/fp8_device.sh, with this tree's Release binaries of
# the issue-33 programs in pb/ (laid out like a build tree; tools/ktune and its worker, with the
# worker's libktune.so in pb/lib, for the main job), so the device call compiles nothing.
#   bash dev/fp8_stage.sh [DEST]     (default .devwork/fp8 in the checkout; BUILD_DIR=build)
# BASE_BENCH=FILE also stages a base build's gemm_bench as basebin/gemm_bench (dev/fp8_ring_device.sh).
set -euo pipefail
DEST=${1:-$(git rev-parse --show-toplevel)/.devwork/fp8}
B=${BUILD_DIR:-build}
rm -rf "$DEST" && mkdir -p "$DEST" && git archive HEAD | tar -x -C "$DEST"
for f in tests/gemm_gpu_test tests/gemm_fp8_gpu_test bench/gemm_bench tools/ktune tools/ktune-worker; do
  mkdir -p "$DEST/pb/$(dirname "$f")" && cp "$B/$f" "$DEST/pb/$f"
done
# gemm_bench links Google Benchmark as a shared library the GPU machine does not have.
mkdir -p "$DEST/pb/lib"
ldd "$B/bench/gemm_bench" | awk '/libbenchmark/ {print $3}' | xargs -r -I{} cp -L {} "$DEST/pb/lib/"
# ktune-worker links libktune.so, which its build rpath finds on this machine only: without it
# there the worker does not start and `ktune tune` benchmarks in its own process instead.
cp -L "$B/api/libktune.so.0.1" "$DEST/pb/lib/"
if [ -n "${BASE_BENCH:-}" ]; then mkdir -p "$DEST/basebin" && cp "$BASE_BENCH" "$DEST/basebin/gemm_bench"; fi
strip "$DEST"/pb/tests/* "$DEST"/basebin/* 2>/dev/null || true
strip "$DEST"/pb/bench/* "$DEST"/pb/tools/* 2>/dev/null || true
du -sh "$DEST" "$DEST/pb"
