#!/usr/bin/env bash
# One regret key looked at closely (issue 34): `ktune regret --only ONLY` REPS times (exhaustive then
# guided, winners re-timed) and `ktune tune gemm` guided TUNES times at SHAPE, each in its own
# process with fresh caches and KTUNE_VERBOSE=1, so the logs carry every finalist's per-round times
# (finalists.cc logRounds) and the race's eliminations. Binaries staged by
# `PACK=1 BUILD_DIR=build bash dev/lead_stage.sh DEST` (carry DEST); then
#   cd DEST && OUT=$OUT ONLY="4096x28672x4096" SHAPE=4096,28672,4096 bash dev/regret_key_device.sh
# Logs: $OUT/regret_key.tgz; a summary of the decisions last on stdout.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/regret_key; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s); DEADLINE=${DEADLINE:-120}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
[ -d pb ] || tar -xJf pb.tar.xz
PB=$PWD/pb; export LD_LIBRARY_PATH="$PB/api:$PB/lib"
IFS=, read -r M N K <<< "${SHAPE:-4096,28672,4096}"
for i in $(seq 1 "${REPS:-2}"); do
  [ "$(left)" -gt 30 ] || break
  KTUNE_VERBOSE=1 CUDA_CACHE_PATH=/tmp/cc-rk-$i timeout $(( $(left) - 5 )) "$PB/tools/ktune" regret \
    --set gpu --ops gemm --only "${ONLY:-4096x28672x4096}" --rounds 4 --exhaustive-budget \
    "${EXH_BUDGET:-0.2}" --cache /tmp/kc-rk-$i > "$W/regret_$i.txt" 2> "$W/regret_$i.err"
  echo "regret $i rc=$? at $(( $(date +%s) - T0 )) s"
done
for i in $(seq 1 "${TUNES:-3}"); do
  [ "$(left)" -gt 10 ] || break
  KTUNE_VERBOSE=1 CUDA_CACHE_PATH=/tmp/cc-rt-$i KTUNE_CACHE_DIR=/tmp/kc-rt-$i KTUNE_DB=/tmp/db-rt-$i.json \
    timeout $(( $(left) - 3 )) "$PB/tools/ktune" tune gemm --m "$M" --n "$N" --k "$K" --layout NT --json \
    > "$W/tune_$i.json" 2> "$W/tune_$i.err"
  echo "tune $i rc=$? at $(( $(date +%s) - T0 )) s"
done
tar -czf "$OUT/regret_key.tgz" -C "$W" .
for f in "$W"/regret_*.txt; do echo "== $f"; grep -A2 "x$N\?x" "$f" | head -6; done
for f in "$W"/tune_*.err; do echo "== $f"; grep -E "finalist|decision|default" "$f" | cut -c1-200 | head -12; done
