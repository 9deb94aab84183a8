#!/usr/bin/env bash
# GPU machine, one short call: programmatic dependent launch (PDL) checked and probed with the
# prebuilt binaries of dev/llama_stage.sh alone (no package build):
#   1. pdl_gpu_test: a captured RMSNorm -> decode GEMM -> SiLU·Mul chain (12 kernels) with
#      programmatic launches replays bit-identical to ordinary launches; its replay time with and
#      without;
#   2. the C++ decoder (examples/llama.cc: every kernel of the step is ktune's, so every launch can
#      be programmatic): --check against the CPU reference with tuning on (the vectorised rotary
#      configs included), then decode batch 1 and 8 with KTUNE_PDL=1 / 0 / 1 / 0 in turn (the
#      first run tunes, the others read its database), tokens/s per run.
#   cd .devwork/llama && ln -s ../../.devdeps .devdeps; LLAMA_BIN=../llama_bin PROBE_S=75 \
#     bash dev/llama_pdl_probe.sh          (carry .devwork/llama, .devwork/llama_bin, .devdeps)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s); PROBE_S=${PROBE_S:-75}
BIN=$(cd "${LLAMA_BIN:?LLAMA_BIN: the staged binaries (dev/llama_stage.sh)}" && pwd)
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" KTUNE_CACHE_DIR=/tmp/pdl_kc
rm -rf "$KTUNE_CACHE_DIR"
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader
timeout 40 "$BIN/pdl_gpu_test" > "$OUT/pdl_gpu_test.log" 2>&1
echo "pdl_gpu_test rc=$? at $(el) s"
grep -E "^\[pdl\]|OK \]|FAILED|SKIPPED|Failure|differ|Expected|Which is" "$OUT/pdl_gpu_test.log" | head -12
timeout 25 "$BIN/ktune_llama" --check > "$OUT/cxx_check.log" 2>&1
echo "C++ check (tuning on) rc=$? at $(el) s: $(grep -c ' ok$' "$OUT/cxx_check.log") ok, $(grep -c FAILED "$OUT/cxx_check.log") failed"
grep -E "check|FAILED" "$OUT/cxx_check.log" | head -5
for pdl in 1 0 1 0; do
  LEFT=$(( PROBE_S - $(el) ))
  [ "$LEFT" -lt 8 ] && { echo "KTUNE_PDL=$pdl: skipped ($LEFT s left)"; continue; }
  KTUNE_PDL=$pdl timeout "$LEFT" "$BIN/ktune_llama" --shapes d1,d8 --rep-ms 150 \
    > "$OUT/cxx_pdl$pdl.$(el).log" 2>&1
  echo "KTUNE_PDL=$pdl rc=$? at $(el) s"
  grep -E "^d[0-9]" "$OUT"/cxx_pdl$pdl.*.log | tail -2
done
echo "probe total $(el) s"
