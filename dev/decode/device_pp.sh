#!/bin/bash
# GPU machine, one call (issue 32, eighteenth session): DC_GRID = 9, persistent pairs whose one cut
# tile is reduced on chip (a probe, refuted and reverted: it needs the tree of 21dffae, the slab
# ranges; d03d1c4, whole tiles), against each key's best shipped config and cuBLASLt's best at the
# 16-row keys; then the ten 64/128-row keys with the curated lists (the pick, its gate/up pair, the
# row-split pair DC_GRID = 7 in the pre-pass). Binaries from pb/ (dev/decode/stage.sh); logs under
# $OUT:
#   1. the copy rate; then at once: the GPU tests (TESTS), process 0 of the A/B and process 0 of the
#      full run (both compile their kernels; their times are not used);
#   2. PROCS gemm_bench processes, --only and --twin the A/B list (every config timed in the pick's
#      interleaved rounds with cuBLASLt's best and the weight read, read flush and rotation; the
#      list reversed in even processes), then dev/decode/pp_table.py;
#   3. FULL gemm_bench processes over the ten 64/128-row keys (--kinds=decode,tma, the curated
#      lists), gu_table.py, and the pre-pass's DC_GRID = 7 lines (plain and gate/up) at 65+ rows.
# LIST=2: the second call's list (the pairs' ranges in 64-row slabs on 128-row tiles; run with FULL=0).
#   OUT=$OUT DEADLINE=255 bash dev/decode/device_pp.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-255}"
d() { echo "DC_WG=2,DC_WARPS=$1,DC_NT=$2,DC_MT=2,DC_U=$3,DC_DEPTH=$4,DC_PF=1,DC_XR=$5,DC_GRID=$6"; }
X44=$(d 4 1 4 2 3 4)   # G4 W4 NT1 U4 D2 XR3: the best at 16x4096x4096 and 16x4096x14336
X62=$(d 4 2 2 2 3 4)   # G4 W4 NT2 U2 D2 XR3: at 16x6144x4096
G6=$(d 8 1 2 2 0 6)    # G6 W8 NT1 U2 D2: at 16x28672x4096
G6S=$(d 4 1 4 2 0 6)   # G6 W4 NT1 U4 D2: 64-row tiles, whole tiles per block (the pairs' tile)
P4=$(d 4 1 4 2 0 9); P2=$(d 4 1 2 4 0 9); P8=$(d 8 1 2 2 0 9)  # the pairs: 64-row tiles; 128-row
Q=$(d 4 2 2 2 0 9)     # the pairs on 128-row tiles of one warpgroup (the 6144 best's tile)
if [ "${LIST:-1}" = 2 ]; then  # the second call: the pairs' ranges in 64-row slabs on 128-row tiles
  KEYS_AB="16x28672x4096:$G6:$P8:$P4:$Q 16x14336x4096:$G6:$P8:$Q 16x6144x4096:$X62:$P8:$Q"
  SHAPES=16x28672x4096,16x14336x4096,16x6144x4096
fi
KEYS_AB=${KEYS_AB:-"16x28672x4096:$G6:$G6S:$P4:$P2:$P8 16x14336x4096:$G6:$X62:$P4:$P2:$P8
16x6144x4096:$X62:$P4:$P2:$P8 16x4096x4096:$X44:$P4:$P2 16x4096x14336:$X44:$P4:$P2"}
SHAPES=${SHAPES:-16x28672x4096,16x14336x4096,16x6144x4096,16x4096x4096,16x4096x14336}
TEN=64x4096x4096,64x6144x4096,64x14336x4096,64x4096x14336,64x28672x4096,128x4096x4096,128x6144x4096,128x14336x4096,128x4096x14336,128x28672x4096
fits 10 copy && timeout 12 python3 dev/copy_rate.py 2>&1 | tail -1
S=$(date +%s)
PIDS=()
[ "${TESTS:-}" != none ] && start_gpu_tests \
  "GemmGpu.DecodeTmaPersistentPairsVsReference;GemmGpu.DecodeTmaVsReference" "${TEST_S:-60}"
TPIDS=("${PIDS[@]}")
KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "${C0_S:-50}" "$B/bench/gemm_bench" --kinds=decode \
  --only="$(list)" --twin="$(list)" --shapes="$SHAPES" --rounds=1 > "$OUT/ab0.log" 2> "$OUT/ab0.err" &
C1=$!
C2=
if [ "${FULL:-3}" -gt 0 ]; then
  KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "${W0_S:-60}" "$B/bench/gemm_bench" --kinds=decode,tma \
    --shapes="$TEN" --rounds=1 > "$OUT/full0.log" 2> "$OUT/full0.err" &
  C2=$!
fi
wait_gpu_tests "$S" 24 220 "${TPIDS[@]}"
wait $C1; echo "ab 0 (compiles) rc=$? $(( $(date +%s) - S ))s; compile failures: $(grep -c 'compile failed' "$OUT/ab0.err")"
grep -m3 "compile failed" "$OUT/ab0.err" | cut -c1-300
[ -n "$C2" ] && { wait $C2; echo "full 0 (compiles) rc=$? $(( $(date +%s) - S ))s"; }
twin_procs 28
echo "VERIFY not ok: $(cat "$OUT"/bench*.log 2>/dev/null | grep '^VERIFY' | grep -vc ' ok ') of $(cat "$OUT"/bench*.log 2>/dev/null | grep -c '^VERIFY')"
python3 dev/decode/pp_table.py "$OUT" "$n" 2>&1 | cut -c1-300
mkdir -p /tmp/pp && cp "$OUT"/bench*.log "$OUT"/bench*.err /tmp/pp/ 2>/dev/null
(cd "$OUT" && tar czf ab_logs.tgz ./*.log ./*.err 2>/dev/null && rm -f ./bench*.log ./bench*.err ./ab0.* ./test*.log)
w=0
for p in $(seq 1 "${FULL:-3}"); do
  fits 20 "full $p" || break
  lim=${FULL_S:-30}; [ "$(left)" -lt "$lim" ] && lim=$(( $(left) - 4 ))
  S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "$lim" "$B/bench/gemm_bench" --kinds=decode,tma \
    --shapes="$TEN" --rounds="${FROUNDS:-3}" > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
  echo "full $p rc=$? $(( $(date +%s) - S ))s (limit $lim)"; w=$p
done
if [ "$w" -gt 0 ]; then
  echo "full VERIFY not ok: $(cat "$OUT"/bench*.log | grep '^VERIFY' | grep -vc ' ok ') of $(cat "$OUT"/bench*.log | grep -c '^VERIFY')"
  python3 dev/decode/gu_table.py "$OUT" "$w" 2>&1 | cut -c1-260
  echo "== the row-split pair (DC_GRID = 7) in the full processes' pre-pass (us), beside each key's fastest"
  for p in $(seq 1 "$w"); do
    python3 dev/decode/prepass_top.py 1 < "$OUT/bench$p.err" | grep -E "(^|_)128x" | cut -c1-200
    grep -hE "^cand \S*128x\S* \S+ decode .*DC_GRID=7" "$OUT/bench$p.err" | awk '{print "p'"$p"'", $0}' | cut -c1-220
  done
fi
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf full_logs.tgz ./*.log ./*.err 2>/dev/null; rm -f ./*.log ./*.err)
