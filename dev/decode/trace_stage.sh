#!/usr/bin/env bash
# Dev machine, after dev/decode/stage.sh DEST: adds DEST/pb/bench/gemm_bench_trace, the tree's
# gemm_bench with the decode kernel's per-phase trace on (DC_TRACE = 1 in decode_wg_trace.cuh,
# built and put back by dev/trace_stage.sh), for `gemm_bench_trace --trace=N` (bench/gemm_bench_modes.h).
#   bash dev/decode/trace_stage.sh DEST [NAME]     (BUILD_DIR=build; NAME: gemm_bench_trace)
set -euo pipefail
exec bash "$(dirname "$0")/../trace_stage.sh" templates/gemm/decode/decode_wg_trace.cuh DC_TRACE "$@"
