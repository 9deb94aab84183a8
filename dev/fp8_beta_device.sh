#!/usr/bin/env bash
# GPU machine (carry .devwork/fp8, staged by `bash dev/fp8_beta_stage.sh DEST`): issue 34's cut of
# the tma kind's compile (HAS_BETA, one packing, EPI_TMA 0's predicated pair stores, the cold flush
# sites as one copy), this tree ("new"/"this") against main's build ("base") in ONE call:
#   1. compile on this host: the 4096^3 first wave's 15 configs (fp8_wave4096.cfg), all 15 started
#      at once as the tuner's wave (compile_split_bench --phase=full --at, NVRTC warmed up first,
#      its cache off), base and new alternately, CROUNDS rounds (2);
#   2. cold `ktune tune gemm --m 4096 --n 4096 --k 4096 --layout NT`, empty store, fresh
#      CUDA_CACHE_PATH, compile workers on, base/this alternating (this first in even pairs), GAP
#      (0.6) s between processes, PAIRS (4) pairs;
#   3. this build's GPU tests (GemmGpu.Tma* that check against references, GemmFp8Gpu's float64
#      check: alpha 1.5 without beta) capped at TEST_S (45), beside gemm_bench --compile_only of both
#      builds (each its own store, used by steps 4-5);
#   4. this build's gemm_bench at two shapes whose C has no tensor map (1000x1001x520: odd ldc,
#      single stores; 333x4100x1000: pairs), every ONLY config verified (VERIFY lines);
#   5. kernel time: gemm_bench processes base / new alternately at the four keys (the ONLY configs
#      in one process's interleaved rounds: --only + --twin, cuBLASLt #0 the peer, 3 rounds), pairs
#      while BUDGET (175) lasts, at most AB_MAX (5).
# Logs in $OUT/beta.tgz; tables last.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/beta; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s); BUDGET=${BUDGET:-175}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
at() { echo "$1 at $(( $(date +%s) - T0 )) s" | tee -a "$W/run.log"; }
pack() { tar -czf "$OUT/beta.tgz" -C "$W" --exclude='kc-*' --exclude='cc-*' --exclude='cs' . ; }
trap pack EXIT
export PATH="$PATH:/usr/local/cuda/bin"
[ -d pb ] || tar -xJf pb.tar.xz
export LD_LIBRARY_PATH="$PWD/pb/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu \
  --format=csv > "$W/gpu.txt" 2>&1; nproc >> "$W/gpu.txt"
# 1. the wave's compiles, all at once.
export CUDA_CACHE_DISABLE=1
for r in $(seq 1 "${CROUNDS:-2}"); do for v in base new; do
  a=$(( $(date +%s%3N) + 1500 )); mkdir -p "$W/cs"
  for i in $(seq 0 14); do
    pb/$v/bench/compile_split_bench --configs=fp8_wave4096.cfg --index=$i --phase=full --at=$a \
      --dir="$W/cs" --label="$v$r" > "$W/cs_${v}_${r}_$i.txt" 2>&1 &
  done
  wait
done; done
unset CUDA_CACHE_DISABLE
at "compile waves done"
# 2. cold 4096^3 walls.
source "$(dirname "$0")/cold_tune.sh"
tune() {  # build tag
  local t=pb/new/tools/ktune; [ "$1" = base ] && t=pb/base/tools/ktune
  COLD_LIMIT=40 cold_tune "$t" "$1" "$2"
}
# The call's first CUDA context pays ~0.7 s more (bench/NOTES.md): not on a timed run.
timeout 20 pb/new/tools/ktune info > "$W/info.txt" 2>&1
for i in $(seq 1 "${PAIRS:-4}"); do
  order="base this"; [ $(( i % 2 )) = 0 ] && order="this base"
  for b in $order; do tune "$b" "${b}_$i"; done
done
at "cold walls done"
# 3. tests beside the two stores' compiles.
C2='CONSUMERS=2,GROUP_M=16,NUM_STAGES=4'
ONLY="BLOCK_N=256,$C2,CLUSTER_M=1,WG_M=1,EPI_TMA=2,SPLIT_K=1,PINGPONG=0"
ONLY="$ONLY;BLOCK_N=256,$C2,CLUSTER_M=1,WG_M=1,EPI_TMA=2,SPLIT_K=2,PINGPONG=0"
ONLY="$ONLY;BLOCK_N=256,$C2,CLUSTER_M=1,WG_M=1,EPI_TMA=0,SPLIT_K=1,PINGPONG=0"
ONLY="$ONLY;BLOCK_N=192,$C2,CLUSTER_M=1,WG_M=2,EPI_TMA=1,SPLIT_K=1,PINGPONG=1"
ONLY="$ONLY;BLOCK_N=176,$C2,CLUSTER_M=1,WG_M=2,EPI_TMA=1,SPLIT_K=1,PINGPONG=1"
SHAPES=${SHAPES:-4096x4096x4096,4096x6144x4096,4096x28672x4096,4096x4096x14336}
for v in base new; do
  KTUNE_CACHE_DIR=$W/kc-$v timeout 60 pb/$v/bench/gemm_bench --kinds=tma --only="$ONLY" \
    --shapes="$SHAPES,1000x1001x520,333x4100x1000" --compile_only > "$W/warm_$v.txt" 2>&1 &
done
TEST_S=${TEST_S:-45}
KTUNE_CACHE_DIR=$W/kc-tests timeout -k 2 "$TEST_S" pb/new/bench/gemm_gpu_test \
  --gtest_filter='GemmGpu.TmaVsReference:GemmGpu.TmaGateUpPairVsReference:GemmGpu.TmaSplitTail*' \
  > "$W/tests.txt" 2>&1 &
KTUNE_CACHE_DIR=$W/kc-tests8 timeout -k 2 "$TEST_S" pb/new/bench/gemm_fp8_gpu_test \
  --gtest_filter='GemmFp8Gpu.JitKernelMatchesTheFloat64Reference' > "$W/tests_fp8.txt" 2>&1 &
wait
at "tests and store compiles done"
# 4. the no-tensor-map paths.
KTUNE_CACHE_DIR=$W/kc-new timeout 20 pb/new/bench/gemm_bench --kinds=tma --only="$ONLY" \
  --shapes=1000x1001x520,333x4100x1000 --rounds=1 > "$W/verify.txt" 2> "$W/verify.err"
at "verify rc=$?"
# 5. kernel time, base / new alternately.
for p in $(seq 1 "${AB_MAX:-5}"); do
  for b in base new; do
    [ "$(left)" -gt 25 ] || break 2
    KTUNE_CACHE_DIR=$W/kc-$b timeout "$(( $(left) - 3 ))" pb/$b/bench/gemm_bench --kinds=tma \
      --only="$ONLY" --twin="$ONLY" --rounds=3 --shapes="$SHAPES" > "$W/ab_${b}_$p.txt" 2>> "$W/ab.err"
    at "ab $b $p rc=$?"
  done
done
pack
cat "$W/gpu.txt"
python3 fp8_beta_table.py "$W"
python3 early_wave_table.py "$W" 2>&1 | tail -14
grep -h "^VERIFY" "$W/verify.txt"
grep -hE "^\[ +(PASSED|FAILED|OK) |Failure" "$W/tests.txt" "$W/tests_fp8.txt" | head -12
python3 fp8_issue34_table.py "$ONLY" "$W"/ab_*.txt
echo "total $(( $(date +%s) - T0 )) s"
