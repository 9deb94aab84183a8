#!/bin/bash
# GPU machine, one call (issue 32, eleventh session): what binds the TMA body at 64 and 128 rows
# against cuBLASLt's best algorithm, and the probe configs beside the shipped list. Binaries from
# pb/ (bash dev/decode/stage.sh), logs under $OUT; each step is skipped when the call's DEADLINE (s)
# would be passed:
#   1. the GemmGpu tests in parallel processes (TESTS: ;-separated filters or none, TEST_S s) while ncu
#      lists its metrics; then the device-to-device copy rate (dev/copy_rate.py);
#   2. PROCS gemm_bench processes (--curated=$PROBE_FILE if set) over SHAPES, ROUNDS, BENCH_S s each,
#      cycling over the binaries of pb/bench named in BINS (default gemm_bench; each its own cache);
#   3. NCU=1: one ncu run (clocks left alone, caches flushed per pass) over gemm_bench --profile at
#      NCU_SHAPES: NCU_ONLY plus process 1's fastest decode config per shape (flush, plain), the
#      linear read of the same bytes, cuBLASLt #0 and process 1's fastest cuBLASLt algorithm (or NCU_LT):
#      dev/ncu_table.py's metrics (durations, DRAM and L2 bytes and %, achieved occupancy, tensor
#      pipe, stall reasons) plus L2->SM bytes, L2 fabric sectors and read requests; then the
#      PC-sampled stalls per SASS instruction (dev/ncu_stalls.py: consumer waits on `full`, producer
#      waits on `empty`, wgmma waits);
#   4. RED=1: gemm_bench (tree) and pb/bench/gemm_bench_oldred (a kernel source with an older
#      decode_wg_cluster.cuh) alternating, RED_PROCS processes, --only=$RED_ONLY at RED_SHAPES.
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble 150
CUR=(); [ -n "${PROBE_FILE:-}" ] && CUR=(--curated="$PROBE_FILE")
( timeout 25 ncu --query-metrics > /tmp/ncu_query.txt 2>&1 ) &
QP=$!
S=$(date +%s)
if [ "${TESTS:-}" != none ]; then
  start_gpu_tests "GemmGpu.DecodeTmaVsReference;GemmGpu.DecodeTmaPairVsReference" 45
  rcs=""; for p in "${PIDS[@]}"; do wait "$p"; rcs="$rcs $?"; done
  echo "tests rc:$rcs ($(( $(date +%s) - S ))s)"
  grep -hE "^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure|bad," "$OUT"/test*.log | cut -c1-220 | head -30
fi
wait "$QP"
fits 12 copy && timeout 20 python3 dev/copy_rate.py 2>&1 | tail -1
bench_procs 1 40 "${CUR[@]}"
NS=${NCU_SHAPES:-64x4096x4096,128x4096x4096}
if [ "${NCU:-1}" = 1 ] && fits "${NCU_S:-40}" ncu; then
  ONLY="${NCU_ONLY:-}"; LT="${NCU_LT:-}"
  [ "$n" -ge 1 ] && for sh in ${NS//,/ }; do
    best=$(python3 dev/decode/prepass_top.py --best-decode "$sh" < "$OUT/bench1.err")
    [ -n "$best" ] && ONLY="$ONLY${ONLY:+;}$best@$sh"
    idx=$(grep -E "^cand (gemm_)?NT_$sh flush cublaslt " "$OUT/bench1.err" | sort -k6,6g | head -1 | sed 's/.*idx=\([0-9]*\).*/\1/')
    LT="$LT${LT:+,}0@$sh${idx:+,$idx@$sh}"
  done
  M=$(python3 dev/ncu_table.py --metrics /tmp/ncu_query.txt)
  for x in l1tex__m_xbar2l1tex_read_bytes.sum lts__t_sectors_srcunit_ltcfabric.sum \
           lts__t_sectors_srcunit_tex_op_read.sum lts__t_requests_srcunit_tex_op_read.sum sm__warps_active.avg.pct_of_peak_sustained_active; do
    grep -q "^${x%.*} " /tmp/ncu_query.txt && M="$M,$x"
  done
  echo "ncu --only=$ONLY --profile_lt=$LT"
  S=$(date +%s)
  timeout "${NCU_S:-40}" ncu --clock-control none -k 'regex:ktune_gemm_decode|ktune_read_bound|nvjet|sm90|gemm' \
    --launch-count 24 --section WarpStateStats --section SourceCounters \
    --metrics "$M" -f -o /tmp/stall "$B/bench/gemm_bench" --kinds=decode "${CUR[@]}" --profile \
    --only="$ONLY" --profile_lt="$LT" --shapes="$NS" > "$OUT/ncu_bench.txt" 2>&1
  echo "ncu rc=$? $(( $(date +%s) - S ))s"
  ncu -i /tmp/stall.ncu-rep --page raw --csv --metrics "$M" > "$OUT/ncu_raw.csv" 2>&1
  python3 dev/ncu_table.py "$OUT/ncu_raw.csv" "$OUT/ncu_bench.txt" | cut -c1-200
  ncu -i /tmp/stall.ncu-rep --page source --csv --print-source sass > /tmp/ncu_src.csv 2> "$OUT/ncu_src.err" &&
    python3 dev/ncu_stalls.py /tmp/ncu_src.csv | cut -c1-160 | head -${STALL_LINES:-200}
fi
if [ "${RED:-0}" = 1 ]; then
  for p in $(seq 1 "${RED_PROCS:-4}"); do
    fits 12 "red $p" || break
    bin=gemm_bench; [ $((p % 2)) = 0 ] && bin=gemm_bench_oldred
    KTUNE_CACHE_DIR=/tmp/kcache_$bin timeout "$(( $(left) - 5 ))" "$B/bench/$bin" --kinds=decode --only="$RED_ONLY" --shapes="$RED_SHAPES" \
      --rounds="${ROUNDS:-3}" > "$OUT/red$p.log" 2> "$OUT/red$p.err"
    echo "red $p $bin rc=$?"
    grep -E "^RESULT .* (ktune|silu_mul/ktune|read_bound) " "$OUT/red$p.log" | awk '{printf "%s %s %s; ", $3, $4, $5} END {print ""}'
  done
fi
grep -h "^VERIFY" "$OUT"/bench*.log 2>/dev/null | grep -v " ok " | head -10
print_bench_tables "$n" 250
[ "$n" -ge 1 ] && { echo "== process 1 pre-pass: the ${TOP:-4} fastest per shape, mode and variant (us)";
                    python3 dev/decode/prepass_top.py "${TOP:-4}" < "$OUT/bench1.err" | head -${TOP_LINES:-60}; }
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err ./*.csv ./*.txt 2>/dev/null; rm -f test*.log ./*.err ncu_raw.csv)
