#!/bin/bash
# GPU machine, one call (issue 32, nineteenth session): why the 16-row decode kernel is slower than
# cuBLASLt at 16x14336x4096 (one 128-row tile per block, 112 blocks) while it wins at 16x4096x14336
# (the same bytes on the cluster K split). Binaries from pb/ (dev/decode/stage.sh, then
# dev/decode/trace_stage.sh for pb/bench/gemm_bench_trace); logs under $OUT:
#   1. the per-phase trace (gemm_bench_trace --trace=$TRACE_N) of TRACE_ONLY (X@MxNxK) with
#      trace_table.py's split and trace_blocks.py's per-SM exits;
#   2. PROCS A/B processes of gemm_bench over KEYS_AB (--only and --twin the same list, reversed
#      in even processes: every config in the pick's interleaved rounds beside cuBLASLt's best and
#      the weight read), then pp_table.py;
#   3. one ncu run over gemm_bench --profile at PROF_SHAPES: PROF_ONLY, the read of the same bytes,
#      cuBLASLt's ranks PROF_LT: duration, DRAM / L2 bytes and %, SM active cycles min / max, the
#      occupancy limits, every kernel's name, grid and block.
# LIST=2: the second call's lists (below). TRACE_SHAPES: the trace's shapes (those of TRACE_ONLY); NCU=0 skips step 3.
#   OUT=$OUT DEADLINE=120 bash dev/decode/device_p14.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-120}"
( timeout 25 ncu --query-metrics > /tmp/ncu_query.txt 2>&1 ) &
QP=$!
d() { echo "DC_WG=2,DC_WARPS=$1,DC_NT=$2,DC_MT=2,DC_U=$3,DC_DEPTH=$4,DC_PF=1,DC_XR=$5,DC_GRID=$6"; }
R=$(d 8 1 2 2 0 6)      # shipped best at 16x14336x4096 and 16x28672x4096 (G6 W8 NT1 U2 D2)
X44=$(d 4 1 4 2 3 4)    # the best at 16x4096x14336 (G4 W4 NT1 U4 D2 XR3)
S=16x14336x4096
if [ "${LIST:-}" = 2 ]; then  # the second call: two blocks per SM on 74-82 KB rings, every SM busy
  X62=$(d 4 2 2 2 3 4)  # the best at 16x6144x4096: 96 blocks (36 SMs idle)
  KEYS_AB="16x6144x4096:$X62:$(d 4 1 2 2 3 4):$(d 4 1 1 4 3 4):$(d 4 1 4 1 3 4):$(d 4 2 1 2 1 5):$(d 4 2 2 1 1 5):$(d 4 2 1 2 0 5)
16x4096x4096:$X44:$(d 4 1 2 2 1 5):$(d 4 1 2 2 3 4) 16x4096x14336:$X44:$(d 4 1 2 2 1 5) $S:$R:$(d 8 1 4 1 0 6)"
  SHAPES=16x6144x4096,16x4096x4096,16x4096x14336,$S
  TRACE_ONLY="$X62@16x6144x4096;$(d 4 1 2 2 3 4)@16x6144x4096;$(d 4 2 1 2 1 5)@16x6144x4096"
  TRACE_SHAPES=16x6144x4096
fi
KEYS_AB=${KEYS_AB:-"$S:$R:$(d 8 1 4 1 0 6):$(d 8 1 1 4 0 6):$(d 4 2 4 1 0 6):$(d 4 1 4 2 0 6):$(d 4 1 8 1 0 6):$(d 4 1 4 1 0 0):$(d 4 1 2 2 0 0):$(d 4 2 1 2 3 4):$(d 8 2 1 2 3 4):$(d 8 2 1 1 0 5)"}
SHAPES=${SHAPES:-$S}
TRACE_ONLY=${TRACE_ONLY:-"$R@$S;$(d 8 1 4 1 0 6)@$S;$(d 4 1 4 1 0 0)@$S;$X44@16x4096x14336"}
# process 0 compiles the A/B's kernels while the trace runs (its times are not used)
KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "${C0_S:-45}" "$B/bench/gemm_bench" --kinds=decode \
  --only="$(list)" --twin="$(list)" --shapes="$SHAPES" --rounds=1 > "$OUT/ab0.log" 2> "$OUT/ab0.err" &
