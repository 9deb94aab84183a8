#!/bin/bash
# GPU machine, one call (issue 32, nineteenth session): the first ring's L2 prefetch (the tree: every
# stage of the block's first tile the ring holds, prefetched before the programmatic-launch wait)
# against the tree before it (pb/bench/gemm_bench_base: the first stage only) and no prefetch
# (gemm_bench_nopf), at the 16-row keys and at 1/64/128 x 4096x4096. Binaries from pb/
# (dev/decode/stage.sh, dev/decode/variant_stage.sh for _base and _nopf, trace_stage.sh for the
# traced tree and base); logs under $OUT:
#   1. the GemmGpu.Decode* tests in TPROCS parallel processes (TESTS: ';'-separated filters)
#      beside one compiling gemm_bench process per binary (their times not used);
#   2. the per-phase trace of TRACE_ONLY with each binary of TRACE_BINS (trace_table.py);
#   3. PROCS rounds of processes cycling BINS (--only and --twin the same list, reversed in even
#      rounds: every config in the pick's interleaved rounds beside cuBLASLt's best and the read),
#      then dev/decode/ab_table.py.
#   OUT=$OUT DEADLINE=170 bash dev/decode/device_ring_pf.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-170}"
F1="DC_WG=3,DC_WARPS=8,DC_NT=1,DC_MT=1,DC_U=2,DC_DEPTH=2,DC_PF=0,DC_XR=1,DC_GRID=2"  # M = 1: the FMA body
KEYS_AB=${KEYS_AB:-"16x4096x4096:$(d 2 4 1 4 2 3 4):$(d 2 4 1 2 5 3 4)
16x6144x4096:$(d 2 4 2 2 2 3 4)
16x14336x4096:$(d 2 8 1 2 2 0 6):$(d 2 8 1 4 1 0 6):$(d 2 8 2 1 2 3 4)
16x4096x14336:$(d 2 4 1 4 2 3 4)
16x28672x4096:$(d 2 8 1 2 2 0 6):$(d 2 8 1 4 1 0 6)
1x4096x4096:$F1:$(d 1 4 1 4 2 0 4)
64x4096x4096:$(d 8 4 1 2 3 0 4):$(d 8 4 1 2 2 3 4)
128x4096x4096:$(d 16 4 1 2 2 3 4):$(d 16 4 1 2 2 1 4)"}
SHAPES=${SHAPES:-16x4096x4096,16x6144x4096,16x14336x4096,16x4096x14336,16x28672x4096,1x4096x4096,64x4096x4096,128x4096x4096}
BINS=${BINS:-"gemm_bench gemm_bench_base gemm_bench_nopf"}
S0=$(date +%s)
PIDS=()
[ "${TESTS:-}" != none ] && start_gpu_tests "${TESTS:-GemmGpu.DecodeVsReference;GemmGpu.DecodeTmaVsReference;\
GemmGpu.DecodeTmaPair*:GemmGpu.DecodeTmaQuad*:GemmGpu.DecodeTmaClusterEnd*;\
GemmGpu.DecodeFused*:GemmGpu.DecodeWgmma*:GemmGpu.DecodeTmaCpAsyncA*:GemmGpu.DecodeFma*:GemmGpu.DecodeOpTunes*}" "${TEST_S:-70}"
TPIDS=("${PIDS[@]}")
CP=()
for bin in $BINS; do  # each binary compiles the list into its own kernel cache
  KTUNE_CACHE_DIR=/tmp/kcache_$bin timeout "${C0_S:-60}" "$B/bench/$bin" --kinds=decode \
    --only="$(list)" --twin="$(list)" --shapes="$SHAPES" --rounds=1 > "$OUT/c0_$bin.log" 2> "$OUT/c0_$bin.err" &
  CP+=($!)
done
[ "${#TPIDS[@]}" -gt 0 ] && wait_gpu_tests "$S0" "${GT_LINES:-30}" 220 "${TPIDS[@]}"
for q in "${CP[@]}"; do wait "$q"; done
echo "compiles done $(( $(date +%s) - S0 ))s; compile failures: $(cat "$OUT"/c0_*.err | grep -c 'compile failed')"
TRACE_ONLY=${TRACE_ONLY:-"$(d 2 4 2 2 2 3 4)@16x6144x4096;$(d 2 8 1 2 2 0 6)@16x14336x4096;$(d 2 8 1 2 2 0 6)@16x28672x4096"}
for tb in ${TRACE_BINS:-gemm_bench_trace gemm_bench_trace_base}; do
  fits 40 "trace $tb" || break
  T=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_$tb timeout "${TRACE_S:-25}" "$B/bench/$tb" --kinds=decode --trace="${TRACE_N:-4}" \
    --only="$TRACE_ONLY" --shapes=16x6144x4096,16x14336x4096,16x28672x4096 > "$OUT/trace_$tb.log" 2> "$OUT/trace_$tb.err"
  echo "trace $tb rc=$? $(( $(date +%s) - T ))s"
  python3 dev/decode/trace_table.py < "$OUT/trace_$tb.log" | cut -c1-300
done
n=0
for p in $(seq 1 "${PROCS:-3}"); do
  rev=""; [ $((p % 2)) = 0 ] && rev=rev
  for bin in $BINS; do
    fits 12 "bench $p $bin" || break 2
    lim=${BENCH_S:-20}; [ "$(left)" -lt "$lim" ] && lim=$(( $(left) - 3 ))
    T=$(date +%s)
    KTUNE_CACHE_DIR=/tmp/kcache_$bin timeout "$lim" "$B/bench/$bin" --kinds=decode --only="$(list $rev)" \
      --twin="$(list $rev)" --shapes="$SHAPES" --rounds="${ROUNDS:-5}" > "$OUT/bench_${bin}_$p.log" 2> "$OUT/bench_${bin}_$p.err"
    echo "bench $p $bin rc=$? $(( $(date +%s) - T ))s (limit $lim${rev:+, reversed})"
  done
  n=$p
done
echo "VERIFY not ok: $(cat "$OUT"/bench_*.log 2>/dev/null | grep '^VERIFY' | grep -vc ' ok ') of $(cat "$OUT"/bench_*.log 2>/dev/null | grep -c '^VERIFY')"
python3 dev/decode/ab_table.py "$OUT" "$n" $BINS 2>&1 | cut -c1-300
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err 2>/dev/null && rm -f ./*.err ./*.log)  # the machine returns 8 files
