#!/bin/bash
# GPU machine, one short call (issue 32, fourteenth session): the decode GPU tests that run the
# curated wide-N entries and the new rows (DecodeVsReference: every curated config over M = 1..128
# and the wide-N shapes; DecodeTmaClusterEnd / DecodeTmaVsReference: the 256-row tile rows), one
# process per ;-separated filter (TESTS), TEST_S s each, then the copy rate.
#   OUT=$OUT bash dev/decode/device_check.sh     (binaries staged by dev/decode/stage.sh)
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-80}"
GT_LINES=40 gpu_tests "GemmGpu.DecodeVsReference;GemmGpu.DecodeTmaClusterEndVsReference;GemmGpu.DecodeTmaVsReference:GemmGpu.DecodeFusedEpilogues" 70
fits 12 copy && timeout 20 python3 dev/copy_rate.py 2>&1 | tail -1
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.txt 2>/dev/null; rm -f ./test*.log)
