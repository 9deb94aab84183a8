#!/usr/bin/env bash
# Dev machine: a clean export of HEAD for dev/fp8_device.sh, with this tree's Release binaries of
# the issue-33 programs in pb/ (laid out like a build tree), so the device call compiles nothing.
#   bash dev/fp8_stage.sh [DEST]     (default .devwork/fp8 in the checkout; BUILD_DIR=build; SKEW_PROBE=1)
set -euo pipefail
DEST=${1:-$(git rev-parse --show-toplevel)/.devwork/fp8}
B=${BUILD_DIR:-build}
rm -rf "$DEST" && mkdir -p "$DEST" && git archive HEAD | tar -x -C "$DEST"
for f in tests/gemm_gpu_test tests/gemm_fp8_gpu_test bench/gemm_bench; do
  mkdir -p "$DEST/pb/$(dirname "$f")" && cp "$B/$f" "$DEST/pb/$f"
done
# gemm_bench links Google Benchmark as a shared library the GPU machine does not have.
mkdir -p "$DEST/pb/lib"
ldd "$B/bench/gemm_bench" | awk '/libbenchmark/ {print $3}' | xargs -r -I{} cp -L {} "$DEST/pb/lib/"
# SKEW_PROBE=1: a second gemm_bench, pb/bench/gemm_bench_skew, whose embedded tma.cuh reads GROUP_M
# 15 / 17 as KT_SKEW 1 / 2 (dev/fp8_device_common.sh's DS1 / DS2); the tree is restored and rebuilt.
if [ "${SKEW_PROBE:-0}" = 1 ]; then
  T=templates/gemm/tma/tma.cuh
  sed -i 's/^#define KT_SKEW 0$/#define KT_SKEW (GROUP_M == 15 ? 1 : GROUP_M == 17 ? 2 : 0)/' "$T"
  grep -q "GROUP_M == 15" "$T" || { echo "SKEW_PROBE: pattern not found"; exit 1; }
  nice ninja -C "$B" -j2 bench/gemm_bench > /dev/null; cp "$B/bench/gemm_bench" "$DEST/pb/bench/gemm_bench_skew"
  git checkout -- "$T" && nice ninja -C "$B" -j2 bench/gemm_bench > /dev/null
fi
strip "$DEST"/pb/tests/* "$DEST"/pb/bench/* 2>/dev/null || true
du -sh "$DEST" "$DEST/pb"
