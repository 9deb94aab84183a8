#!/usr/bin/env bash
# GPU machine (carry .devwork/search, staged by `bash dev/regret_stage.sh DEST`): issue 34, the
# first wave's width against the host's contention. One build (pb/tools/ktune); the variants set
# KTUNE_FIRST_WAVE_TRY (w8: a wave of 8; w0: the rule's wave; read only by commit 4b6e540's build,
# reverted: bench/NOTES.md) or KTUNE_COMPILE_THREADS (t8), cold
# (empty KTUNE_CACHE_DIR, fresh CUDA_CACHE_PATH, own KTUNE_TIMELINE, compile workers on).
# 1. `ktune tune gemm --m 4096 --n 4096 --k 4096 --layout NT`: ROUNDS (3) rounds of V1 (the order
#    rotated per round). 2. 4096x6144x4096 NT: ROUNDS2 (2) rounds of V2. 3. The cold LLM suite,
#    V3 alternating while DEADLINE (s) allows. Table last (dev/wave_width_table.py); logs in $OUT/ww.tgz.
#   OUT=$OUT DEADLINE=70 bash dev/wave_width_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/ww; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s); DEADLINE=${DEADLINE:-70}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
[ -d pb ] || tar -xJf pb.tar.xz
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
  lscpu | grep -E "^(Model name|Thread|Core|Socket|CPU\(s\)|L3)"; } | tee "$W/host.txt"
venv() { case $1 in w0) echo "X=0";; w*) echo "KTUNE_FIRST_WAVE_TRY=${1#w}";; t*) echo "KTUNE_COMPILE_THREADS=${1#t}";; esac; }
run() {  # variant tag args...
  local v=$1 tag=$2; shift 2; local S; S=$(date +%s.%N)
  env "$(venv "$v")" KTUNE_COMPILE_PROCESSES=1 KTUNE_CACHE_DIR=$W/kc CUDA_CACHE_PATH=$W/cc \
    KTUNE_TIMELINE=$W/$tag.tl timeout 40 pb/tools/ktune tune gemm "$@" --json --quiet \
    > "$W/$tag.json" 2> "$W/$tag.err"
  echo "RUN $v $tag rc=$? wall $(awk -v a="$S" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')" \
    | tee -a "$W/walls.txt"
  rm -rf "$W/kc" "$W/cc"
}
rounds() {  # prefix need_s n "variants" args...
  local p=$1 need=$2 n=$3; local -a vs=($4); shift 4
  for r in $(seq 0 $(( n - 1 ))); do
    for j in $(seq 0 $(( ${#vs[@]} - 1 ))); do
      local v=${vs[$(( (j + r) % ${#vs[@]} ))]}
      [ "$(left)" -gt "$need" ] || return 0
      run "$v" "${p}_${v}_$r" "$@"
    done
  done
}
echo "== 4096^3"; rounds sq 6 "${ROUNDS:-3}" "${V1:-w0 w8 w10 w12}" --m 4096 --n 4096 --k 4096 --layout NT
echo "== 4096x6144x4096"; rounds pf 6 "${ROUNDS2:-2}" "${V2:-w0 w8 w10}" --m 4096 --n 6144 --k 4096 --layout NT
echo "== suite"; rounds su 11 9 "${V3:-w0 w8}" --suite llm
tar -czf "$OUT/ww.tgz" -C "$W" --exclude=kc --exclude=cc .
python3 dev/wave_width_table.py "$W"
echo "total $(( $(date +%s) - T0 )) s"
