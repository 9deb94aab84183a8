#!/usr/bin/env bash
# Fair same-run comparisons on the GPU machine (issue 19): gemm_bench, rowwise_bench and
# host_cost_bench, each run REPS times (default 3) in separate processes, the order of the three
# programs rotated every repetition; inside each process the variants are timed in interleaved
# rounds with a read-based L2 flush (see the benches' headers). dev/bench_table.py then prints one
# compact table: per figure the median over the processes, the range of the per-process medians,
# and the GPU clocks/power read before and after each measurement.
# Expects the build in /tmp/kb (dev/device_build.sh; dev/device_wave2.sh with STAGE=fair builds
# and calls this). About 4-6 minutes of device time with the defaults. Logs under $OUT/fair/.
# A run is not started once BUDGET_S seconds (default 420) have passed, so the whole stays inside
# one 10-minute device command; the table says how many processes each figure comes from.
#   [REPS=3] [BUDGET_S=420] [GEMM_SHAPES=...] [ROWWISE_FILTER=...] [PROGRAMS="gemm rowwise host"]
#   [GEMM_TIMEOUT=150] [ROWWISE_TIMEOUT=120] bash dev/bench_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; D="$OUT/fair"; mkdir -p "$D"
BB=${BB:-/tmp/kb/bench}
REPS=${REPS:-3}
BUDGET_S=${BUDGET_S:-420}
GEMM_SHAPES=${GEMM_SHAPES:-8192x8192x8192,4096x4096x4096,1x4096x4096,16x4096x4096,128x4096x4096}
ROWWISE_FILTER=${ROWWISE_FILTER:-'^(RmsNorm/bf16/4096x4096|RmsNorm/bf16/16384x8192|SiluMul/bf16/4096x2x14336|SiluMul/bf16/16384x2x14336)/'}
export KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/kcache}
now() { date +%s.%N; }
el() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.0f", b-a}'; }
T0=$(now)
run_one() {  # name rep
  local S; S=$(now)
  if [ "$(el "$T0")" -ge "$BUDGET_S" ]; then echo "  $1 rep $2 skipped: budget ${BUDGET_S}s spent"; return; fi
  case "$1" in
    gemm) timeout "${GEMM_TIMEOUT:-150}" "$BB/gemm_bench" --wgmma --rounds=15 --shapes="$GEMM_SHAPES" \
            > "$D/gemm.$2.log" 2> "$D/gemm.$2.err" ;;
    rowwise) timeout "${ROWWISE_TIMEOUT:-120}" "$BB/rowwise_bench" --benchmark_filter="$ROWWISE_FILTER" \
            > "$D/rowwise.$2.log" 2> "$D/rowwise.$2.err" ;;
    host) timeout 90 "$BB/host_cost_bench" --rounds=30 > "$D/host.$2.log" 2> "$D/host.$2.err" ;;
  esac
  echo "  $1 rep $2 rc=$? $(el "$S")s"
}
# PROGRAMS narrows the set (e.g. "gemm rowwise" where host_cost_bench is not built).
read -r -a order <<< "${PROGRAMS:-gemm rowwise host}"
np=${#order[@]}
for r in $(seq 1 "$REPS"); do
  for i in $(seq 0 $(( np - 1 ))); do run_one "${order[$(( (i + r - 1) % np ))]}" "$r"; done
done
echo "fair benches done in $(el "$T0")s"
grep -h "VERIFY" "$D"/gemm.*.log | sort | uniq -c | sed 's/^/  /' | head -20
python3 dev/bench_table.py "$D"/*.log | tee "$D/table.txt"
