#!/usr/bin/env bash
# GPU machine, issue 33: does 3000x5000x1000 read lower against cuBLASLt when it runs after the list's
# large shapes in the same gemm_bench process? The nineteenth session's first measurements (0.989-1.004
# of cuBLASLt best, CL4E2) ran it first, in a process of its own; the whole-list script
# (dev/final19_prefill.sh) runs it last, after 1024x14336x4096 .. 2048x28672x8192 (0.967-0.985).
# PAIRS pairs of processes, the order alternating per pair: "alone" = 3000x5000x1000 NT and NN only;
# "list" = final19_prefill's bf16 part (the same shapes in the same order). The same configs (ONLY_NAMES,
# final19_prefill's), ROUNDS rounds, read flush. Then ncu (clocks left alone, one launch each) of B at
# 4096x6144x4096 beside cuBLASLt #0 and the list's best there, and of P176 at 1024x14336x4096 beside
# cuBLASLt #0 (NCU_S seconds for both; 0: none).
# ORDERS="NAME=SHAPES ..." replaces the two kinds of process (each NAME a word; gemm_bench runs a
# process's shapes in its built-in order, 3000x5000x1000 after every other built-in shape), all run
# in each pair, the order rotating; PAIRS (3), ROUNDS (5), NCU_S (30), ONLY_NAMES.
# Staging as dev/fp8_box_final_device.sh (bash dev/fp8_stage.sh <checkout>/.devwork/fp8). Run
# (timeout_s = BUDGET + 15):
#   cd .devwork/fp8 && OUT=$OUT BUDGET=110 bash dev/fp8_order_device.sh
# Everything in ONE archive, $OUT/order.tgz; the table (dev/fp8_order_table.py) last on stdout.
set -uo pipefail
RES=${OUT:-/tmp/out}; mkdir -p "$RES"
export OUT=/tmp/order; rm -rf "$OUT"; mkdir -p "$OUT"
BUDGET=${BUDGET:-110} BUDGET_DEFAULT=110
pack() { tar -czf "$RES/order.tgz.part" -C "$OUT" . && mv "$RES/order.tgz.part" "$RES/order.tgz"; }
trap pack EXIT
say() { echo "order: $*" | tee -a "$OUT/run.log"; }
. dev/fp8_device_common.sh
ONLY=$(configs "${ONLY_NAMES:-B@4096x6144x4096 B@4096x4096x14336 P176@1024x14336x4096 D@2048x28672x8192 CL4E2@3000x5000x1000}")
ALONE=3000x5000x1000,3000x5000x1000:NN
LIST=1024x14336x4096,4096x6144x4096,4096x4096x14336,2048x28672x8192,$ALONE
NCU_S=${NCU_S:-30}
# Compiles first (one launch each), so no timed process compiles.
ALL=$LIST; for k in ${ORDERS:-}; do ALL=$ALL,${k#*=}; done
timeout -k 2 60 "$PB/bench/gemm_bench" --kinds=tma --profile --only="$ONLY" --shapes="$ALL" \
  > "$OUT/compile.txt" 2> "$OUT/compile.err"
say "$(at "compiles rc=$?")"
read -r -a KINDS <<< "${ORDERS:-alone=$ALONE list=$LIST}"
run() {  # name=shapes pair seconds
  timeout -k 2 "$3" "$PB/bench/gemm_bench" --kinds=tma --only="$ONLY" --shapes="${1#*=}" \
    --rounds="${ROUNDS:-5}" > "$OUT/${1%%=*}_$2.txt" 2> "$OUT/${1%%=*}_$2.err"
  say "$(at "${1%%=*} $2 (cap $3 s) rc=$?")"
}
for p in $(seq 1 "${PAIRS:-3}"); do
  [ "$(left)" -lt $(( NCU_S + 25 )) ] && { say "pair $p skipped: $(left) s left"; break; }
  n=${#KINDS[@]}
  for i in $(seq 0 $(( n - 1 ))); do run "${KINDS[$(( (i + p - 1) % n ))]}" "$p" 30; done
  pack
done
ncu_one() {  # config-name shape lt-list tag
  local m
  timeout $(( $(left) - 3 )) ncu --clock-control none -k 'regex:^(ktune_gemm|[^k])' \
    --launch-count 8 --metrics "$M" --csv --page raw --log-file "/tmp/ncu_$4.csv" \
    "$PB/bench/gemm_bench" --kinds=tma --profile --only="$(configs "$1")" --profile_lt="$3@$2" \
    --shapes="$2" > "$OUT/ncu_bench_$4.txt" 2> /tmp/ncu_bench.err
  say "$(at "ncu $4 (lt $3) rc=$?")"
  python3 dev/ncu_table.py "/tmp/ncu_$4.csv" "$OUT/ncu_bench_$4.txt" > "$OUT/ncu_$4.txt" 2>&1
}
if [ "$NCU_S" -gt 0 ] && command -v ncu > /dev/null && [ "$(left)" -ge 15 ]; then
  LT=$(python3 -c "import re,sys; m=re.search(r'^NT_4096x6144x4096\s+flush .*\n  ktune \w+:\S+, best cuBLASLt idx=(\d+)', open(sys.argv[1]).read(), re.M); print(m.group(1) if m else '4')" "$OUT/list_1.txt" 2>/dev/null || echo 4)
  LT=$( [ -n "$LT" ] && [ "$LT" != 0 ] && echo "0,$LT" || echo 0)
  timeout 10 ncu --query-metrics > /tmp/ncu_query.txt 2>&1
  M=$(python3 dev/ncu_table.py --metrics /tmp/ncu_query.txt)
  ncu_one B 4096x6144x4096 "$LT" b6144
  [ "$(left)" -ge 12 ] && ncu_one P176 1024x14336x4096 0 p176
fi
python3 dev/fp8_order_table.py "$OUT" > "$OUT/table.txt" 2>&1
say "$(at total)"
pack
cat "$OUT/gpu.txt"
cat "$OUT/table.txt"
for t in b6144 p176; do
  [ -f "$OUT/ncu_$t.txt" ] || continue
  echo "== ncu $t"
  grep -E "^  k[0-9]|^(gpu__time_duration.sum|sm__cycles_elapsed.avg.per|sm__cycles_active.(avg|max) |sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active|smsp__inst_executed.sum|lts__t_requests_srcunit_tex.sum|lts__t_sectors_srcunit_tex.sum|launch__grid_size|dram__bytes_read.sum|lts__throughput.avg)" "$OUT/ncu_$t.txt" | cut -c1-150
done
