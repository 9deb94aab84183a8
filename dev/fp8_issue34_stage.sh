#!/usr/bin/env bash
# Dev machine: stages dev/fp8_issue34_device.sh's call into DEST (default .devwork/fp8 of the
# checkout) as dev/fp8_compile_stage.sh stages the compile A/B: new/gemm_bench and
# new/gemm_gpu_test (this tree's build), base/gemm_bench (BASE_BENCH: main's build of the same
# target), their libbenchmark in lib/, this call's scripts, and sass/*.cubin (CUBIN_DIR).
#   bash dev/fp8_issue34_stage.sh BASE_BENCH [DEST]     (BUILD_DIR=build, CUBIN_DIR unset: none)
SCRIPTS="dev/fp8_issue34_device.sh dev/fp8_issue34_table.py" exec bash "$(dirname "$0")/fp8_compile_stage.sh" "$@"
