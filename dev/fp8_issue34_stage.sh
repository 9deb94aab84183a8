#!/usr/bin/env bash
# Dev machine: stages dev/fp8_issue34_device.sh's call into DEST (default .devwork/fp8 of the
# checkout): new/gemm_bench and new/gemm_gpu_test (this tree's build), base/gemm_bench (BASE_BENCH:
# main's build of the same target), their libbenchmark in lib/, the scripts, and sass/*.cubin
# (CUBIN_DIR: ptxas's cubins of both builds' PTX, to disassemble there).
#   bash dev/fp8_issue34_stage.sh BASE_BENCH [DEST]     (BUILD_DIR=build, CUBIN_DIR unset: none)
set -euo pipefail
BASE=$1
DEST=${2:-$(git rev-parse --show-toplevel)/.devwork/fp8}
B=${BUILD_DIR:-build}
rm -rf "$DEST" && mkdir -p "$DEST"/{new,base,lib,sass}
cp "$B/bench/gemm_bench" "$B/tests/gemm_gpu_test" "$DEST/new/" && cp "$BASE" "$DEST/base/gemm_bench"
ldd "$B/bench/gemm_bench" | awk '/libbenchmark/ {print $3}' | xargs -r -I{} cp -L {} "$DEST/lib/"
cp dev/fp8_issue34_device.sh dev/fp8_issue34_table.py "$DEST/"
[ -n "${CUBIN_DIR:-}" ] && cp "$CUBIN_DIR"/*.cubin "$DEST/sass/"
strip "$DEST"/new/* "$DEST"/base/gemm_bench
du -sh "$DEST"
