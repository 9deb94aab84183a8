#!/bin/bash
# GPU machine, one call (issue 32): the one-slab gate/up pair's weights in one 3-D box per 64 rows
# (gemm::decodePairMap) against two 32-row boxes. Binaries from pb/ (stage.sh, then pb_stage.sh):
# bench/gemm_bench the tree, gemm_bench_o the decode files as before. Logs under $OUT:
#   1. the decode kind's GPU tests (TESTS: ';'-separated filters, run at once, TEST_S s) beside
#      process 0 of both binaries (the pinned configs: compiles them; not timed);
#   2. PINNED x 2 processes alternating gemm_bench_o, gemm_bench: one config per key (--only
#      X@key), so the pair and the plain GEMM run the same config in the same interleaved rounds
#      (PIN_S s each): the three decode-won keys (the pair staged, W4 NT1 U2 D2 XR3 G4) and a
#      tma-won control (64x6144x4096, BN128 C1 S8);
#   3. gs_table.py by binary.
# The logs move to /tmp/pb_logs after each phase and are packed into $OUT/logs.tgz (a call returns
# only a few files; a cut call keeps what was packed).
# SKIP_TESTS=1: the A/B alone (step 1 without the tests).
#   OUT=$OUT DEADLINE=150 bash dev/decode/device_pb.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-150}"
t() { echo "BLOCK_N=$1,CONSUMERS=$2,WG_M=1,NUM_STAGES=$3,GROUP_M=8,CLUSTER_M=1,EPI_TMA=$4,SPLIT_K=1,PINGPONG=0"; }
d() { echo "DC_WG=2,DC_WARPS=4,DC_NT=1,DC_MT=$1,DC_U=2,DC_DEPTH=2,DC_PF=1,DC_XR=3,DC_GRID=4"; }
PIN="$(d 8)@64x4096x4096;$(d 8)@64x4096x14336;$(d 16)@128x4096x4096;$(t 128 1 8 0)@64x6144x4096"
PSHAPES=64x4096x4096,64x4096x14336,128x4096x4096,64x6144x4096
bins=(gemm_bench_o gemm_bench)
L=/tmp/pb_logs; mkdir -p "$L"
pack() { mv "$OUT"/*.log "$OUT"/*.err "$L"/ 2>/dev/null; tar czf "$OUT/logs.tgz" -C "$L" . 2>/dev/null; }
S=$(date +%s)
TPIDS=()
[ -n "${SKIP_TESTS:-}" ] || start_gpu_tests "GemmGpu.DecodeTmaVsReference;GemmGpu.DecodeTmaPairVsReference:GemmGpu.DecodeTmaQuadVsReference;GemmGpu.DecodeTmaClusterEndVsReference;GemmGpu.DecodeFusedEpilogues:GemmGpu.DecodeOpTunesTheGateUpPair" "${TEST_S:-50}"
[ -n "${SKIP_TESTS:-}" ] || TPIDS=("${PIDS[@]}")
WPIDS=()
for bin in "${bins[@]}"; do
  KTUNE_CACHE_DIR=/tmp/kcache_$bin timeout "${C0_S:-40}" "$B/bench/$bin" --kinds=decode,tma --only="$PIN" \
    --shapes="$PSHAPES" --rounds=1 > "$OUT/w_$bin.log" 2> "$OUT/w_$bin.err" &
  WPIDS+=($!)
done
rcs=""
for q in "${TPIDS[@]}"; do wait "$q"; rcs="$rcs $?"; done
echo "tests rc:$rcs ($(( $(date +%s) - S ))s)"
grep -hE "^\[ *(FAILED|PASSED) |Failure|bad," "$OUT"/test*.log 2>/dev/null | cut -c1-240 | head -30
grep -hcE "^\[ +OK " "$OUT"/test*.log | tr '\n' ' '; echo "tests ok per group"
for q in "${WPIDS[@]}"; do wait "$q"; done  # not a bare wait: it would wait for the summary's tee
pack; echo "warm-up done $(( $(date +%s) - S ))s; compile failures: $(cat "$L"/w_*.err | grep -c 'compile failed')"
run_pinned 2 12 14 pack
echo "VERIFY not ok: $(cat "$L"/pin*.log 2>/dev/null | grep '^VERIFY' | grep -vc ' ok ') of $(cat "$L"/pin*.log 2>/dev/null | grep -c '^VERIFY')"
python3 dev/decode/gs_table.py "$L" "$np" "o: 2 x 32-row boxes" "n: 3-D pair box (tree)"
echo "call wall $(( $(date +%s) - T0 ))s"
pack
