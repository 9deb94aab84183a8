#!/bin/bash
# GPU machine, one call (issue 32, twentieth session): dev/decode/read_pattern_probe.cu (built on
# the dev machine into pb/bin/rp: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a) —
# pure reads of the same weight bytes in the read bound's grid-stride sweep, per-block contiguous
# ranges and the decode kernel's tile order with plain loads — then gemm_bench on the two 16-row
# keys with their shipped picks (the decode kernel and the read bound in the same call).
#   OUT=$OUT bash dev/decode/device_rp.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-60}"
"$PWD/pb/bin/rp" "${RP_ROUNDS:-15}" > "$OUT/rp.txt" 2>&1; echo "rp rc=$?"; cat "$OUT/rp.txt"
d() { echo "DC_WG=2,DC_WARPS=$1,DC_NT=$2,DC_MT=2,DC_U=$3,DC_DEPTH=$4,DC_PF=1,DC_XR=$5,DC_GRID=$6"; }
ONLY="$(d 8 1 4 1 0 6)@16x28672x4096;$(d 8 1 2 2 0 6)@16x28672x4096;$(d 4 2 2 2 3 4)@16x6144x4096"
fits 15 bench && timeout "$(( $(left) - 3 ))" "$B/bench/gemm_bench" --kinds=decode --only="$ONLY" --twin="$ONLY" \
  --shapes=16x28672x4096,16x6144x4096 --rounds=5 > "$OUT/bench.log" 2> "$OUT/bench.err"
grep -E "^RESULT.* (ktune|read_bound|cublaslt_best|twin[0-9]) " "$OUT/bench.log" | cut -c1-120
grep -E "^TWIN|^VERIFY" "$OUT/bench.log" | cut -c1-160
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err 2>/dev/null; rm -f ./*.log ./*.err)
