#!/usr/bin/env bash
# GPU machine (carry .devwork/fp8, staged by `BASE=<main's build> bash dev/fp8_wave_stage.sh DEST`):
# issue 34's third cut of the tma kind's compile (EPI_TMA 2: the k-loop's piece chain from piece 1,
# one flush_piece_at site), this tree ("new"/"this") against main's build ("base") in ONE call:
#   1. the 4096^3 first wave's 15 configs (fp8_wave4096.cfg) started at once as the tuner's wave
#      (compile_split_bench --phase=full --at, NVRTC warmed up, its cache off), base then new,
#      CROUNDS (1) rounds; each process's user / sys CPU s, minor faults, max RSS (RU lines);
#   2. cold `ktune tune gemm --m 4096 --n 4096 --k 4096 --layout NT`, empty store, fresh
#      CUDA_CACHE_PATH, compile workers on, base first in odd pairs, GAP (0.6) s apart, PAIRS (4);
#   3. this build's GemmGpu.Tma{VsReference,GateUpPairVsReference,SplitTail*} capped at TEST_S
#      (30) beside both builds' gemm_bench --compile_only (each its own store, for steps 4-5);
#   4. this build's gemm_bench VERIFY at shapes whose C has no tensor map (1000x1001x520: odd ldc),
#      whose units are shorter than the pieces (1000x1001x128: two k-tiles) and 333x4100x1000;
#   5. kernel time: gemm_bench processes base / new alternately (new first in even pairs), the ONLY
#      configs + --twin and cuBLASLt in one process's interleaved rounds, 3 rounds, while BUDGET
#      (120) s lasts, at most AB_MAX (4) pairs.
# Logs in $OUT/wave.tgz; tables last.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/wave; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s); BUDGET=${BUDGET:-120}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
at() { echo "$1 at $(( $(date +%s) - T0 )) s" | tee -a "$W/run.log"; }
pack() { tar -czf "$OUT/wave.tgz" -C "$W" --exclude='kc-*' --exclude='cc-*' --exclude='cs' . ; }
trap pack EXIT
[ -d pb ] || tar -xJf pb.tar.xz
export LD_LIBRARY_PATH="$PWD/pb/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu \
  --format=csv > "$W/gpu.txt" 2>&1; nproc >> "$W/gpu.txt"
grep -m1 "model name" /proc/cpuinfo >> "$W/gpu.txt"
timeout 20 pb/new/tools/ktune info > "$W/info.txt" 2>&1  # the call's first context: not timed
RU='import resource, subprocess, sys
subprocess.run(sys.argv[1:]); r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("RU %.3f %.3f %d %d" % (r.ru_utime, r.ru_stime, r.ru_minflt, r.ru_maxrss))'
export CUDA_CACHE_DISABLE=1
for r in $(seq 1 "${CROUNDS:-1}"); do for v in base new; do
  a=$(( $(date +%s%3N) + 2000 )); mkdir -p "$W/cs"
  for i in $(seq 0 14); do
    python3 -c "$RU" pb/$v/bench/compile_split_bench --configs=fp8_wave4096.cfg --index=$i \
      --phase=full --at=$a --dir="$W/cs" --label="$v$r" > "$W/cs_${v}_${r}_$i.txt" 2>&1 &
  done
  wait
done; done
unset CUDA_CACHE_DISABLE
at "compile waves done"
source "$(dirname "$0")/cold_tune.sh"
tune() {  # build tag
  local t=pb/new/tools/ktune; [ "$1" = base ] && t=pb/base/tools/ktune
  cold_tune "$t" "$1" "$2"
}
for i in $(seq 1 "${PAIRS:-4}"); do
  order="base this"; [ $(( i % 2 )) = 0 ] && order="this base"
  for b in $order; do tune "$b" "${b}_$i"; done
done
at "cold walls done"
C2='CONSUMERS=2,GROUP_M=16,NUM_STAGES=4,WG_M=1,SPLIT_K=1,PINGPONG=0'
ONLY="BLOCK_N=256,$C2,CLUSTER_M=1,EPI_TMA=2;BLOCK_N=256,$C2,CLUSTER_M=2,EPI_TMA=2"
ONLY="$ONLY;BLOCK_N=256,$C2,CLUSTER_M=1,EPI_TMA=1"
SHAPES=${SHAPES:-4096x4096x4096,4096x6144x4096}
ODD=1000x1001x520,1000x1001x128,333x4100x1000
for v in base new; do
  KTUNE_CACHE_DIR=$W/kc-$v timeout 40 pb/$v/bench/gemm_bench --kinds=tma --only="$ONLY" \
    --shapes="$SHAPES,$ODD" --compile_only > "$W/warm_$v.txt" 2>&1 &
done
KTUNE_CACHE_DIR=$W/kc-tests timeout -k 2 "${TEST_S:-30}" pb/new/bench/gemm_gpu_test \
  --gtest_filter='GemmGpu.TmaVsReference:GemmGpu.TmaGateUpPairVsReference:GemmGpu.TmaSplitTail*' \
  > "$W/tests.txt" 2>&1 &
wait
at "tests and store compiles done"
KTUNE_CACHE_DIR=$W/kc-new timeout 15 pb/new/bench/gemm_bench --kinds=tma --only="$ONLY" \
  --shapes="$ODD" --rounds=1 > "$W/verify.txt" 2> "$W/verify.err"
at "verify rc=$?"
for p in $(seq 1 "${AB_MAX:-4}"); do
  order="base new"; [ $(( p % 2 )) = 0 ] && order="new base"
  for b in $order; do
    [ "$(left)" -gt 9 ] || break 2
    KTUNE_CACHE_DIR=$W/kc-$b timeout "$(( $(left) - 2 ))" pb/$b/bench/gemm_bench --kinds=tma \
      --only="$ONLY" --twin="$ONLY" --rounds=3 --shapes="$SHAPES" > "$W/ab_${b}_$p.txt" 2>> "$W/ab.err"
    at "ab $b $p rc=$?"
  done
done
pack
cat "$W/gpu.txt"
python3 fp8_beta_table.py "$W" 2>&1 | tail -22
for v in base new; do
  awk -v v=$v '/^RU/ {u += $2; s += $3; f += $4; if ($5 > m) m = $5; n++}
    END {printf "%s RU: %d procs, user %.2f s, sys %.2f s, minflt %d, max rss %d MB\n", v, n, u, s, f, m / 1024}' \
    "$W"/cs_${v}_*_*.txt
done
python3 early_wave_table.py "$W" 2>&1 | tail -12
grep -h "^VERIFY" "$W/verify.txt" | awk '{print $3, $5}' | sort | uniq -c
grep -hE "^\[ +(PASSED|FAILED|OK) |Failure" "$W/tests.txt" | head -12
python3 fp8_beta_norm.py "$ONLY" "$W"/ab_*.txt
echo "total $(( $(date +%s) - T0 )) s"
