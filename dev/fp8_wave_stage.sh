#!/usr/bin/env bash
# Dev machine: stages dev/fp8_wave_device.sh's call (issue 34, the tma kind's compile, third cut) into
# DEST: dev/fp8_beta_stage.sh's staging (both builds' ktune, ktune-worker, libktune.so, gemm_bench and
# compile_split_bench, the Google Benchmark library), with this tree's gemm_gpu_test and this call's
# scripts.
#   BASE=<base build dir> bash dev/fp8_wave_stage.sh DEST     (BUILD_DIR=build)
set -euo pipefail
TESTS=gemm_gpu_test SCRIPTS="dev/fp8_wave_device.sh dev/fp8_beta_table.py dev/fp8_beta_norm.py" \
  exec bash "$(dirname "$0")/fp8_beta_stage.sh" "$@"
