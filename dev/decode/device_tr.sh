#!/bin/bash
# GPU machine, one call (issue 32, twenty-sixth session, helper small): the bare TMA stream of one
# block per tile of fewer than 64 rows (T32 at 4096: 128 blocks; T48 at 6144: 128 blocks; no K
# split, no cluster) against the picks' partitions (two blocks per 64/128-row tile in clusters of 2)
# and the read, TS_PROCS processes of pb/bin/ts (dev/decode/tma_stream_probe.cu, built on the dev
# machine). Measure-before-build for DC_TR.   OUT=$OUT bash dev/decode/device_tr.sh
set -uo pipefail
T0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv,noheader
for p in $(seq 1 "${TS_PROCS:-3}"); do
  timeout 40 "$PWD/pb/bin/ts" "${TS_ROUNDS:-25}" > "$OUT/ts$p.txt" 2>&1; echo "ts $p rc=$?"
done
PAT='^TS (variant|read|X T64 U4 S4 2/tile|X T128 U2 S4 2/tile|X T32|X T48|X T64 U4 S4 tile|X T64 U4 S4 x132 )'
for p in $(seq 1 "${TS_PROCS:-3}"); do echo "== ts process $p"; grep -E "$PAT" "$OUT/ts$p.txt" | cut -c1-200; done
echo "call wall $(( $(date +%s) - T0 ))s"
