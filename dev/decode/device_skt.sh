#!/bin/bash
# GPU machine, one call (issue 32, sixteenth session): two probe knobs at the suite's wide 16-row
# keys -- DC_AL2P (A's tensor map's L2 promotion, 256 by default; 128 / 0) and DC_SKT = 1 (the
# persistent grid's partial last wave split over every block in k steps) -- and the 64- and
# 128-row keys of issue 32's N x K list with the weight maps at 128-byte promotion. Binaries from pb/
# (dev/decode/stage.sh); logs under $OUT:
#   1. the copy rate; then at once: the GPU tests (TESTS), process 0 of the A/B and process 0 of the
#      wide run (both compile their kernels; their times are not used);
#   2. PROCS gemm_bench processes, --only and --twin the A/B list (each probe variant beside its base
#      config in the pick's interleaved rounds with cuBLASLt's best; the list reversed in even
#      processes), then dev/decode/l2p_table.py (X/base per process);
#   3. WIDE_PROCS gemm_bench processes over the 64/128-row keys (--kinds=decode,tma, the curated
#      lists; silu_mul/ktune: the decode pick's gate/up over the same weights), while the deadline
#      allows.
#   OUT=$OUT DEADLINE=330 bash dev/decode/device_skt.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-330}"
d() { echo "DC_WG=2,DC_WARPS=$1,DC_NT=$2,DC_MT=2,DC_U=$3,DC_DEPTH=$4,DC_PF=1,DC_XR=$5,DC_GRID=$6"; }
G6=$(d 8 1 2 2 0 6)       # G6 W8 NT1 U2 D2: the fastest JIT config at 16x28672x4096
G6B=$(d 8 2 1 3 0 6)      # G6 W8 NT2 U1 D3: 256-row tiles (112 of them: DC_SKT splits them all)
XB=$(d 4 2 2 2 3 4)       # G4 W4 NT2 U2 D2 XR3: at 16x6144x4096
XC=$(d 4 1 4 2 3 4)       # G4 W4 NT1 U4 D2 XR3: at 16x4096x14336
A1=",DC_AL2P=128"; A0=",DC_AL2P=0"; T=",DC_SKT=1"
KEYS_AB="16x28672x4096:$G6:$G6$T:$G6$A1:$G6$A0:$G6B:$G6B$T 16x6144x4096:$XB:$XB$A1:$XB$A0:$G6$T
16x4096x14336:$XC:$XC$A1:$XC$A0:$G6$T"
SHAPES=16x28672x4096,16x6144x4096,16x4096x14336
WIDE=${WIDE:-64x4096x4096,64x6144x4096,64x14336x4096,64x4096x14336,64x28672x4096,128x4096x4096,128x6144x4096,128x14336x4096,128x4096x14336,128x28672x4096}
fits 10 copy && timeout 12 python3 dev/copy_rate.py 2>&1 | tail -1
S=$(date +%s)
PIDS=()
[ "${TESTS:-}" != none ] && start_gpu_tests \
  "GemmGpu.DecodeTmaVsReference;GemmGpu.DecodeTmaTailSplitVsReference;GemmGpu.DecodeVsReference" "${TEST_S:-100}"
TPIDS=("${PIDS[@]}")
KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "${C0_S:-70}" "$B/bench/gemm_bench" --kinds=decode \
  --only="$(list)" --twin="$(list)" --shapes="$SHAPES" --rounds=3 > "$OUT/ab0.log" 2> "$OUT/ab0.err" &
C1=$!
KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "${W0_S:-110}" "$B/bench/gemm_bench" --kinds=decode,tma \
  --shapes="$WIDE" --rounds=3 > "$OUT/wide0.log" 2> "$OUT/wide0.err" &
C2=$!
wait_gpu_tests "$S" 24 220 "${TPIDS[@]}"
wait $C1; echo "ab 0 (compiles) rc=$? $(( $(date +%s) - S ))s"
wait $C2; echo "wide 0 (compiles) rc=$? $(( $(date +%s) - S ))s"
twin_procs 25
w=0
for p in $(seq 1 "${WIDE_PROCS:-2}"); do
  fits 20 "wide $p" || break
  lim=${WIDE_S:-60}; [ "$(left)" -lt "$lim" ] && lim=$(( $(left) - 4 ))
  S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "$lim" "$B/bench/gemm_bench" --kinds=decode,tma \
    --shapes="$WIDE" --rounds=3 > "$OUT/wide$p.log" 2> "$OUT/wide$p.err"
  echo "wide $p rc=$? $(( $(date +%s) - S ))s (limit $lim)"; w=$p
done
grep -h "^VERIFY" "$OUT"/bench*.log "$OUT"/wide*.log 2>/dev/null | grep -v " ok " | head -10
echo "VERIFY ok: $(cat "$OUT"/bench*.log "$OUT"/wide*.log 2>/dev/null | grep '^VERIFY' | grep -c ' ok ') of $(cat "$OUT"/bench*.log "$OUT"/wide*.log 2>/dev/null | grep -c '^VERIFY')"
python3 dev/decode/l2p_table.py "$OUT" "$n" 2>&1 | cut -c1-260
print_bench_tables "$n" 220 | grep -v "^  ktune" | head -24
for p in $(seq 1 "$w"); do
  echo "== wide $p"
  if grep -q "interleaved rounds" "$OUT/wide$p.log"; then sed -n '/interleaved rounds/,$p' "$OUT/wide$p.log" | cut -c1-240
  else grep -E "^RATIO|^RESULT" "$OUT/wide$p.log" | cut -c1-200; fi
done
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err 2>/dev/null && rm -f ./*.err ./*.log)
