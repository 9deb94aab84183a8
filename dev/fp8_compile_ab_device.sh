#!/usr/bin/env bash
# GPU machine (carry .devwork/fp8, staged by `bash dev/fp8_compile_stage.sh BASE_BENCH DEST`):
# issue 34's rolled direct-store fallback of the tma kind (tma_epilogue.cuh's store_slab_rolled),
# base build against this one, in one call:
#   1. the SASS of the carried cubins (base and new, the curated 128x256 and ping-pong configs),
#      cuobjdump -sass, into $OUT/sass.tgz (the dev machine has no disassembler);
#   2. the fallback's correctness: this build's gemm_bench at two shapes whose C has no tensor map
#      (1000x1001x520: odd ldc, single stores; 333x4100x1000: ldc * 2 not a multiple of 16, pair
#      stores), every --only config verified against cuBLASLt #0 (VERIFY lines);
#   3. (last, TEST_S seconds kept for it) GemmGpu.TmaGateUpPairVsReference (this build): the gate/up epilogue against float64, whose
#      odd and unaligned output widths (333, 4099 with C += C, 2050, 129) take the copy too;
#   4. the main path's speed: gemm_bench processes base / new alternately at 4096^3 (the four
#      configs timed in one process's interleaved rounds: --only + --twin), while BUDGET lasts.
# Tables last; logs in $OUT.
set -uo pipefail
export PATH="$PATH:/usr/local/cuda/bin"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s); BUDGET=${BUDGET:-55}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu \
  --format=csv > "$OUT/gpu.txt" 2>&1
C2='CONSUMERS=2,CLUSTER_M=1,WG_M=1,NUM_STAGES=4,GROUP_M=16'
ONLY="BLOCK_N=256,$C2,EPI_TMA=2,SPLIT_K=1,PINGPONG=0;BLOCK_N=256,$C2,EPI_TMA=2,SPLIT_K=2,PINGPONG=0"
ONLY="$ONLY;BLOCK_N=256,$C2,EPI_TMA=1,SPLIT_K=1,PINGPONG=0"
ONLY="$ONLY;BLOCK_N=176,CONSUMERS=2,CLUSTER_M=1,WG_M=2,NUM_STAGES=4,GROUP_M=16,EPI_TMA=1,SPLIT_K=1,PINGPONG=1"
mkdir -p /tmp/sass
for f in sass/*.cubin; do cuobjdump -sass "$f" > "/tmp/sass/$(basename "$f" .cubin).sass" 2>&1; done
tar -czf "$OUT/sass.tgz" -C /tmp sass
echo "sass at $(( $(date +%s) - T0 )) s"
KTUNE_CACHE_DIR=/tmp/kc-new timeout 25 new/gemm_bench --kinds=tma --only="$ONLY" \
  --shapes=1000x1001x520,333x4100x1000 --rounds=1 > "$OUT/verify.txt" 2> "$OUT/verify.err"
echo "verify rc=$? at $(( $(date +%s) - T0 )) s"
for p in 1 2 3 4; do
  for b in base new; do
    [ "$(left)" -gt $(( ${TEST_S:-20} + 6 )) ] || break 2
    KTUNE_CACHE_DIR=/tmp/kc-$b timeout "$(left)" $b/gemm_bench --kinds=tma --only="$ONLY" \
      --twin="$ONLY" --shapes=4096x4096x4096 --rounds=3 > "$OUT/ab_${b}_$p.txt" 2>> "$OUT/ab.err"
    echo "$b $p rc=$? at $(( $(date +%s) - T0 )) s"
  done
done
KTUNE_CACHE_DIR=/tmp/kc-new timeout "$(left)" new/gemm_gpu_test --gtest_filter=GemmGpu.TmaGateUpPairVsReference \
  > "$OUT/gated_test.txt" 2>&1
echo "gated test rc=$? at $(( $(date +%s) - T0 )) s"
tar -czf "$OUT/ab.tgz" -C "$OUT" $(cd "$OUT" && ls ab_*.txt) ab.err && rm -f "$OUT"/ab_*.txt
cat "$OUT/gpu.txt"
grep -h "^VERIFY" "$OUT/verify.txt"
grep -hE "^\[  (PASSED|FAILED|  OK) |Failure" "$OUT/gated_test.txt" | head -5
tar -xzf "$OUT/ab.tgz" -C /tmp && python3 ab_table.py "$ONLY" /tmp/ab_*.txt
