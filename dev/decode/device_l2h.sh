#!/bin/bash
# GPU machine, one call (issue 32, twenty-fifth session, helper small): the L2 probe
# (dev/decode/l2_hint_probe.cu, built on the dev machine into pb/bin/l2h) in L2H_PROCS processes.
#   OUT=$OUT DEADLINE=40 bash dev/decode/device_l2h.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-40}"
for p in $(seq 1 "${L2H_PROCS:-3}"); do
  fits 8 "l2h $p" || break
  timeout 20 "$PWD/pb/bin/l2h" "${L2H_ROUNDS:-40}" > "$OUT/l2h$p.txt" 2>&1; echo "l2h $p rc=$?"
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv,noheader
for p in $(seq 1 "${L2H_PROCS:-3}"); do echo "== l2h process $p"; cut -c1-230 "$OUT/l2h$p.txt"; done
echo "call wall $(( $(date +%s) - T0 ))s"
