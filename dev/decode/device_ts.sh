#!/bin/bash
# GPU machine, one call (issue 32, twenty-first session): dev/decode/tma_stream_probe.cu (built on
# the dev machine into pb/bin/ts: see its header) in TS_PROCS processes — the TMA stream alone in
# the decode kernel's layout against the plain read, over ring depth, stage bytes, blocks per SM,
# A's boxes, box height, issue order and the start — then gemm_bench on the four 16-row K = 4096
# keys with their shipped picks (the real kernel and the read bound in the same call).
#   OUT=$OUT bash dev/decode/device_ts.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-60}"
for p in $(seq 1 "${TS_PROCS:-3}"); do
  timeout 30 "$PWD/pb/bin/ts" "${TS_ROUNDS:-25}" > "$OUT/ts$p.txt" 2>&1; echo "ts $p rc=$?"
done
d() { echo "DC_WG=2,DC_WARPS=$1,DC_NT=$2,DC_MT=2,DC_U=$3,DC_DEPTH=$4,DC_PF=1,DC_XR=$5,DC_GRID=$6"; }
ONLY="$(d 4 1 4 2 3 4)@16x4096x4096;$(d 4 2 2 2 3 4)@16x6144x4096;$(d 8 1 4 1 0 6)@16x14336x4096;$(d 8 1 2 2 0 6)@16x28672x4096"
fits 15 bench && timeout "$(( $(left) - 3 ))" "$B/bench/gemm_bench" --kinds=decode --only="$ONLY" \
  --shapes=16x4096x4096,16x6144x4096,16x14336x4096,16x28672x4096 --rounds="${ROUNDS:-5}" > "$OUT/bench.log" 2> "$OUT/bench.err"
grep -E "^RESULT.* (ktune|read_bound|cublaslt_best) " "$OUT/bench.log" | cut -c1-140
grep -cE "^VERIFY.* ok" "$OUT/bench.log"
for p in $(seq 1 "${TS_PROCS:-3}"); do echo "== ts process $p"; cut -c1-200 "$OUT/ts$p.txt"; done
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err 2>/dev/null; rm -f ./*.log ./*.err)
