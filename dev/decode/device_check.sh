#!/bin/bash
# GPU machine, one short call (issue 32, fourteenth session): the decode GPU tests that run the
# curated wide-N entries and the new rows (DecodeVsReference: every curated config over M = 1..128
# and the wide-N shapes; DecodeTmaClusterEnd / DecodeTmaVsReference: the 256-row tile rows), one
# process per ;-separated filter (TESTS), TEST_S s each, then the copy rate.
#   OUT=$OUT bash dev/decode/device_check.sh     (binaries staged by dev/decode/stage.sh)
# TUNE=1 (sixteenth session): then `ktune tune gemm` at the suite's four decode keys (KEYS, TUNE_S
# s each; common.sh's tune_keys) with the tuner's pick and its best JIT / cuBLASLt per key.
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-80}"
GT_LINES=40 gpu_tests "GemmGpu.DecodeVsReference;GemmGpu.DecodeTmaClusterEndVsReference;GemmGpu.DecodeTmaVsReference:GemmGpu.DecodeFusedEpilogues" 70
fits 12 copy && timeout 20 python3 dev/copy_rate.py 2>&1 | tail -1
if [ "${TUNE:-0}" = 1 ]; then
  KEYS=${KEYS:-16x4096x4096 16x6144x4096 16x4096x14336 16x28672x4096}
  tune_keys
fi
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.txt ./*.json ./*.err 2>/dev/null; rm -f ./test*.log ./tune_*)