C1=$!
if fits 20 trace; then
  T=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_trace timeout "${TRACE_S:-30}" "$B/bench/gemm_bench_trace" --kinds=decode \
    --trace="${TRACE_N:-4}" --only="$TRACE_ONLY" --shapes="${TRACE_SHAPES:-$S,16x4096x14336}" > "$OUT/trace.log" 2> "$OUT/trace.err"
  echo "trace rc=$? $(( $(date +%s) - T ))s, $(grep -c '^DCT' "$OUT/trace.log") lines"
  python3 dev/decode/trace_table.py < "$OUT/trace.log" | cut -c1-300
  python3 dev/decode/trace_blocks.py < "$OUT/trace.log" | cut -c1-300
fi
wait $C1; echo "ab 0 (compiles) rc=$?; compile failures: $(grep -c 'compile failed' "$OUT/ab0.err")"
grep -m3 "compile failed" "$OUT/ab0.err" | cut -c1-300
twin_procs "${BENCH_S:-30}"
echo "VERIFY not ok: $(cat "$OUT"/bench*.log 2>/dev/null | grep '^VERIFY' | grep -vc ' ok ') of $(cat "$OUT"/bench*.log 2>/dev/null | grep -c '^VERIFY')"
python3 dev/decode/pp_table.py "$OUT" "$n" 2>&1 | cut -c1-300
wait "$QP"
if [ "${NCU:-1}" = 1 ] && fits 25 ncu; then
  PS=${PROF_SHAPES:-$S,16x4096x14336}
  ONLY=${PROF_ONLY:-"$R@$S;$(d 8 1 4 1 0 6)@$S;$(d 4 1 4 1 0 0)@$S;$(d 4 2 1 2 3 4)@$S;$X44@16x4096x14336"}
  M=$(python3 dev/ncu_table.py --metrics /tmp/ncu_query.txt)
  for x in l1tex__m_xbar2l1tex_read_bytes.sum dram__sectors_read.sum launch__occupancy_limit_shared_mem \
           launch__occupancy_limit_registers launch__registers_per_thread sm__ctas_launched.sum \
           sm__cycles_active.min sm__cycles_active.max sm__cycles_active.avg; do
    grep -q "^${x%.*} " /tmp/ncu_query.txt && M="$M,$x"
  done
  T=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "$(( $(left) - 8 ))" ncu --clock-control none \
    -k 'regex:ktune_gemm_decode|ktune_read_bound|nvjet|sm90|gemm|splitK|reduce|cutlass' \
    --launch-count 40 --metrics "$M" -f -o /tmp/prof "$B/bench/gemm_bench" --kinds=decode --profile \
    --only="$ONLY" --profile_lt="${PROF_LT:-0,1,2,3}" --shapes="$PS" > "$OUT/ncu_bench.txt" 2>&1
  echo "ncu rc=$? $(( $(date +%s) - T ))s"
  ncu -i /tmp/prof.ncu-rep --page raw --csv --metrics "$M" > "$OUT/ncu_raw.csv" 2>&1
  python3 dev/ncu_table.py "$OUT/ncu_raw.csv" "$OUT/ncu_bench.txt" | cut -c1-240
  python3 - "$OUT/ncu_raw.csv" <<'EOF'
import csv, sys
rows = list(csv.reader(l for l in open(sys.argv[1], errors="replace") if l.startswith('"')))
h = rows[0]
for i, r in enumerate(rows[2:]):
    d = dict(zip(h, r))
    g = lambda k: d.get(k, "?")
    print("k%d %s grid %s block %s %s us regs %s lim smem/regs %s/%s ctas %s active min/avg/max %s/%s/%s" % (
        i, g("Kernel Name")[:90], g("Grid Size"), g("Block Size"), g("gpu__time_duration.sum"),
        g("launch__registers_per_thread"), g("launch__occupancy_limit_shared_mem"),
        g("launch__occupancy_limit_registers"), g("sm__ctas_launched.sum"), g("sm__cycles_active.min"),
        g("sm__cycles_active.avg"), g("sm__cycles_active.max")))
EOF
fi
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err ./*.csv ./*.txt 2>/dev/null; rm -f ./*.err ncu_raw.csv)
