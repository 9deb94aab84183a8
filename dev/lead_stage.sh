#!/usr/bin/env bash
# Dev machine: a clean export of HEAD for the lead's GPU pass, with this tree's Release binaries in
# pb/ laid out like a build tree (tools/, tests/, bench/, api/), so the device call compiles nothing.
# x86-64 only; the GPU libraries are opened at run time. dev/lead_device.sh builds when they fail.
#   bash dev/lead_stage.sh [DEST]     (default .devwork/lead in this checkout; BUILD_DIR=build)
#   GPU=1 bash dev/lead_stage.sh      (also every GPU test program, packed: dev/gpu_pass_device.sh)
set -euo pipefail
DEST=${1:-$(git rev-parse --show-toplevel)/.devwork/lead}
B=${BUILD_DIR:-build}
rm -rf "$DEST" && mkdir -p "$DEST" && git archive HEAD | tar -x -C "$DEST"
# FILES: the build outputs to stage (default: the tools, three GPU test programs and three benches).
for f in ${FILES:-tools/ktune tools/ktune-worker tests/gemm_gpu_test tests/gemm_fp8_gpu_test \
         tests/shapes_gpu_test bench/gemm_bench bench/rowwise_bench bench/shape_first_call_bench}; do
  mkdir -p "$DEST/pb/$(dirname "$f")" && cp "$B/$f" "$DEST/pb/$f"
done
mkdir -p "$DEST/pb/api" && cp -L "$B/api/libktune.so.0.1" "$DEST/pb/api/"
# Google Benchmark's shared library is not on the GPU machine: the benches carry it (pb/lib).
mkdir -p "$DEST/pb/lib"
ldd "$B/bench/gemm_bench" | awk '/libbenchmark/ {print $3}' | xargs -r -I{} cp -L {} "$DEST/pb/lib/"
# GPU=1 (dev/gpu_pass_device.sh): every GPU test program and the isolation GPU plugin too. The
# isolation tests have the worker's and the plugin's build paths compiled in: BUILD_DIR records
# them so the device script can put the carried files there.
if [ "${GPU:-0}" = 1 ]; then
  for f in "$B"/tests/*_gpu_test "$B"/tests/libktune_isolation_gpu_plugin.so; do
    [ -f "$f" ] && cp "$f" "$DEST/pb/tests/"
  done
  [ -f "$B/bench/host_cost_bench" ] && cp "$B/bench/host_cost_bench" "$DEST/pb/bench/"
  realpath "$B" > "$DEST/pb/BUILD_DIR"
fi
strip "$DEST"/pb/{tools,tests,bench,api}/* 2>/dev/null || true
# The carry limit is 64 MiB: PACK=1 (default with GPU=1) ships pb/ as one xz tarball.
if [ "${PACK:-${GPU:-0}}" = 1 ]; then
  tar -cJf "$DEST/pb.tar.xz" -C "$DEST" pb && rm -rf "$DEST/pb"
fi
du -sh "$DEST" "$DEST"/pb*
