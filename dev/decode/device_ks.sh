#!/bin/bash
# GPU machine, one call (issue 32, twenty-first session, second task): the probe knob DC_KS (DC_GRID
# = 0 with DC_KS blocks per tile splitting K, reduced through the workspace: the cluster K split
# without the cluster launch) against each key's current pick (the first config of its KEYS line).
# Binaries from pb/ (dev/decode/stage.sh); logs under $OUT:
#   1. GemmGpu.DecodeTmaPlainKSplitVsReference in the background beside process 0 of gemm_bench
#      (it compiles every config; its times are not used);
#   2. PROCS gemm_bench processes, --only and --twin every key's configs, so all are timed in the
#      same interleaved rounds (flush and rotation) with cuBLASLt's best (the order reversed in even
#      processes);
#   3. dev/decode/ks_table.py: per key and mode, each config's µs and X/ref per process.
#   OUT=$OUT DEADLINE=64 bash dev/decode/device_ks.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-64}"
d() {  # MT WARPS NT U DEPTH XR GRID [extra]
  echo "DC_WG=2,DC_WARPS=$2,DC_NT=$3,DC_MT=$1,DC_U=$4,DC_DEPTH=$5,DC_PF=1,DC_XR=$6,DC_GRID=$7${8:+,$8}"
}
KEYS_AB="8x6144x4096:$(d 1 4 2 2 2 0 4):$(d 1 4 2 2 2 0 0 DC_KS=2)
16x6144x4096:$(d 2 4 2 2 2 3 4):$(d 2 4 2 2 2 0 0 DC_KS=2):$(d 2 4 2 4 1 0 0 DC_KS=2)
32x6144x4096:$(d 4 4 1 4 1 0 4):$(d 4 4 2 2 2 0 0 DC_KS=2)
16x4096x4096:$(d 2 4 1 4 2 3 4):$(d 2 4 1 4 2 0 0 DC_KS=2):$(d 2 4 2 2 2 0 0 DC_KS=4)
16x14336x4096:$(d 2 8 1 4 1 0 6):$(d 2 8 2 2 1 0 0 DC_KS=2)"
SHAPES=${SHAPES:-8x6144x4096,16x6144x4096,32x6144x4096,16x4096x4096,16x14336x4096}
S=$(date +%s)
PIDS=()
[ "${TESTS:-}" != none ] && start_gpu_tests "GemmGpu.DecodeTmaPlainKSplitVsReference" "${TEST_S:-30}"
KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "${C0_S:-25}" "$B/bench/gemm_bench" --kinds=decode \
  --only="$(list)" --twin="$(list)" --shapes="$SHAPES" --rounds=1 > "$OUT/bench0.log" 2> "$OUT/bench0.err"
echo "bench 0 (compiles; beside the tests) rc=$? $(( $(date +%s) - S ))s"
[ "${#PIDS[@]}" -gt 0 ] && wait_gpu_tests "$S" 12 200 "${PIDS[@]}"
n=0
for p in $(seq 1 "${PROCS:-4}"); do
  fits 8 "bench $p" || break
  lim=${BENCH_S:-12}; [ "$(left)" -lt "$lim" ] && lim=$(( $(left) - 2 ))
  rev=""; [ $((p % 2)) = 0 ] && rev=rev
  T=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "$lim" "$B/bench/gemm_bench" --kinds=decode \
    --only="$(list $rev)" --twin="$(list $rev)" --shapes="$SHAPES" --rounds="${ROUNDS:-5}" \
    > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
  echo "bench $p rc=$? $(( $(date +%s) - T ))s (limit $lim${rev:+, reversed})"; n=$p
done
grep -h "^VERIFY" "$OUT"/bench*.log 2>/dev/null | grep -v " ok " | cut -c1-200 | head -6
grep -hE "failed|error" "$OUT"/bench*.err 2>/dev/null | head -5
echo "VERIFY ok: $(grep -h '^VERIFY' "$OUT"/bench*.log 2>/dev/null | grep -c ' ok ') of $(grep -h '^VERIFY' "$OUT"/bench*.log 2>/dev/null | wc -l)"
python3 dev/decode/ks_table.py "$OUT" "$n" 2>&1 | cut -c1-200 > "$OUT/ab.txt"
cat "$OUT/ab.txt"
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err 2>/dev/null; rm -f ./*.err ./*.log)
