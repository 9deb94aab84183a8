#!/usr/bin/env bash
# GPU machine, issue 33 (eleventh session): one call that profiles and measures, binaries staged by
# dev/fp8_stage.sh into pb/ (nothing is built here):
#   1. dev/fp8_ncu_device.sh: ncu of the JIT configs $NCU_NAMES beside cuBLASLt's $LT (NCU_S s);
#   2. dev/fp8_final_device.sh with PROCS processes over $SHAPES ($ONLY_NAMES; the pre-pass times
#      a name given twice twice, so A B A B pairs come from one process), then the GPU tests in
#      what is left of BUDGET.
# Configs by name: dev/fp8_device_common.sh.   BUDGET (170) NCU_S (45) PROCS (1)
set -uo pipefail
export OUT=${OUT:-/tmp/out}
BUDGET=${BUDGET:-170}; NCU_S=${NCU_S:-45}; T=$(date +%s)
if [ "$NCU_S" -gt 0 ]; then
  BUDGET=$NCU_S ONLY_NAMES="${NCU_NAMES:-D@4096x4096x4096 D4@4096x4096x4096}" \
    LT="${LT:-0@4096x4096x4096}" SHAPES="${NCU_SHAPES:-4096x4096x4096}" bash dev/fp8_ncu_device.sh
  mv "$OUT/gpu.txt" "$OUT/ncu_gpu.txt" 2> /dev/null
fi
BUDGET=$(( BUDGET - ($(date +%s) - T) )) PROCS=${PROCS:-1} bash dev/fp8_final_device.sh
