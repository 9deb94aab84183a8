#!/usr/bin/env bash
# GPU machine (carry .devwork/search, staged by `BASE=<main's build dir> bash dev/regret_stage.sh
# DEST`): the first key's first wave started before the device's context (this tree, pb/tools)
# against the base (pb/base): `ktune tune gemm --m 4096 --n 4096 --k 4096 --layout NT` cold, PAIRS
# pairs (default 4), interleaved base/this (ALT=1: this first in the even pairs), every run an empty store, a fresh CUDA_CACHE_PATH and
# its own KTUNE_TIMELINE; pairs stop starting DEADLINE seconds (default 45) after the start.
# Compile workers on (KTUNE_COMPILE_PROCESSES=1, the CLI's GPU default). Table last: wall, the
# engine's total_wall_ms, compiles, and from the timeline (ms after the tuner's `main` mark) the
# first compile issued (this: `compile_issued`; base: its first compile worker's start, which the
# tuning run's first request starts), the first compile worker's start (both), the context, the
# inputs, round 1's end.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/ew; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s); DEADLINE=${DEADLINE:-45}
[ -d pb ] || tar -xJf pb.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader; nproc
bin() { [ "$1" = base ] && echo "$PWD/pb/base/tools/ktune" || echo "$PWD/pb/tools/ktune"; }
tune() {  # build tag: one cold run
  local b=$1 tag=$2; local S; S=$(date +%s.%N)
  KTUNE_COMPILE_PROCESSES=1 KTUNE_CACHE_DIR=$W/kc-$tag CUDA_CACHE_PATH=$W/cc-$tag \
    KTUNE_TIMELINE=$W/$tag.tl timeout 40 "$(bin "$b")" tune gemm --m 4096 --n 4096 --k 4096 \
    --layout NT --json --quiet > "$W/$tag.json" 2> "$W/$tag.err"
  echo "TUNE $b $tag rc=$? wall $(awk -v a="$S" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')" \
    | tee -a "$W/walls.txt"
}
for i in $(seq 1 "${PAIRS:-4}"); do
  [ $(( $(date +%s) - T0 )) -lt "$DEADLINE" ] || break
  order="base this"  # ALT=1: this first in the even pairs
  [ "${ALT:-0}" = 1 ] && [ $(( i % 2 )) = 0 ] && order="this base"
  for b in $order; do tune $b "${b}_$i"; done
done
tar -czf "$OUT/ew.tgz" -C "$W" --exclude='kc-*' --exclude='cc-*' .
python3 dev/early_wave_table.py "$W"
echo "total $(( $(date +%s) - T0 )) s"
