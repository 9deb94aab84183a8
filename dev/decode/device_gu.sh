#!/bin/bash
# GPU machine, one call (issue 32, sixteenth session): the tma kind's gate/up pair (act silu_mul,
# templates/gemm/tma/tma_gated.cuh) against the plain GEMM at the 64- and 128-row keys of issue
# 32's N x K list. Binaries from pb/ (dev/decode/stage.sh); logs under $OUT:
#   1. at once: GemmGpu.TmaGateUpPairVsReference (TESTS: ';'-separated filters, TEST_S s) and a
#      gemm_bench process 0 over the keys that compiles every kernel (its times are not used);
#   2. PROCS gemm_bench processes, --kinds=decode,tma, the curated lists, ROUNDS interleaved rounds
#      each (silu_mul/ktune: the fastest decode or tma config of the pair over the same weights
#      against the plain pick, in the same rounds), while the deadline allows;
#   3. dev/decode/gu_table.py's table.
#   OUT=$OUT DEADLINE=130 bash dev/decode/device_gu.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-130}"
WIDE=${WIDE:-64x4096x4096,64x6144x4096,64x14336x4096,64x4096x14336,64x28672x4096,128x4096x4096,128x6144x4096,128x14336x4096,128x4096x14336,128x28672x4096}
S=$(date +%s)
start_gpu_tests "GemmGpu.TmaGateUpPairVsReference" "${TEST_S:-70}"
TPIDS=("${PIDS[@]}")
KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "${C0_S:-60}" "$B/bench/gemm_bench" --kinds=decode,tma \
  --shapes="$WIDE" --rounds=1 > "$OUT/bench0.log" 2> "$OUT/bench0.err" &
C0=$!
wait_gpu_tests "$S" 24 240 "${TPIDS[@]}"
wait $C0; echo "bench 0 (compiles) rc=$? $(( $(date +%s) - S ))s"
grep -c "compile failed" "$OUT/bench0.err"
grep -m3 "compile failed" "$OUT/bench0.err" | cut -c1-240
n=0
for p in $(seq 1 "${PROCS:-3}"); do
  fits 22 "bench $p" || break
  lim=${BENCH_S:-30}; [ "$(left)" -lt "$lim" ] && lim=$(( $(left) - 3 ))
  S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "$lim" "$B/bench/gemm_bench" --kinds=decode,tma \
    --shapes="$WIDE" --rounds="${ROUNDS:-5}" > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
  echo "bench $p rc=$? $(( $(date +%s) - S ))s (limit $lim)"; n=$p
done
python3 dev/decode/gu_table.py "$OUT" "$n"
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err 2>/dev/null && rm -f ./*.err ./*.log)
