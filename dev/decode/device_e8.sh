#!/bin/bash
# GPU machine, one call (issue 32: what the tuned op picks on the LLM suite's decode keys, and the
# FMA body at 4-8 rows). Binaries from pb/ (bash dev/decode/stage.sh), logs under $OUT; each step
# has its own limit and is skipped when the call's DEADLINE (s) would be passed:
#   1. gemm_gpu_test --gtest_filter=$TEST1 (TEST_S s);
#   2. SUITE=1: `ktune tune gemm --suite llm --json` on an empty cache and database of its own
#      (SUITE_S s): the winners (dev/suite_winners.py) and, per decode key, the fastest timed
#      candidate of each kind and body against cuBLASLt (dev/decode/suite_decode.py);
#   3. PROCS processes of gemm_bench --kinds=$KINDS --shapes=$SHAPES --rounds=$ROUNDS with the
#      curated overlay $PROBE_FILE (BENCH_S s each), each process's interleaved table, then
#      process 1's pre-pass (the TOP fastest per shape, mode and variant);
#   4. EXH="MxNxK ...": those keys tuned with --search exhaustive on a cold cache each (EXH_S s).
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble 170
S=$(date +%s)
timeout "${TEST_S:-45}" "$B/tests/gemm_gpu_test" --gtest_filter="${TEST1:-GemmGpu.DecodeFma*:GemmGpu.DecodeOp*}" > "$OUT/test.log" 2>&1
echo "tests ${TEST1:-GemmGpu.DecodeFma*:GemmGpu.DecodeOp*} rc=$? $(( $(date +%s) - S ))s"
grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure|bad," "$OUT/test.log" | head -20
if [ "${SUITE:-1}" = 1 ] && fits "${SUITE_S:-40}" suite; then
  run_suite "${SUITE_S:-40}"
fi
CUR=""; [ -n "${PROBE_FILE:-}" ] && CUR="--curated=$PROBE_FILE"
n=0
for p in $(seq 1 "${PROCS:-2}"); do
  fits "${BENCH_S:-40}" "bench $p" || break
  S=$(date +%s)
  timeout "${BENCH_S:-40}" "$B/bench/gemm_bench" --kinds=${KINDS:-decode,skinny} $CUR --shapes=${SHAPES:-16x4096x4096} \
    --rounds=${ROUNDS:-3} > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
  echo "bench $p rc=$? $(( $(date +%s) - S ))s"; n=$p
done
grep -h "^VERIFY" "$OUT"/bench*.log 2>/dev/null | grep -v " ok " | head -10
print_bench_tables "$n"
[ "$n" -ge 1 ] && { echo "== process 1 pre-pass: the ${TOP:-6} fastest per shape, mode and variant (us)";
                    python3 dev/decode/prepass_top.py "${TOP:-6}" < "$OUT/bench1.err"; }
for key in ${EXH:-}; do
  fits "${EXH_S:-25}" "exhaustive $key" || break
  IFS=x read -r m nn k <<< "$key"; S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kc-exh-$key KTUNE_DB=/tmp/kc-exh-$key/db.json timeout "${EXH_S:-25}" "$B/tools/ktune" \
    tune gemm --m "$m" --n "$nn" --k "$k" --layout NT --search exhaustive --json > "$OUT/exh_$key.json" 2> "$OUT/exh_$key.err"
  echo "exhaustive $key rc=$? $(( $(date +%s) - S ))s"
  python3 dev/decode/suite_decode.py "$OUT/exh_$key.json" | tail -n +2
done
echo "call wall $(( $(date +%s) - T0 ))s"
