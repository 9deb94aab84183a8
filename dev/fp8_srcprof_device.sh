#!/usr/bin/env bash
# GPU machine, issue 33 (staged by `bash dev/fp8_stage.sh DEST`; nothing is built here): ncu's source
# page (per SASS instruction: executed count, PC-sampled warp stalls) of one launch of the tma
# kind's $NCU_NAME and one of cuBLASLt's heuristic algorithm $NCU_LT at $NCU_SHAPE NT, each in a
# profile of its own: src_ktune.csv.gz / src_lt.csv.gz, their stall classes (dev/ncu_stalls.py)
# and the executed instructions by opcode (dev/ncu_src_ops.py) in srcprof.txt. BUDGET (60).
set -uo pipefail
BUDGET_DEFAULT=60
. dev/fp8_device_common.sh
Q=${NCU_SHAPE:-1024x14336x4096}
C=$(configs "${NCU_NAME:-P176}")
prof() {  # LABEL KERNEL_REGEX ONLY PROFILE_LT
  [ "$(left)" -gt 12 ] || { echo "ncu $1 skipped: $(left) s left"; return; }
  timeout $(( $(left) - 6 )) ncu --clock-control none -k "regex:$2" --launch-count 1 \
    --section SourceCounters --section WarpStateStats -f -o "/tmp/ncu_$1" \
    "$PB/bench/gemm_bench" --kinds=tma --profile --only="$3" --profile_lt="$4" --shapes="$Q" \
    > "/tmp/ncu_bench_$1.txt" 2>&1
  at "ncu $1 rc=$?"
  ncu -i "/tmp/ncu_$1.ncu-rep" --page source --csv --print-source sass > "/tmp/src_$1.csv" 2> "/tmp/src_$1.err"
  { echo "== $1 ($2) at $Q"
    python3 dev/ncu_stalls.py "/tmp/src_$1.csv" || tail -3 "/tmp/src_$1.err"
    python3 dev/ncu_src_ops.py "/tmp/src_$1.csv"; } >> "$OUT/srcprof.txt" 2>&1
  gzip -c "/tmp/src_$1.csv" > "$OUT/src_$1.csv.gz"
}
prof ktune '^ktune_gemm' "$C" ""
prof lt '^nvjet' "$C" "${NCU_LT:-0}@$Q"
cat "$OUT/gpu.txt" "$OUT/srcprof.txt"
at total
