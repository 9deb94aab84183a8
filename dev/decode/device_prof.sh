#!/bin/bash
# GPU machine, one call (issue 32, fifteenth session): what cuBLASLt's kernel does differently from
# the 16-row decode kernel at the LLM suite's wide-N keys. Binaries from pb/ (dev/decode/stage.sh,
# then dev/decode/trace_stage.sh for pb/bench/gemm_bench_trace); logs under $OUT:
#   1. the copy rate (dev/copy_rate.py);
#   2. the per-phase trace (gemm_bench_trace --trace=$TRACE_N) of PROF_ONLY at PROF_SHAPES and
#      dev/decode/trace_table.py's split;
#   3. one ncu run (clocks left alone, caches flushed per pass) over gemm_bench --profile at
#      PROF_SHAPES: PROF_ONLY (X@MxNxK), the linear read of the same bytes, cuBLASLt's heuristic
#      ranks PROF_LT (default 0..3 at every shape): dev/ncu_table.py's metrics (durations, DRAM and
#      L2 bytes and %, hit rate, achieved occupancy, registers, shared memory, grid and block,
#      cluster, stall reasons) plus L2->SM bytes, the fabric's sectors, read sectors and requests,
#      and the occupancy limits (blocks per SM); every profiled kernel's name, grid and block
#      (a split-K reduction kernel shows as its own line); then the PC-sampled stalls per class
#      (dev/ncu_stalls.py).
#   OUT=$OUT DEADLINE=100 bash dev/decode/device_prof.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-100}"
( timeout 25 ncu --query-metrics > /tmp/ncu_query.txt 2>&1 ) &
QP=$!
PS=${PROF_SHAPES:-16x6144x4096,16x28672x4096}
d() { echo "DC_WG=2,DC_WARPS=$1,DC_NT=$2,DC_MT=2,DC_U=$3,DC_DEPTH=$4,DC_PF=1,DC_XR=$5,DC_GRID=$6"; }
ONLY=${PROF_ONLY:-"$(d 4 2 2 2 3 4)@16x6144x4096;$(d 8 2 1 3 0 6)@16x28672x4096;$(d 8 1 2 2 0 6)@16x28672x4096"}
fits 12 copy && timeout 20 python3 dev/copy_rate.py 2>&1 | tail -1
if fits 20 trace; then
  S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_trace timeout "${TRACE_S:-25}" "$B/bench/gemm_bench_trace" --kinds=decode \
    --trace="${TRACE_N:-4}" --only="$ONLY" --shapes="$PS" > "$OUT/trace.log" 2> "$OUT/trace.err"
  echo "trace rc=$? $(( $(date +%s) - S ))s, $(grep -c '^DCT' "$OUT/trace.log") lines"
  python3 dev/decode/trace_table.py < "$OUT/trace.log" | cut -c1-300
fi
wait "$QP"
if fits 25 ncu; then
  LT=${PROF_LT:-0,1,2,3}
  M=$(python3 dev/ncu_table.py --metrics /tmp/ncu_query.txt)
  for x in l1tex__m_xbar2l1tex_read_bytes.sum lts__t_sectors_srcunit_ltcfabric.sum \
           lts__t_sectors_srcunit_tex_op_read.sum lts__t_requests_srcunit_tex_op_read.sum \
           dram__sectors_read.sum launch__occupancy_limit_shared_mem launch__occupancy_limit_registers \
           launch__occupancy_limit_warps launch__occupancy_limit_blocks sm__ctas_launched.sum \
           sm__warps_active.avg.per_cycle_active launch__shared_mem_per_block_static; do
    grep -q "^${x%.*} " /tmp/ncu_query.txt && M="$M,$x"
  done
  S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_ncu timeout "$(( $(left) - 8 ))" ncu --clock-control none \
    -k 'regex:ktune_gemm_decode|ktune_read_bound|nvjet|sm90|gemm|splitK|reduce|cutlass' \
    --launch-count 40 --section WarpStateStats --section SourceCounters \
    --metrics "$M" -f -o /tmp/prof "$B/bench/gemm_bench" --kinds=decode --profile \
    --only="$ONLY" --profile_lt="$LT" --shapes="$PS" > "$OUT/ncu_bench.txt" 2>&1
  echo "ncu rc=$? $(( $(date +%s) - S ))s"
  grep "^PROFILE" "$OUT/ncu_bench.txt" | cut -c1-200
  ncu -i /tmp/prof.ncu-rep --page raw --csv --metrics "$M" > "$OUT/ncu_raw.csv" 2>&1
  python3 dev/ncu_table.py "$OUT/ncu_raw.csv" "$OUT/ncu_bench.txt" | cut -c1-240
  python3 - "$OUT/ncu_raw.csv" <<'EOF'
import csv, sys
rows = list(csv.reader(l for l in open(sys.argv[1], errors="replace") if l.startswith('"')))
h = rows[0]
for i, r in enumerate(rows[2:]):
    d = dict(zip(h, r))
    print("k%d %s grid %s block %s %s us" % (i, d.get("Kernel Name", "?")[:150], d.get("Grid Size", "?"),
          d.get("Block Size", "?"), d.get("gpu__time_duration.sum", "?")))
EOF
  ncu -i /tmp/prof.ncu-rep --page source --csv --print-source sass > /tmp/ncu_src.csv 2> "$OUT/ncu_src.err" &&
    python3 dev/ncu_stalls.py /tmp/ncu_src.csv | cut -c1-160 | head -"${STALL_LINES:-160}"
  cp /tmp/prof.ncu-rep "$OUT/" 2>/dev/null
fi
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err ./*.csv ./*.txt 2>/dev/null; rm -f ./*.err ncu_raw.csv)
