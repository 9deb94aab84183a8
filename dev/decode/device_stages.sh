#!/bin/bash
# GPU machine, one call (issue 32, twenty-second session, second task): the per-stage trace of the
# decode kernel's ring at the 128/64-row picks and the 16-row control. pb/bench/gemm_bench_stage is
# the tree with DC_TRACE 2 (dev/decode/trace_stage.sh with VALUE=2), pb/bench/gemm_bench the tree:
# both run `--trace=$TRACE_N --only=$ONLY` (the tree's untraced event times against the probe
# build's: what the stamps cost), then dev/decode/trace_stages.py (per-stage latencies, the ring's
# occupancy) and dev/decode/trace_table.py (the phase split) over the probe build's DCT lines.
#   OUT=$OUT DEADLINE=60 bash dev/decode/device_stages.sh     (ONLY: cfg@shape;... default the picks)
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-60}"
d() {  # MT U DEPTH XR
  echo "DC_WG=2,DC_WARPS=4,DC_NT=1,DC_MT=$1,DC_U=$2,DC_DEPTH=$3,DC_PF=1,DC_XR=$4,DC_GRID=4"
}
ONLY=${ONLY:-"$(d 16 2 2 1)@128x4096x4096;$(d 16 1 4 1)@128x4096x4096;$(d 8 2 2 3)@64x4096x4096;$(d 2 4 2 3)@16x4096x4096"}
SHAPES=${SHAPES:-16x4096x4096,64x4096x4096,128x4096x4096}
for bin in ${TRACE_BINS:-gemm_bench_stage gemm_bench}; do
  fits 10 "trace $bin" || break
  S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_$bin timeout "${TRACE_S:-30}" "$B/bench/$bin" --kinds=decode --trace="${TRACE_N:-5}" \
    --only="$ONLY" --shapes="$SHAPES" > "$OUT/$bin.log" 2> "$OUT/$bin.err"
  echo "trace $bin rc=$? $(( $(date +%s) - S ))s, $(grep -c '^DCT ' "$OUT/$bin.log") block lines"
done
grep -h "failed" "$OUT"/*.log | head -5
cat "$OUT"/gemm_bench*.log | python3 dev/decode/trace_stages.py > "$OUT/stages.txt" 2>&1
grep "^event" "$OUT/stages.txt" | cut -c1-250
python3 dev/decode/trace_table.py < "$OUT/gemm_bench_stage.log" 2>&1 | cut -c1-260 > "$OUT/phases.txt"
cat "$OUT/phases.txt"
grep -E "^(==|stage|steady)" "$OUT/stages.txt" | cut -c1-200  # the whole tables: stages.txt
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && gzip -f gemm_bench_stage.log && tar czf errs.tgz ./*.err 2>/dev/null; rm -f ./*.err)
