#!/usr/bin/env bash
# GPU machine (carry .devwork/fp8, staged by dev/fp8_margin_stage.sh): issue 34's second cut of the
# tma kind's compile (one flush_piece_at site per place, the extra pass for the last tile's pieces,
# box_to_global not inlined, store_slab's row pointers) in ONE short call:
#   1. cold `ktune tune gemm --m 4096 --n 4096 --k 4096 --layout NT`, empty store, fresh
#      CUDA_CACHE_PATH, compile workers on: main's build ("base") against this tree's ("this"),
#      alternating (this first in odd pairs), GAP (0.6) s between processes, PAIRS (3) pairs;
#   2. GemmFp8Gpu.JitKernelMatchesTheFloat64Reference (this build) in the background until the
#      budget's end, beside: both A/B builds' stores compiled (gemm_bench --compile_only), this
#      build's gemm_bench at three shapes where C has no tensor map or a unit is shorter than the
#      pieces (VERIFY lines against cuBLASLt);
#   3. kernel time: gemm_bench processes, the branch before this round ("base": HEAD_BENCH) and this
#      build ("new") alternately, new first in odd pairs, the ONLY configs beside a twin of each and
#      cuBLASLt in one process's interleaved rounds, pairs while the budget lasts (AB_MAX 4).
# Logs in $OUT/margin.tgz; tables last. BUDGET (44) s for the whole command.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/margin; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s); BUDGET=${BUDGET:-44}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
at() { echo "$1 at $(( $(date +%s) - T0 )) s" | tee -a "$W/run.log"; }
pack() { tar -czf "$OUT/margin.tgz" -C "$W" --exclude='kc-*' --exclude='cc-*' . ; }
trap pack EXIT
[ -d pb ] || tar -xJf pb.tar.xz
export LD_LIBRARY_PATH="$PWD/pb/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu \
  --format=csv > "$W/gpu.txt" 2>&1; nproc >> "$W/gpu.txt"
source "$(dirname "$0")/cold_tune.sh"
tune() {  # build tag
  local t=pb/new/tools/ktune; [ "$1" = base ] && t=pb/main/tools/ktune
  cold_tune "$t" "$1" "$2"
}
timeout 20 pb/new/tools/ktune info > "$W/info.txt" 2>&1  # the call's first context: not timed
for i in $(seq 1 "${PAIRS:-3}"); do
  order="this base"; [ $(( i % 2 )) = 0 ] && order="base this"
  for b in $order; do tune "$b" "${b}_$i"; done
done
at "cold walls done"
C2='CONSUMERS=2,GROUP_M=16,NUM_STAGES=4,CLUSTER_M=1'
ONLY="BLOCK_N=256,$C2,WG_M=1,EPI_TMA=2,SPLIT_K=1,PINGPONG=0"
ONLY="$ONLY;BLOCK_N=256,$C2,WG_M=1,EPI_TMA=0,SPLIT_K=1,PINGPONG=0"
ONLY="$ONLY;BLOCK_N=256,$C2,WG_M=1,EPI_TMA=1,SPLIT_K=1,PINGPONG=0"
ONLY="$ONLY;BLOCK_N=176,$C2,WG_M=2,EPI_TMA=1,SPLIT_K=1,PINGPONG=1"
SHAPES=${SHAPES:-4096x4096x4096,4096x6144x4096}
ODD=1000x1001x520,1000x1001x128,333x4100x1000
KTUNE_CACHE_DIR=$W/kc-fp8 timeout -k 1 "$(( $(left) - 1 ))" pb/new/bench/gemm_fp8_gpu_test \
  --gtest_filter='GemmFp8Gpu.JitKernelMatchesTheFloat64Reference' > "$W/tests_fp8.txt" 2>&1 &
FP8=$!
KTUNE_CACHE_DIR=$W/kc-new timeout 20 pb/new/bench/gemm_bench --kinds=tma --only="$ONLY" \
  --shapes="$SHAPES,$ODD" --compile_only > "$W/warm_new.txt" 2>&1 &
P1=$!
KTUNE_CACHE_DIR=$W/kc-base timeout 20 pb/head/bench/gemm_bench --kinds=tma --only="$ONLY" \
  --shapes="$SHAPES" --compile_only > "$W/warm_base.txt" 2>&1 &
wait $! "$P1"
at "store compiles done"
KTUNE_CACHE_DIR=$W/kc-new timeout 12 pb/new/bench/gemm_bench --kinds=tma --only="$ONLY" \
  --shapes="$ODD" --rounds=1 > "$W/verify.txt" 2> "$W/verify.err"
at "verify rc=$?"
for p in $(seq 1 "${AB_MAX:-4}"); do
  order="new base"; [ $(( p % 2 )) = 0 ] && order="base new"
  for b in $order; do
    [ "$(left)" -gt 5 ] || break 2
    g=pb/new/bench/gemm_bench; [ $b = base ] && g=pb/head/bench/gemm_bench
    KTUNE_CACHE_DIR=$W/kc-$b timeout "$(( $(left) - 2 ))" $g --kinds=tma --only="$ONLY" \
      --twin="$ONLY" --rounds=3 --shapes="$SHAPES" > "$W/ab_${b}_$p.txt" 2>> "$W/ab.err"
    at "ab $b $p rc=$?"
  done
done
wait "$FP8"; at "fp8 test rc=$?"
pack
cat "$W/gpu.txt"
python3 early_wave_table.py "$W" 2>&1 | tail -9
grep -h "^VERIFY" "$W/verify.txt" | awk '{print $3, $5}' | sort | uniq -c
grep -hE "^\[ +(PASSED|FAILED|OK) |Failure|worst" "$W/tests_fp8.txt" | head -20
python3 fp8_beta_norm.py "$ONLY" "$W"/ab_*.txt
echo "total $(( $(date +%s) - T0 )) s"
