#!/bin/bash
# GPU machine, one call (issue 32, seventeenth session): the gate/up pair's epilogue share and its
# SiLU's form, and the decode kind's pair staged (DC_XR 1 / 3). Binaries from pb/ (stage.sh, then
# gs_stage.sh): bench/gemm_bench is the tree (KT_GU_FORM 1: tanh.approx for bf16 C),
# gemm_bench_e the same with KT_GU_FORM 0 (ex2 + rcp), gemm_bench_i with 2 (g + u: the probe, no
# SiLU; wrong outputs, which gemm_bench does not verify for the pair). Logs under $OUT:
#   1. the GPU tests of the changed kernels (TESTS: ';'-separated filters, TEST_S s) beside
#      gemm_bench process 0 of the tree (the curated lists over the ten keys: it compiles them;
#      its times are not used; C0_S s);
#   2. PINNED x 3 processes cycling gemm_bench_e, gemm_bench, gemm_bench_i: one config per key
#      (--only X@key), so the pair and the plain GEMM run the same config in the same interleaved
#      rounds (PIN_S s each);
#   3. FULL processes of the tree over the ten keys, the curated lists (the issue's pair / plain
#      pick; FULL_S s each);
#   4. gs_table.py (the pinned processes by binary) and gu_table.py (the full ones).
#   OUT=$OUT DEADLINE=290 bash dev/decode/device_gs.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-290}"
TEN=64x4096x4096,64x6144x4096,64x14336x4096,64x4096x14336,64x28672x4096,128x4096x4096,128x6144x4096,128x14336x4096,128x4096x14336,128x28672x4096
t() { echo "BLOCK_N=$1,CONSUMERS=$2,WG_M=1,NUM_STAGES=$3,GROUP_M=8,CLUSTER_M=1,EPI_TMA=$4,SPLIT_K=1,PINGPONG=0"; }
d() { echo "DC_WG=2,DC_WARPS=4,DC_NT=1,DC_MT=$1,DC_U=2,DC_DEPTH=2,DC_PF=1,DC_XR=3,DC_GRID=4"; }
TB0=$(t 128 1 8 0); TW1=$(t 256 2 4 1)
PIN="$(d 8)@64x4096x4096;$TB0@64x6144x4096;$(d 8)@64x4096x14336;$TB0@64x28672x4096"
PIN="$PIN;$(d 16)@128x4096x4096;$TB0@128x6144x4096;$(d 16)@128x4096x14336;$TW1@128x28672x4096"
PSHAPES=64x4096x4096,64x6144x4096,64x4096x14336,64x28672x4096,128x4096x4096,128x6144x4096,128x4096x14336,128x28672x4096
S=$(date +%s)
start_gpu_tests "${TESTS_DEFAULT:-GemmGpu.TmaGateUpPairVsReference;GemmGpu.DecodeTmaClusterEndVsReference;GemmGpu.DecodeTmaVsReference;GemmGpu.DecodeTmaPairVsReference:GemmGpu.DecodeTmaQuadVsReference;GemmGpu.DecodeVsReference:GemmGpu.DecodeFusedEpilogues:GemmGpu.DecodeWgmmaVsReference:GemmGpu.DecodeFmaVsReference;GemmGpu.DecodeTmaCpAsyncAVsReference:GemmGpu.DecodeOpTunesTheGateUpPair}" "${TEST_S:-80}"
TPIDS=("${PIDS[@]}")
KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "${C0_S:-60}" "$B/bench/gemm_bench" --kinds=decode,tma \
  --shapes="$TEN" --rounds=3 > "$OUT/full0.log" 2> "$OUT/full0.err" &
C0=$!
wait_gpu_tests "$S" 30 240 "${TPIDS[@]}"
wait $C0; echo "full 0 (compiles) rc=$? $(( $(date +%s) - S ))s; compile failures: $(grep -c 'compile failed' "$OUT/full0.err")"
grep -m3 "compile failed" "$OUT/full0.err" | cut -c1-300
bins=(gemm_bench_e gemm_bench gemm_bench_i)
run_pinned 3 16 22
n=0
for p in $(seq 1 "${FULL:-3}"); do
  fits 24 "full $p" || break
  lim=${FULL_S:-32}; [ "$(left)" -lt "$lim" ] && lim=$(( $(left) - 3 ))
  S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "$lim" "$B/bench/gemm_bench" --kinds=decode,tma \
    --shapes="$TEN" --rounds="${ROUNDS:-5}" > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
  echo "full $p rc=$? $(( $(date +%s) - S ))s (limit $lim)"; n=$p
done
echo "VERIFY not ok: $(cat "$OUT"/pin*.log "$OUT"/bench*.log 2>/dev/null | grep '^VERIFY' | grep -vc ' ok ') of $(cat "$OUT"/pin*.log "$OUT"/bench*.log 2>/dev/null | grep -c '^VERIFY')"
python3 dev/decode/gs_table.py "$OUT" "$np"
python3 dev/decode/gu_table.py "$OUT" "$n"
echo "== full process 1 pre-pass: the 6 fastest per shape, mode and variant (us)"
python3 dev/decode/prepass_top.py 6 < "$OUT/bench1.err" 2>/dev/null | cut -c1-700
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err 2>/dev/null && rm -f ./*.err ./*.log)
