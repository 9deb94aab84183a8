#!/usr/bin/env bash
# GPU machine, issue 33: the box probe's A/B and the whole prefill list in ONE call. The one-box
# copies (a K-major operand's tile in one TMA box per stage) against 64-row boxes (the probe knobs
# TMA_ABOX / TMA_BBOX = 64) are timed as twins of the picks in the same interleaved rounds of every
# process of issue 33's whole list (dev/final19_prefill.sh with TWIN), so the list's figures and the
# A/B come from the same processes.
# Staging (dev machine, this tree committed, build/ current for gemm_bench, gemm_gpu_test,
# gemm_fp8_gpu_test, ktune, ktune-worker):
#   bash dev/fp8_stage.sh <checkout>/.devwork/fp8     (then carry [".devwork/fp8"])
# Run (timeout_s = BUDGET + 15):
#   cd .devwork/fp8 && OUT=$OUT BUDGET=300 bash dev/fp8_box_final_device.sh
# Steps, against a deadline of BUDGET seconds (300):
#   1. gemm_gpu_test $GEMM_FILTER (the box knobs' configs against float64 and cuBLASLt, the cluster
#      grid), cut at TEST_S (80); beside it, gemm_bench --profile over every shape with the picks and
#      twins, so every kernel the timed processes launch is compiled into the call's store first;
#   2. dev/final19_prefill.sh (PROCS 3, up to PROCS_MAX 5) with the twins A64+B64, A64, B64 of
#      $PICKS (CL4E2 at 3000x5000x1000 NT and NN, B at 4096x6144x4096, P176 at 1024x14336x4096) in
#      its bf16 part; NCU_S (30) kept for step 3;
#   3. ncu of CL4E2 and CL4E2+TMA_ABOX=64 beside cuBLASLt #0 and process 1's best algorithm at
#      3000x5000x1000 NT (one launch each, clocks left alone; dev/ncu_table.py).
# Expected wall (estimated): tests and compiles 50-80 s, warm processes 25-35 s each, ncu 20-30 s.
# Everything in ONE archive, $OUT/box_final.tgz (re-packed after each step); the tables last on
# stdout: the whole list (dev/final19_prefill_table.py) and the A/B (dev/fp8_box_ab_table.py:
# twin / pick > 1 means the one-box pick is faster).
set -uo pipefail
RES=${OUT:-/tmp/out}; mkdir -p "$RES"
export OUT=/tmp/box_final; rm -rf "$OUT"; mkdir -p "$OUT"
BUDGET=${BUDGET:-300} BUDGET_DEFAULT=300
pack() { tar -czf "$RES/box_final.tgz.part" -C "$OUT" . && mv "$RES/box_final.tgz.part" "$RES/box_final.tgz"; }
trap pack EXIT
say() { echo "box_final: $*" | tee -a "$OUT/run.log"; }
# Clocks into gpu.txt, gemm_bench checked to start (exit 1 if it does not), configs(), left(), at(),
# KTUNE_CACHE_DIR (the call's one store).
. dev/fp8_device_common.sh
PICKS=${PICKS:-CL4E2@3000x5000x1000 B@4096x6144x4096 P176@1024x14336x4096}
TW=""
for p in $PICKS; do
  n=${p%%@*}
  for v in +TMA_ABOX=64+TMA_BBOX=64 +TMA_ABOX=64 +TMA_BBOX=64; do TW="$TW $n$v${p#"$n"}"; done
done
TWIN=$(configs "$TW")
ONLY_NAMES=${ONLY_NAMES:-B@4096x4096x4096 D@8192x8192x8192 B@4096x6144x4096 B@4096x4096x14336 P176@1024x14336x4096 D@2048x28672x8192 CL4E2@3000x5000x1000}
ONLY=$(configs "$ONLY_NAMES")
echo "only: $ONLY" >> "$OUT/run.log"; echo "twin: $TWIN" >> "$OUT/run.log"
ALL=fp8,1024x14336x4096,4096x6144x4096,4096x4096x14336,2048x28672x8192,3000x5000x1000,3000x5000x1000:NN,4096x4096x4096,8192x8192x8192
TEST_S=${TEST_S:-80}
[ "$TEST_S" -gt $(( $(left) - 90 )) ] && TEST_S=$(( $(left) - 90 ))
timeout -k 2 "$TEST_S" "$PB/bench/gemm_bench" --kinds=tma --profile --only="$ONLY" --twin="$TWIN" \
  --shapes="$ALL" > "$OUT/compile.txt" 2> "$OUT/compile.err" &
