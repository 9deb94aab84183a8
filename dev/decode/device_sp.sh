#!/bin/bash
# GPU machine, one call (issue 32, twenty-first session): the fixed-cost split — dev/decode/start_probe.cu
# (pb/bin/sp: a cluster launch against a plain one, empty and around a read; straight-line code
# fetched cold and warm) in SP_PROCS processes, then the TMA stream probe's cluster variants
# (pb/bin/ts, dev/decode/tma_stream_probe.cu) in TS_PROCS processes. Binaries built on the dev
# machine (see each file's header).   OUT=$OUT bash dev/decode/device_sp.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-40}"
for p in $(seq 1 "${SP_PROCS:-3}"); do
  timeout 20 "$PWD/pb/bin/sp" "${SP_ROUNDS:-25}" > "$OUT/sp$p.txt" 2>&1; echo "sp $p rc=$?"
done
for p in $(seq 1 "${TS_PROCS:-2}"); do
  timeout 30 "$PWD/pb/bin/ts" "${TS_ROUNDS:-25}" > "$OUT/ts$p.txt" 2>&1; echo "ts $p rc=$?"
done
for p in $(seq 1 "${SP_PROCS:-3}"); do echo "== sp process $p"; cat "$OUT/sp$p.txt"; done
for p in $(seq 1 "${TS_PROCS:-2}"); do
  echo "== ts process $p"; grep -E "^TS (read|X T64 U4 S4 2/tile|X T128 U2 S4 2/tile|X T64 U4 S4 x132  )|failed|error" "$OUT/ts$p.txt" | cut -c1-200
done
echo "call wall $(( $(date +%s) - T0 ))s"
