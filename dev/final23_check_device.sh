#!/usr/bin/env bash
# GPU machine, one call (issues 32 and 34, the merged tree before the final call): carry
# .devwork/lead, staged by dev/final23_check_stage.sh (dec/: `dev/decode/stage.sh` of this tree;
# cold/: `dev/cold_probe_stage.sh` with the session start's build as base and this tree's as new):
#   1. cold 4096^3 `ktune tune gemm`, base / this / this with KTUNE_EARLY_WAVE=1, ROUNDS rotated
#      rounds (cold_probe_device.sh: empty stores, fresh CUDA caches, timelines);
#   2. the tuned op cold at the 128-row keys (the quick rejection's confirmation: a decode winner?);
#   3. issue 32's whole table on the final kernels (dev/decode/device_table.sh).
#   cd .devwork/lead && OUT=$OUT DEADLINE=240 bash dev/final23_check_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s); DL=${DEADLINE:-240}
(cd cold && OUT=$OUT/cold DEADLINE=${COLD_S:-36} ROUNDS=${ROUNDS:-3} NS=" " INIT_ROUNDS=0 \
  VARIANTS="base:base: this:new: ew:new:KTUNE_EARLY_WAVE=1" bash cold_probe_device.sh) \
  > "$OUT/cold.txt" 2>&1
grep "^TUNE" "$OUT/cold.txt"
cd dec || exit 1
[ -d pb ] || true
export LD_LIBRARY_PATH="$PWD/pb/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for key in 128x4096x4096 128x6144x4096; do
  IFS=x read -r m n k <<< "$key"
  for r in 1 2; do
    d=/tmp/op-$key-$r; rm -rf "$d"; S=$(date +%s.%N)
    KTUNE_CACHE_DIR=$d KTUNE_DB=$d/db.json CUDA_CACHE_PATH=$d/cc timeout 30 pb/tools/ktune tune gemm \
      --m "$m" --n "$n" --k "$k" --layout NT --json > "$OUT/op_${key}_$r.json" 2> "$OUT/op_${key}_$r.err"
    echo "OP $key run $r rc=$? wall $(awk -v a="$S" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') $(python3 -c '
import json,sys
try:
  j=json.load(open(sys.argv[1])); r=j[0] if isinstance(j,list) else j
  w=r.get("winner") or r.get("results",[{}])[0].get("winner")
  print("winner", w, r.get("winner_stats",{}).get("median_ms"))
except Exception as e: print("unparsed", e)' "$OUT/op_${key}_$r.json")"
  done
done
left=$(( DL - ($(date +%s) - T0) - 5 ))
OUT=$OUT/table DEADLINE=$left bash dev/decode/device_table.sh
echo "call wall $(( $(date +%s) - T0 ))s"
# One archive: the device tool returns only a few files by count (a call lost table.md and the
# table's logs that way: bench/NOTES.md).
(cd "$OUT" && tar -czf ../check.tgz . && rm -rf ./* && mv ../check.tgz .)
