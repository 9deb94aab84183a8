#!/usr/bin/env bash
# GPU machine (carry .devwork/fp8, staged by dev/fp8_wave2_stage.sh): issue 34's third tma compile
# cut split into its two parts, kernel time only, in ONE short call:
#   1. each build's store (gemm_bench --compile_only, the ONLY configs at 4096^3);
#   2. gemm_bench processes of four builds: main's ("base"), the k-loop chain from piece 1 alone
#      ("c1"), the one flush_piece_at site alone ("m1"), both ("both"), the order rotated each
#      round, ONLY = the 128x256 EPI_TMA 2 winner (B), its CLUSTER_M 2 twin and the EPI_TMA 1 control
#      (code unchanged in every build) with --twin and cuBLASLt in one process's interleaved
#      ROUNDS (5) rounds, while BUDGET (38) s lasts;
#   3. if 8 s are left: the 4096^3 wave's 15 compiles at once (this build's compile_split_bench),
#      glibc's default malloc against GLIBC_TUNABLES=glibc.malloc.hugetlb=1, per-process rusage.
# Logs in $OUT/wave2.tgz; table last.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/wave2; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s); BUDGET=${BUDGET:-38}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
at() { echo "$1 at $(( $(date +%s) - T0 )) s" | tee -a "$W/run.log"; }
pack() { tar -czf "$OUT/wave2.tgz" -C "$W" --exclude='kc-*' --exclude='cs' . ; }
trap pack EXIT
[ -d pb2 ] || tar -xJf pb2.tar.xz
export LD_LIBRARY_PATH="$PWD/pb2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cat /sys/kernel/mm/transparent_hugepage/enabled > "$W/thp.txt" 2>&1; ldd --version | head -1 >> "$W/thp.txt"
C2='CONSUMERS=2,GROUP_M=16,NUM_STAGES=4,WG_M=1,SPLIT_K=1,PINGPONG=0'
ONLY="BLOCK_N=256,$C2,CLUSTER_M=1,EPI_TMA=2;BLOCK_N=256,$C2,CLUSTER_M=2,EPI_TMA=2"
ONLY="$ONLY;BLOCK_N=256,$C2,CLUSTER_M=1,EPI_TMA=1"
B="base c1 m1 both"
for v in $B; do
  KTUNE_CACHE_DIR=$W/kc-$v timeout 20 pb2/$v/gemm_bench --kinds=tma --only="$ONLY" \
    --shapes=4096x4096x4096 --compile_only > "$W/warm_$v.txt" 2>&1 &
done
wait
at "stores done"
set -- $B
for p in $(seq 1 8); do
  for v in "$@"; do
    [ "$(left)" -gt "${KEEP:-9}" ] || break 2
    KTUNE_CACHE_DIR=$W/kc-$v timeout 8 pb2/$v/gemm_bench --kinds=tma --only="$ONLY" \
      --twin="$ONLY" --rounds="${ROUNDS:-5}" --shapes=4096x4096x4096 > "$W/ab_${v}_$p.txt" 2>> "$W/ab.err"
    at "ab $v $p rc=$?"
  done
  set -- "${@:2}" "$1"  # rotate the order
done
RU='import resource, subprocess, sys
subprocess.run(sys.argv[1:]); r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("RU %.3f %.3f %d %d" % (r.ru_utime, r.ru_stime, r.ru_minflt, r.ru_maxrss))'
if [ "$(left)" -gt 7 ]; then
  export CUDA_CACHE_DISABLE=1
  for e in plain huge; do
    a=$(( $(date +%s%3N) + 1500 )); mkdir -p "$W/cs"
    for i in $(seq 0 14); do
      if [ $e = huge ]; then export GLIBC_TUNABLES=glibc.malloc.hugetlb=1; else unset GLIBC_TUNABLES; fi
      python3 -c "$RU" pb2/both/compile_split_bench --configs=fp8_wave4096.cfg --index=$i \
        --phase=full --at=$a --dir="$W/cs" --label="$e" > "$W/cs_${e}_1_$i.txt" 2>&1 &
    done
    wait; unset GLIBC_TUNABLES
  done
  at "malloc waves done"
fi
pack
cat "$W/thp.txt"
python3 fp8_wave2_table.py "$W"
echo "total $(( $(date +%s) - T0 )) s"
