#!/usr/bin/env bash
# GPU machine, issue 33's short-K shape (3000x5000x1000, NT and NN): what bounds it. One call
# against a deadline of BUDGET seconds, steps in order, each skipped once it would overrun
# (binaries staged by dev/fp8_stage.sh into pb/, nothing is built here).
#   1. one gemm_bench process over tma's whole curated list (no --only: the tuned op's candidates)
#      on $SHAPES: the odd shape in both layouts, its aligned twins (3072x5120 and K 1024: which of
#      the row pitches, 2000 B for A and B, 10000 B for C, and the ragged edges costs what) and
#      4096x6144x4096 (issue item 2). EXTRA: more configs through a --curated overlay file.
#   2. ncu (clocks left alone), one launch each: the default D, the pre-pass's fastest JIT config at
#      3000x5000x1000 NT, and cuBLASLt's fastest algorithm of the pre-pass per shape, with the
#      metrics of dev/ncu_table.py plus LaunchStats and Occupancy.
#   3. ncu's source page for D at 3000x5000x1000 NT: warp stalls per SASS instruction
#      (dev/ncu_stalls.py).
# Logs under $OUT, tables last.   BUDGET (100) BENCH_S (45) NCU (1) SRC (1)
set -uo pipefail
BUDGET_DEFAULT=100
. dev/fp8_device_common.sh
SHAPES=${SHAPES:-3000x5000x1000,3000x5000x1000:NN,3072x5120x1024,3072x5120x1000,3000x5000x1024,4096x6144x4096}
ODD=3000x5000x1000
CUR=()
[ -n "${EXTRA:-}" ] && CUR=(--curated="$EXTRA")
timeout "${BENCH_S:-45}" stdbuf -oL "$PB/bench/gemm_bench" --kinds=tma "${CUR[@]}" --shapes="$SHAPES" \
  --rounds=3 > "$OUT/bench_1.txt" 2> "$OUT/bench_1.err"
at "bench rc=$?"
grep -E "^VERIFY" "$OUT/bench_1.txt" | grep -v " ok " | head -5
# cuBLASLt's fastest algorithm per MxNxK in the pre-pass ("I@MxNxK" for --profile_lt) and the
# fastest JIT config at the odd shape, NT.
LT=$(grep -h "^cand" "$OUT/bench_1.err" | awk '$4 == "cublaslt" { if (!($2 in b) || $6 < b[$2]) { b[$2] = $6; i[$2] = $5 } }
  END { for (k in b) { n = k; sub(/^[A-Za-z0-9]+_/, "", n); x = i[k]; sub(/idx=/, "", x); e = x "@" n;
        if (!(e in seen)) { seen[e] = 1; printf "%s%s", s, e; s = "," } } }')
BEST=$(grep -h "^cand NT_$ODD flush tma " "$OUT/bench_1.err" | sort -k6,6g | head -1 | awk '{print $5}')
echo "profile_lt=$LT best_jit_NT=$BEST"
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null && [ "$(left)" -gt 30 ]; then
  timeout 20 ncu --query-metrics > "$OUT/ncu_query.txt" 2>&1
  M=$(python3 dev/ncu_table.py --metrics "$OUT/ncu_query.txt")
  ONLY="$D"
  [ -n "$BEST" ] && [ "$BEST" != "$D" ] && ONLY="$ONLY;$BEST@$ODD"
  timeout $(( $(left) - ${SRC_S:-22} )) ncu --clock-control none -k 'regex:^(ktune_gemm|[^k])' --launch-count 14 \
    --section LaunchStats --section Occupancy --metrics "$M" --csv --page raw --log-file "$OUT/ncu.csv" \
    "$PB/bench/gemm_bench" --kinds=tma --profile --only="$ONLY" --profile_lt="$LT" \
    --shapes="$ODD,$ODD:NN,3072x5120x1024,4096x6144x4096" > "$OUT/ncu_bench.txt" 2> "$OUT/ncu_bench.err"
  at "ncu rc=$?"
fi
if [ "${SRC:-1}" = 1 ] && command -v ncu > /dev/null && [ "$(left)" -gt 12 ]; then
  timeout $(( $(left) - 4 )) ncu --clock-control none -k 'regex:^ktune_gemm' --launch-count 1 \
    --section SourceCounters --section WarpStateStats -f -o /tmp/ncu_src \
    "$PB/bench/gemm_bench" --kinds=tma --profile --only="$D" --profile_lt= --shapes="$ODD" \
    > "$OUT/ncu_src_bench.txt" 2>&1
  at "ncu source rc=$?"
  ncu -i /tmp/ncu_src.ncu-rep --page source --csv --print-source sass > /tmp/src.csv 2> /tmp/src.err &&
    python3 dev/ncu_stalls.py /tmp/src.csv > "$OUT/ncu_stalls.txt" 2>&1 || tail -3 /tmp/src.err
fi
cat "$OUT/gpu.txt"
echo "== pre-pass (us): every tma config per shape, cuBLASLt best"
grep -h "^cand" "$OUT/bench_1.err" | grep -v cublaslt |
  sed 's/CONSUMERS=2,CLUSTER_M=1,//; s/NUM_STAGES=/S/; s/BLOCK_N=/N/; s/WG_M=/W/; s/GROUP_M=/G/; s/CONSUMERS=/C/; s/CLUSTER_M=/CL/; s/EPI_TMA=/E/; s/SPLIT_K=/SK/; s/PINGPONG=/PP/' |
  sort -k2,2 -k6,6g | awk '{c[$2]++} c[$2] <= 6 {print $2, $5, $6}'
grep -h "^cand" "$OUT/bench_1.err" | grep cublaslt | sort -k2,2 -k6,6g | awk '{c[$2]++} c[$2] <= 2 {print $2, $5, $6}'
grep -E "^(RESULT|RATIO)" "$OUT/bench_1.txt" | sed 's/ gemm / /' | cut -c1-110
[ -f "$OUT/ncu.csv" ] && python3 dev/ncu_table.py "$OUT/ncu.csv" "$OUT/ncu_bench.txt" | tee "$OUT/ncu_table.txt"
[ -f "$OUT/ncu_stalls.txt" ] && cat "$OUT/ncu_stalls.txt"
at total
