#!/usr/bin/env bash
# GPU machine, one short call: programmatic dependent launch (PDL) checked and probed.
#   1. pdl_gpu_test (prebuilt in LLAMA_BIN by dev/llama_stage.sh): a captured RMSNorm -> decode
#      GEMM -> SiLU·Mul chain with programmatic launches replays bit-identical to ordinary
#      launches, and its replay time with and without;
#   2. the Llama harness, one process: torch, ktune and ktune_nopdl (ktune with KTUNE_PDL off, same
#      database) on decode batch 1 and 8, graphed and eager, interleaved rounds, no breakdown.
#   cd .devwork/llama && ln -s ../../.devdeps .devdeps; LLAMA_BIN=../llama_bin PROBE_S=100 \
#     bash dev/llama_pdl_probe.sh          (carry .devwork/llama, .devwork/llama_bin, .devdeps)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s); PROBE_S=${PROBE_S:-100}
BIN=${LLAMA_BIN:?LLAMA_BIN: the staged binaries (dev/llama_stage.sh)}
if [ -x "$BIN/pdl_gpu_test" ]; then
  KTUNE_CACHE_DIR=/tmp/pdl_kc timeout 45 "$BIN/pdl_gpu_test" > "$OUT/pdl_gpu_test.log" 2>&1
  echo "pdl_gpu_test rc=$? at $(( $(date +%s) - T0 )) s"
  grep -E "^\[pdl\]|OK \]|FAILED|SKIPPED|Failure|differ" "$OUT/pdl_gpu_test.log" | head -12
else
  echo "no pdl_gpu_test in $BIN"
fi
LEFT=$(( PROBE_S - ($(date +%s) - T0) ))
LLAMA_BUDGET_S=$LEFT LLAMA_KEYS=0 \
  LLAMA_ARGS="--variants torch,ktune,ktune_nopdl --shapes d1,d8 --nopdl-shapes d1,d8 --rounds 5 --breakdown none --procs 1" \
  bash dev/llama_device.sh 2>&1 | tail -40
echo "probe total $(( $(date +%s) - T0 )) s"
