#!/bin/bash
# GPU machine, one call (issue 32, twenty-first session): the TMA stream probe (pb/bin/ts,
# dev/decode/tma_stream_probe.cu) once, printing its timings and the SMs (%smid) of the 2-blocks-per-
# tile launches of 128-row tiles at N = 4096 and 6144: plain, in clusters of 2 (with and without the
# spread policy) and in clusters of 8 (block order: each 8 share a GPC), to see where clusters land.
#   OUT=$OUT bash dev/decode/device_smid.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-30}"
timeout 30 "$PWD/pb/bin/ts" "${TS_ROUNDS:-15}" > "$OUT/ts1.txt" 2>&1; echo "ts rc=$?"
grep -E "^SMID|failed|error" "$OUT/ts1.txt"
grep -E "^TS (read|X T128 U2 S4 2/tile)" "$OUT/ts1.txt" | cut -c1-150
echo "call wall $(( $(date +%s) - T0 ))s"
