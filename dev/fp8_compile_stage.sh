#!/usr/bin/env bash
# Dev machine: stages dev/fp8_compile_ab_device.sh's call into DEST (default .devwork/fp8 of the
# checkout): new/gemm_bench and new/gemm_gpu_test (this tree's build), base/gemm_bench (BASE_BENCH: the same target
# built from the base commit), their libbenchmark in lib/, the script and dev/ab_table.py, and
# sass/*.cubin (CUBIN_DIR: cubins to disassemble there, e.g. ptxas's of both builds' PTX).
#   bash dev/fp8_compile_stage.sh BASE_BENCH [DEST]     (BUILD_DIR=build, CUBIN_DIR unset: none;
#   SCRIPTS: the scripts copied, default the compile A/B's)
set -euo pipefail
BASE=$1
DEST=${2:-$(git rev-parse --show-toplevel)/.devwork/fp8}
B=${BUILD_DIR:-build}
rm -rf "$DEST" && mkdir -p "$DEST"/{new,base,lib,sass}
cp "$B/bench/gemm_bench" "$B/tests/gemm_gpu_test" "$DEST/new/" && cp "$BASE" "$DEST/base/gemm_bench"
ldd "$B/bench/gemm_bench" | awk '/libbenchmark/ {print $3}' | xargs -r -I{} cp -L {} "$DEST/lib/"
cp ${SCRIPTS:-dev/fp8_compile_ab_device.sh dev/ab_table.py} "$DEST/"
[ -n "${CUBIN_DIR:-}" ] && cp "$CUBIN_DIR"/*.cubin "$DEST/sass/"
strip "$DEST"/new/* "$DEST"/base/gemm_bench
du -sh "$DEST"
