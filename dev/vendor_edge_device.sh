#!/usr/bin/env bash
# GPU machine (carry .devwork/search, staged by `BASE=<main's build dir> bash dev/regret_stage.sh
# DEST`): issue 34's vendor-edge rule (a coverage pick at a cuBLASLt leader's edge owes its class)
# and the cold 4096^3 critical path, this tree (pb/tools) against the base (pb/base), cold (empty
# KTUNE_CACHE_DIR, fresh CUDA_CACHE_PATH, its own KTUNE_TIMELINE, compile workers on), GAP seconds
# (default 0.6) between processes (cuInit otherwise waits behind the last process's teardown).
# 0. PROBE_ROUNDS (default 0) rounds of dev/init_lt_probe.c's three modes (init_lt_probe, built on
#    the dev machine and copied beside this script's tree): cuInit alone, beside a cuBLASLt load.
# 1. `ktune tune gemm --m 4096 --n 4096 --k 4096 --layout NT`: PAIRS pairs (default 5), the order
#    alternating (the first of SQ_BUILDS first in odd pairs; default "base this"; "after" = this
#    tree with KTUNE_LT_PRELOAD=after, cuBLASLt's preload after the driver's start: read only by
#    c882004's build, refuted and reverted, bench/NOTES.md).
# 2. `ktune tune gemm --suite llm`: SUITE_PAIRS pairs (default 2) of SU_BUILDS (default "base this"), alternating, while DEADLINE
#    (seconds, default 90) leaves SUITE_S (default 16) per run.
#    Then one more cold run of this tree with KTUNE_VERBOSE=1 (VERBOSE_RUN=0 skips it).
# 3. The 4096^3 default's twin compiled alone on the host, COMPILES times (default 2).
# Table last (dev/vendor_edge_table.py); logs in $OUT/ve.tgz.
#   OUT=$OUT DEADLINE=90 bash dev/vendor_edge_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/ve; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s); DEADLINE=${DEADLINE:-90}; GAP=${GAP:-0.6}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
[ -d pb ] || tar -xJf pb.tar.xz
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader; nproc
  lscpu | grep -E "^(Model name|CPU max MHz|CPU\(s\))"; } | tee "$W/host.txt"
bin() { [ "$1" = base ] && echo "$PWD/pb/base/tools/ktune" || echo "$PWD/pb/tools/ktune"; }
run() {  # build tag args...: one cold run
  local b=$1 tag=$2; shift 2; sleep "$GAP"; local S; S=$(date +%s.%N)
  local lt=before; [ "$b" = after ] && lt=after
  KTUNE_LT_PRELOAD=$lt KTUNE_COMPILE_PROCESSES=1 KTUNE_CACHE_DIR=$W/kc CUDA_CACHE_PATH=$W/cc \
    KTUNE_TIMELINE=$W/$tag.tl timeout 40 "$(bin "$b")" tune gemm "$@" --json --quiet \
    > "$W/$tag.json" 2> "$W/$tag.err"
  echo "RUN $b $tag rc=$? wall $(awk -v a="$S" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')" \
    | tee -a "$W/walls.txt"
  rm -rf "$W/kc" "$W/cc"
}
pairs() {  # prefix n need_s "b1 b2" args...
  local p=$1 n=$2 need=$3; local -a bs=($4); shift 4
  for i in $(seq 1 "$n"); do
    local order="${bs[0]} ${bs[1]}"; [ $(( i % 2 )) = 0 ] && order="${bs[1]} ${bs[0]}"
    for b in $order; do
      [ "$(left)" -gt "$need" ] || return 0
      run "$b" "${p}_${b}_$i" "$@"
    done
  done
}
for i in $(seq 1 "${PROBE_ROUNDS:-0}"); do
  for m in init init_lt lt_init; do sleep "$GAP"; ./init_lt_probe $m | tee -a "$W/probe.txt"; done
done
echo "== 4096^3"; pairs sq "${PAIRS:-5}" 4 "${SQ_BUILDS:-base this}" --m 4096 --n 4096 --k 4096 --layout NT
if [ "${VERBOSE_RUN:-1}" = 1 ] && [ "$(left)" -gt 8 ]; then  # the race's decisions, this tree
  sleep "$GAP"; KTUNE_VERBOSE=1 KTUNE_COMPILE_PROCESSES=1 KTUNE_CACHE_DIR=$W/kc CUDA_CACHE_PATH=$W/cc \
    KTUNE_TIMELINE=$W/verbose.tl timeout 40 pb/tools/ktune tune gemm --m 4096 --n 4096 --k 4096 \
    --layout NT --json --quiet > "$W/verbose.json" 2> "$W/verbose.err"; rm -rf "$W/kc" "$W/cc"
  grep -E "guided|race" "$W/verbose.err" | tail -30
fi
echo "== suite"; pairs su "${SUITE_PAIRS:-2}" "${SUITE_S:-16}" "${SU_BUILDS:-base this}" --suite llm
echo "== one compile alone"
for i in $(seq 1 "${COMPILES:-2}"); do
  [ "$(left)" -gt 3 ] || break
  /usr/bin/time -f "COMPILE wall %e user %U sys %S" pb/tools/ktune compile gemm_tma --arch sm_90a \
    -D BLOCK_N=256 -D CLUSTER_M=1 -D CONSUMERS=2 -D EPI_TMA=2 -D GROUP_M=16 -D NUM_STAGES=4 \
    -D PINGPONG=0 -D SPLIT_K=1 -D WG_M=1 --no-cache 2>&1 | tail -2 | tee -a "$W/compile.txt"
done
tar -czf "$OUT/ve.tgz" -C "$W" --exclude=kc --exclude=cc .
python3 dev/vendor_edge_table.py "$W"
echo "total $(( $(date +%s) - T0 )) s"