WARM_PID=$!
if [ "$TEST_S" -ge 10 ]; then
  timeout -k 2 "$TEST_S" "$PB/tests/gemm_gpu_test" \
    --gtest_filter="${GEMM_FILTER:-GemmGpu.TmaBoxProbe*:GemmGpu.TmaClusterGrid*}" > "$OUT/tests.log" 2>&1
  say "$(at "tests (cap $TEST_S s) rc=$?")"
else
  say "tests skipped: $(left) s left" > "$OUT/tests.log"
fi
wait "$WARM_PID"; say "$(at "compiles (gemm_bench --profile) rc=$?")"
grep -hE "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|worst error|resident clusters" "$OUT/tests.log" \
  | cut -c1-160 > "$OUT/tests.txt"
grep -c "compile failed" "$OUT/compile.err" | sed 's/^/compile failures: /' >> "$OUT/tests.txt"
pack
NCU_S=${NCU_S:-30}
OUT=$OUT TWIN="$TWIN" ONLY_NAMES="$ONLY_NAMES" PREFILL_CACHE=$KTUNE_CACHE_DIR PROCS=${PROCS:-3} \
  PROCS_MAX=${PROCS_MAX:-5} BUDGET=$(( $(left) - NCU_S - 4 )) bash dev/final19_prefill.sh > "$OUT/prefill.log" 2>&1
say "$(at "prefill list rc=$?")"
pack
if [ "$NCU_S" -gt 0 ] && command -v ncu > /dev/null && [ "$(left)" -ge 15 ]; then
  LT=$(python3 -c "import re,sys; m=re.search(r'^NT_3000x5000x1000\s+flush .*\n  ktune \w+:\S+, best cuBLASLt idx=(\d+)', open(sys.argv[1]).read(), re.M); print(m.group(1) if m else '')" "$OUT/prefill/p1_bf16.txt" 2>/dev/null)
  LT=$( [ -n "$LT" ] && [ "$LT" != 0 ] && echo "0,$LT" || echo 0)
  timeout 10 ncu --query-metrics > /tmp/ncu_query.txt 2>&1
  M=$(python3 dev/ncu_table.py --metrics /tmp/ncu_query.txt)
  NO=$(configs "CL4E2 CL4E2+TMA_ABOX=64")
  timeout $(( $(left) - 4 )) ncu --clock-control none -k 'regex:^(ktune_gemm|[^k])' \
    --launch-count 12 --metrics "$M" --csv --page raw --log-file /tmp/ncu.csv \
    "$PB/bench/gemm_bench" --kinds=tma --profile --only="$NO" --profile_lt="$LT@3000x5000x1000" \
    --shapes=3000x5000x1000 > /tmp/ncu_bench.txt 2> /tmp/ncu_bench.err
  say "$(at "ncu (lt $LT) rc=$?")"
  python3 dev/ncu_table.py /tmp/ncu.csv /tmp/ncu_bench.txt > "$OUT/ncu_table.txt" 2>&1
  cp /tmp/ncu_bench.txt "$OUT/ncu_bench.txt"
else
  say "ncu skipped: $(left) s left"
fi
python3 dev/fp8_box_ab_table.py "$OUT"/prefill/p*_bf16.txt > "$OUT/box_table.txt" 2>&1
say "$(at total)"
pack
cat "$OUT/gpu.txt" "$OUT/tests.txt"; grep -E "^prefill: " "$OUT/prefill.log" | grep -v "^prefill: process [0-9] part .* rc=0$" | head -12
cat "$OUT/prefill/table.txt"
echo "== the box A/B (twins in the list's bf16 rounds): twin / pick > 1: the one-box pick faster"
cat "$OUT/box_table.txt"
head -40 "$OUT/ncu_table.txt" 2>/dev/null
