#!/usr/bin/env bash
# GPU machine, issue 33: a kernel change of the tma kind against the base build in one call
# (staged by `BASE_BENCH=<base gemm_bench> bash dev/fp8_stage.sh DEST`: this tree's binaries in pb/,
# the base build's gemm_bench in basebin/; nothing is built here), steps in order against a deadline
# of BUDGET seconds:
#   1. ncu (clocks left alone, one launch each) of $NCU_NAMES at $NCU_SHAPE NT with the base build
#      and with this one (cuBLASLt's algorithm $NCU_LT beside the latter): ncu_table.txt
#      (dev/ncu_table.py: instructions executed, tensor pipe, busiest SM, L2, stalls);
#   2. PAIRS pairs of gemm_bench processes, base and this build alternately (which runs first
#      alternates too), each the fair method over the same configs ($ONLY_NAMES, one per shape) at
#      $SHAPES_A (BENCHA_S) then $SHAPES, ROUNDS interleaved rounds with cuBLASLt #0 and the best of
#      8 in the same process, the $TWIN_NAMES timed in the pick's rounds: ab_<build>_<pair>.txt;
#   3. the GPU tests of this build (TEST_S seconds kept for them): gemm_gpu_test $GEMM_FILTER and
#      $GEMM_FILTER2, gemm_fp8_gpu_test $FP8_FILTER, three processes at once.
# Tables last (dev/fp8_ring_table.py: per shape and pair, cuBLASLt best / ktune of each build and
# this build's time over the base's); logs in $OUT (raw.tgz).
# BUDGET (200) PAIRS (3) ROUNDS (3) BENCH1_S (45) BENCH_S (25) NCU (1) TEST_S (60)
set -uo pipefail
BUDGET_DEFAULT=200
. dev/fp8_device_common.sh
BASE=$PWD/basebin/gemm_bench
ONLY=$(configs "${ONLY_NAMES:-P176@1024x14336x4096 B}")
TWIN=$(configs "${TWIN_NAMES:-}")
NO=$(configs "${NCU_NAMES:-P176}")
NCU_SHAPE=${NCU_SHAPE:-1024x14336x4096}
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null; then
  timeout 10 ncu --query-metrics > /tmp/ncu_query.txt 2>&1
  M=$(python3 dev/ncu_table.py --metrics /tmp/ncu_query.txt)
  for b in base new; do
    bin=$PB/bench/gemm_bench lt=()
    [ "$b" = base ] && bin=$BASE
    [ "$b" = new ] && [ -n "${NCU_LT:-0}" ] && lt=(--profile_lt="${NCU_LT:-0}@$NCU_SHAPE")
    timeout 40 ncu --clock-control none -k 'regex:^(ktune_gemm|[^k])' --launch-count 12 \
      --metrics "$M" --csv --page raw --log-file "/tmp/ncu_$b.csv" \
      "$bin" --kinds=tma --profile --only="$NO" "${lt[@]}" --shapes="$NCU_SHAPE" \
      > "/tmp/ncu_bench_$b.txt" 2> "/tmp/ncu_bench_$b.err"
    at "ncu $b rc=$?"
    { echo "== $b"; python3 dev/ncu_table.py "/tmp/ncu_$b.csv" "/tmp/ncu_bench_$b.txt"; } >> "$OUT/ncu_table.txt" 2>&1
  done
fi
# ab BUILD PAIR SECONDS: one gemm_bench process of BUILD over SHAPES_A then SHAPES.
ab() {
  local bin=$PB/bench/gemm_bench sh s f="$OUT/ab_$1_$2.txt"
  [ "$1" = base ] && bin=$BASE
  : > "$f"
  for sh in ${SHAPES_A:+"$SHAPES_A"} "$SHAPES"; do
    s=$3
    [ "$sh" = "${SHAPES_A:-}" ] && s=${BENCHA_S:-15}
    [ "$(left)" -ge $(( s + ${TEST_S:-60} )) ] || { echo "ab $1 $2 ($sh) skipped: $(left) s left"; continue; }
    timeout "$s" stdbuf -oL "$bin" --kinds=tma --only="$ONLY" --shapes="$sh" --rounds="${ROUNDS:-3}" \
      ${TWIN:+--twin="$TWIN"} >> "$f" 2>> "$OUT/ab_$1_$2.err"
    at "ab $1 $2 ($sh) rc=$?"
  done
  grep -E "^VERIFY" "$f" | grep -v " ok " | head -5
}
for p in $(seq 1 "${PAIRS:-3}"); do
  s=${BENCH_S:-25}
  [ "$p" = 1 ] && s=${BENCH1_S:-45}
  if [ $(( p % 2 )) = 1 ]; then ab base "$p" "$s"; ab new "$p" "$s"; else ab new "$p" "$s"; ab base "$p" "$s"; fi
done
TS=$(( $(left) - 4 ))
: > /tmp/t1.log; : > /tmp/t2.log; : > /tmp/t3.log
if [ "$TS" -ge 15 ]; then
  timeout "$TS" stdbuf -oL "$PB/tests/gemm_gpu_test" --gtest_filter="${GEMM_FILTER2:-GemmGpu.TmaSplitTail*:GemmGpu.TmaGateUp*:GemmGpu.TmaClusterGrid*}" > /tmp/t2.log 2>&1 &
  G=$!
  timeout "$TS" stdbuf -oL "$PB/tests/gemm_fp8_gpu_test" --gtest_filter="${FP8_FILTER:-GemmFp8Gpu.JitKernel*:GemmFp8Gpu.LargeJit*}" > /tmp/t3.log 2>&1 &
  F=$!
  timeout "$TS" stdbuf -oL "$PB/tests/gemm_gpu_test" --gtest_filter="${GEMM_FILTER:-GemmGpu.TmaEveryLayout*:GemmGpu.TmaVsReference}" > /tmp/t1.log 2>&1
  R1=$?
  wait $G; R2=$?; wait $F; R3=$?
  at "tests ($TS s): rc $R1 $R2 $R3"
else
  echo "tests skipped: $(left) s left"
fi
grep -hE "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|worst error" /tmp/t1.log /tmp/t2.log /tmp/t3.log | cut -c1-160 > "$OUT/tests.txt"
cp /tmp/t1.log /tmp/t2.log /tmp/t3.log /tmp/ncu_*.csv /tmp/ncu_bench_* "$OUT/" 2>/dev/null
(cd "$OUT" && tar -czf raw.tgz t?.log ncu_*.csv ncu_bench_* ab_*.err 2>/dev/null && rm -f t?.log ncu_*.csv ncu_bench_* ab_*.err)
cat "$OUT/gpu.txt" "$OUT/tests.txt"
grep -E "^(KERNELS|  k[0-9]|== |gpu__time|sm__cycles_elapsed|sm__pipe_tensor_op_gmma|smsp__inst_executed|sm__cycles_active|sm__inst_issued)" "$OUT/ncu_table.txt" 2>/dev/null | cut -c1-150
python3 dev/fp8_ring_table.py "$OUT"/ab_*.txt
at total
