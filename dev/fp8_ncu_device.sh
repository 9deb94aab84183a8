#!/usr/bin/env bash
# GPU machine, issue 33: ncu (clocks left alone) of the JIT configs $ONLY_NAMES beside cuBLASLt's
# algorithms $LT ("I@MxNxK", gemm_bench --profile_lt) on $SHAPES, one launch each, with the
# metrics of dev/ncu_table.py (durations, SM clock, tensor pipe, busiest SM, L2, DRAM, stalls).
# Binaries staged by dev/fp8_stage.sh into pb/.   BUDGET (40) ONLY_NAMES (D) LT (4@4096x4096x4096)
# SHAPES (fp8: the e4m3 cubes and the bf16 cubes; configs and algorithms name their shapes)
set -uo pipefail
BUDGET_DEFAULT=40
. dev/fp8_device_common.sh
ONLY=$(configs "${ONLY_NAMES:-D@4096x4096x4096}")
command -v ncu > /dev/null || { echo "no ncu"; exit 1; }
timeout 15 ncu --query-metrics > /tmp/ncu_query.txt 2>&1
M=$(python3 dev/ncu_table.py --metrics /tmp/ncu_query.txt)
at "metrics"
timeout $(( $(left) - 3 )) ncu --clock-control none -k 'regex:^(ktune_gemm|[^k])' --launch-count ${NCU_LAUNCHES:-8} \
  --metrics "$M" --csv --page raw --log-file "$OUT/ncu.csv" \
  "$PB/bench/gemm_bench" --kinds=tma --profile --only="$ONLY" --profile_lt="${LT:-4@4096x4096x4096}" \
  --shapes="${SHAPES:-fp8}" > "$OUT/ncu_bench.txt" 2> "$OUT/ncu_bench.err"
at "ncu rc=$?"
[ -s "$OUT/prebuilt.err" ] || rm -f "$OUT/prebuilt.err"
python3 dev/ncu_table.py "$OUT/ncu.csv" "$OUT/ncu_bench.txt"
at total
