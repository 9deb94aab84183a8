#!/usr/bin/env bash
# GPU machine, one call (issues 32 and 34, the merged tree before the final call): carry
# .devwork/lead, staged by dev/final24_check_stage.sh:
#   1. cold 4096^3 `ktune tune gemm`, base / this, ROUNDS rotated rounds (cold_probe_device.sh);
#   2. warm 4096^3, base / this in N alternating pairs, each build's own store (warm_time_device.sh);
#   3. the tuned op cold at OP_KEYS (a decode winner? which twin?);
#   4. issue 32's whole table on the final kernels (dev/decode/device_table.sh) with the time left.
#   cd .devwork/lead && OUT=$OUT DEADLINE=260 bash dev/final24_check_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s); DL=${DEADLINE:-260}
(cd cold && OUT=$OUT/cold DEADLINE=${COLD_S:-40} ROUNDS=${ROUNDS:-4} NS=" " INIT_ROUNDS=0 \
  VARIANTS="base:base: this:new:" bash cold_probe_device.sh) > "$OUT/cold.txt" 2>&1
grep "^TUNE" "$OUT/cold.txt"
(cd w && OUT=$OUT/w WHOS="base this" SHARE=0 PREP=0 ALT=1 N=${N:-6} GAP=0.6 SUITE=0 \
  DEADLINE=${WARM_S:-40} bash dev/warm_time_device.sh) > "$OUT/warm.txt" 2>&1
tail -n 25 "$OUT/warm.txt"
cd dec || exit 1
export LD_LIBRARY_PATH="$PWD/pb/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for key in ${OP_KEYS:-16x28672x4096 32x4096x4096 128x4096x4096}; do
  IFS=x read -r m n k <<< "$key"
  d=/tmp/op-$key; rm -rf "$d"; S=$(date +%s.%N)
  KTUNE_CACHE_DIR=$d KTUNE_DB=$d/db.json CUDA_CACHE_PATH=$d/cc timeout 30 pb/tools/ktune tune gemm \
    --m "$m" --n "$n" --k "$k" --layout NT --json > "$OUT/op_$key.json" 2> "$OUT/op_$key.err"
  echo "OP $key rc=$? wall $(awk -v a="$S" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') $(python3 -c '
import json,sys
try:
  j=json.load(open(sys.argv[1])); r=j[0] if isinstance(j,list) else j
  w=r.get("winner") or r.get("results",[{}])[0].get("winner")
  print("winner", w, r.get("winner_stats",{}).get("median_ms"))
except Exception as e: print("unparsed", e)' "$OUT/op_$key.json")"
done
left=$(( DL - ($(date +%s) - T0) - 5 ))
OUT=$OUT/table DEADLINE=$left bash dev/decode/device_table.sh
echo "call wall $(( $(date +%s) - T0 ))s"
# One archive: the device tool returns only a few files by count.
(cd "$OUT" && tar -czf ../check.tgz . && rm -rf ./* && mv ../check.tgz .)
