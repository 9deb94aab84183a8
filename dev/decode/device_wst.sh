#!/bin/bash
# GPU machine, one call (issue 32, twenty-fourth session): DC_ST (the start path cut: tensor maps at
# entry, no first-stage line prefetches, the producer's first stages issued before the block barrier)
# at 32..128 rows against today's picks, DC_XH at 32 rows, the weight maps' L2 promotion (DC_L2P 256, 0)
# at 64/128 x 4096x4096 (ALL=1). TRACE=1: first the per-phase trace (pb/bench/gemm_bench_trace, DC_TRACE 1:
# first box, first / last stage landed, the end) of the 128x4096x4096 pick with and without DC_ST. Then
# the kernels (one --compile_only process per key at once), PROCS gemm_bench processes, every key's configs as
# --only/--twin in the same interleaved rounds (flush and rotation, the read bound and cuBLASLt's best),
# every even process reversed (knob_ab, common.sh); cw_table.py: X/ref (ref: the key's first config, the
# pick), read/X and cuBLASLt best/X per process; last, while time is left, the GPU tests of DC_ST / DC_XH.
#   OUT=$OUT DEADLINE=180 bash dev/decode/device_wst.sh      (PROCS, default 4; AB_S, default 45; TESTS=none)
#   OUT=$OUT DEADLINE=120 SET=xh PROCS=6 AB_S=25 TESTS=GemmGpu.DecodeTmaWideHandOverVsReference bash dev/decode/device_wst.sh
#   OUT=$OUT DEADLINE=200 SET=dk AB_S=25 TESTS="GemmGpu.DecodeTmaDynamicKSplitVsReference;GemmGpu.DecodeVsReference" bash dev/decode/device_wst.sh
# (SET=wide / both, the 192-row tiles at N = 6144, ran in the twenty-fifth session and were refuted: gone.)
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-170}"
d() {  # MT WARPS NT U DEPTH XR GRID [PF]
  echo "DC_WG=2,DC_WARPS=$2,DC_NT=$3,DC_MT=$1,DC_U=$4,DC_DEPTH=$5,DC_PF=${8:-1},DC_XR=$6,DC_GRID=$7"
}
S="DC_ST=1"
C3="$(d 16 8 1 2 2 3 4),DC_CW=2"; C1="$(d 16 8 1 2 2 1 4),DC_CW=2"; PP="$C3,DC_PP=1"
P64=$(d 8 4 1 2 2 3 4); P64X1=$(d 8 4 1 2 2 1 4); Q64=$(d 8 4 1 2 3 3 4); E64=$(d 8 8 2 1 2 3 5)
P32=$(d 4 4 1 2 2 0 4); P32U4=$(d 4 4 1 4 1 0 4)
# The default list: three keys (the first call's nine, ALL=1, lost every round: its processes were cut
# inside their pre-passes, which all run before the first round; a one-key process with its compiles took
# 3.2 s in the third call); DEADLINE bounds the call.
KEYS_AB=${KEYS_AB:-"128x4096x4096:$C3:$C3,$S
64x4096x4096:$P64X1:$P64X1,$S
32x4096x4096:$P32:$P32,DC_XH=1"}
# SET=xh: DC_XH from 64 rows (the hand-over into the gate/up region, no cluster barrier after the main
# loop), with and without DC_ST, against the 64/128-row picks and their DC_ST twins.
[ "${SET:-}" = xh ] && KEYS_AB="128x4096x4096:$C3:$C3,$S:$C3,DC_XH=1:$C3,DC_XH=1,$S
128x4096x14336:$C3:$C3,$S:$C3,DC_XH=1:$C3,DC_XH=1,$S
64x4096x4096:$P64X1:$P64:$P64,$S:$P64,DC_XH=1:$P64,DC_XH=1,$S
64x4096x14336:$P64:$P64,$S:$P64X1,$S:$P64,DC_XH=1:$P64,DC_XH=1,$S"
# SET=ef: the weight boxes evict-first in L2 (DC_EF 1, the 1..16-row twins' knob) on the 64/128-row DC_ST twins
# (A's boxes, re-read from L2 by every tile, are two thirds of a 128-row stage's bytes).
[ "${SET:-}" = ef ] && KEYS_AB="128x4096x4096:$C3,$S:$C3,$S,DC_EF=1:$C3:$C3,DC_EF=1
128x4096x14336:$C3,$S:$C3,$S,DC_EF=1
64x4096x4096:$P64,$S:$P64,$S,DC_EF=1
64x4096x14336:$P64,$S:$P64,$S,DC_EF=1"
# SET=dk and SET=skew (twenty-sixth session) measured two probe knobs that were refuted and reverted: run them on
# 95e4c8a's tree (DC_DK) and 0de7a08's (DC_SKEW, DC_DK too).
# SET=dk: DC_DK 1 (the cluster K split's k steps taken from a counter in the cluster
# as the rings free up, so the blocks' loops end together) on the cluster-split picks and twins, 16..128 rows.
P16=$(d 2 4 1 4 2 3 4); Q16=$(d 2 4 2 2 2 3 4); K="DC_DK=1"
[ "${SET:-}" = dk ] && TRACE_ONLY=${TRACE_ONLY:-"$C3,$S@128x4096x4096;$C3,$S,$K@128x4096x4096;$P64,$S@64x4096x4096;$P64,$S,$K@64x4096x4096"}
[ "${SET:-}" = dk ] && KEYS_AB="128x4096x4096:$C3,$S:$C3,$S,$K:$C3:$C3,$K
64x4096x4096:$P64,$S:$P64,$S,$K:$P64:$P64,$K
128x4096x14336:$C3,$S:$C3,$S,$K
64x4096x14336:$P64:$P64,$K:$P64,$S,$K
32x4096x4096:$P32,DC_XH=1:$P32:$P32,$K
16x4096x4096:$P16:$P16,$K
16x6144x4096:$Q16,DC_XH=1,$S,DC_EF=1:$Q16:$Q16,$K:$Q16,$K,$S,DC_EF=1
64x6144x4096:$E64:$E64,$K
128x6144x4096:$C3:$C3,$K"
# SET=skew: DC_SKEW (with DC_XH from 64 rows: block 0 of the pair takes d more k steps, block 1 hands all
# its sums over while block 0 streams its last stages) against the 64/128-row DC_ST twins and DC_XH.
X="DC_XH=1"
[ "${SET:-}" = skew ] && TRACE_ONLY=${TRACE_ONLY:-"$C3,$S@128x4096x4096;$C3,$X,$S,DC_SKEW=2@128x4096x4096;$C3,$X,$S,DC_SKEW=4@128x4096x4096"} \
  && TRACE_SHAPES=${TRACE_SHAPES:-128x4096x4096}
[ "${SET:-}" = skew ] && KEYS_AB="128x4096x4096:$C3,$S:$C3,$X,$S:$C3,$X,$S,DC_SKEW=1:$C3,$X,$S,DC_SKEW=2:$C3,$X,$S,DC_SKEW=4
64x4096x4096:$P64,$S:$P64,$X,$S:$P64,$X,$S,DC_SKEW=2:$P64,$X,$S,DC_SKEW=4
128x4096x14336:$C3,$S:$C3,$X,$S:$C3,$X,$S,DC_SKEW=2:$C3,$X,$S,DC_SKEW=4
64x4096x14336:$P64:$P64,$X,$S:$P64,$X,$S,DC_SKEW=2:$P64,$X,$S,DC_SKEW=4"
[ "${ALL:-0}" = 1 ] && KEYS_AB="128x4096x4096:$C3:$C3,$S:$C1:$C1,$S:$C3,DC_L2P=256:$C3,DC_L2P=0
128x4096x14336:$C3:$C3,$S
128x6144x4096:$PP:$PP,$S
64x4096x4096:$P64X1:$P64X1,$S:$P64:$P64,$S:$P64X1,DC_L2P=256
64x4096x14336:$P64X1:$P64X1,$S:$Q64:$Q64,$S
64x6144x4096:$E64:$E64,$S
32x4096x4096:$P32:$P32,$S:$P32,DC_XH=1:$P32,DC_XH=1,$S
32x4096x14336:$P32:$P32,$S:$P32,DC_XH=1:$P32,DC_XH=1,$S
32x6144x4096:$P32:$P32,$S:$P32U4:$P32U4,$S"
echo "$KEYS_AB" > "$OUT/keys.txt"
SHAPES=$(echo "$KEYS_AB" | cut -d: -f1 | paste -sd,)
if [ "${TRACE:-0}" = 1 ] && [ -x "$B/bench/gemm_bench_trace" ] && fits 90 trace; then
  T=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_trace timeout "${TRACE_S:-30}" "$B/bench/gemm_bench_trace" --kinds=decode --trace=5 \
    --only="${TRACE_ONLY:-$C3@128x4096x4096;$C3,$S@128x4096x4096;$P64X1@64x4096x4096;$P64X1,$S@64x4096x4096}" \
    --shapes="${TRACE_SHAPES:-64x4096x4096,128x4096x4096}" > "$OUT/trace.log" 2> "$OUT/trace.err"
  echo "trace rc=$? $(( $(date +%s) - T ))s, $(grep -c '^DCT' "$OUT/trace.log") lines"
  python3 dev/decode/trace_table.py < "$OUT/trace.log" 2>&1 | cut -c1-280 | tee "$OUT/trace.txt"
  gzip -f "$OUT/trace.log"
fi
# The kernels first: one gemm_bench --compile_only process per key at once (the first call lost its
# A/B to compiles beside the GPU test), into the A/B's kernel cache.
# (Their pids waited for: a bare `wait` would also wait for the preamble's tee.)
T=$(date +%s); CP=()
for key in $KEYS_AB; do
  sh=${key%%:*}; one=$(KEYS_AB=$key list)
  KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "${COMPILE_S:-45}" "$B/bench/gemm_bench" --kinds=decode --compile_only \
    --only="$one" --twin="$one" --shapes="$sh" > "$OUT/compile_$sh.log" 2>&1 &
  CP+=($!)
done
for q in "${CP[@]}"; do wait "$q"; done
echo "compiles $(( $(date +%s) - T ))s"
TESTS=none C0_S=${C0_S:-1} knob_ab "" 0 1 14 "${AB_S:-45}"
python3 dev/decode/cw_table.py "$OUT" "$n" "$OUT/keys.txt" 2>&1 | cut -c1-260 > "$OUT/ab.txt"
cat "$OUT/ab.txt"
# The GPU test last (its own kernel cache; ~60-90 s of compiles on the 16-core host), while time is left.
if [ "${TESTS:-}" != none ] && fits 40 test; then
  lim=$(( $(left) - 5 )); [ "$lim" -gt "${TEST_S:-120}" ] && lim=${TEST_S:-120}
  TEST_S=$lim gpu_tests "${TESTS:-GemmGpu.DecodeTmaWideStartVsReference;GemmGpu.DecodeTmaFewRowKnobsVsReference}" "$lim"
fi
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err ./*.gz 2>/dev/null; rm -f ./*.err ./*.log ./*.gz)
