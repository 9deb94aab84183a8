#!/usr/bin/env bash
# The finalists' pairing rule on the GPU (issue 34, KTUNE_FINALIST_PAIRING): one call, binaries
# staged by `PACK=1 BUILD_DIR=build bash dev/lead_stage.sh DEST` (carry DEST):
#   1. `ktune regret --only KEY` (guided against exhaustive, winners re-timed) KEY_REPS times under
#      each rule, the rules alternating (default key 4096x28672x4096, the set's last above 3%);
#   2. the LLM suite once cold (rule `drift`) to fill a store, then SUITE_REPS warm runs under each
#      rule, alternating, each on a fresh database (the suite holds that key: the rule's cost);
#   3. the whole GEMM regret set under REGRET_RULE (default drift) in what is left of DEADLINE.
#   cd DEST && OUT=$OUT DEADLINE=330 bash dev/pairing_ab_device.sh     (timeout_s DEADLINE + 20)
# Logs: $OUT/pairing.tgz; the summary last on stdout.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/pairing; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s); DEADLINE=${DEADLINE:-330}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
pack() { tar -czf "$OUT/pairing.tgz.part" -C "$W" . && mv "$OUT/pairing.tgz.part" "$OUT/pairing.tgz"; }
[ -d pb ] || tar -xJf pb.tar.xz
PB=$PWD/pb; export LD_LIBRARY_PATH="$PB/api:$PB/lib"
KEY=${KEY:-4096x28672x4096}; RULES=${RULES:-rotated drift}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader > "$W/gpu.txt" 2>&1
wall() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}'; }
# 1. The key under each rule, alternating (the order flips every repetition).
for i in $(seq 1 "${KEY_REPS:-2}"); do
  order=$RULES; [ $(( i % 2 )) = 0 ] && order=$(echo "$RULES" | awk '{for (i = NF; i > 0; i--) printf "%s ", $i}')
  for p in $order; do
    [ "$(left)" -gt "${KEY_MIN:-170}" ] || { echo "key $p $i: skipped ($(left) s left)" >> "$W/dropped.txt"; continue; }
    t=$(date +%s.%N)
    KTUNE_FINALIST_PAIRING=$p KTUNE_VERBOSE=1 CUDA_CACHE_PATH=/tmp/cc-k-$p-$i timeout 80 "$PB/tools/ktune" regret \
      --set gpu --ops gemm --only "$KEY" --rounds 4 --exhaustive-budget 0.2 --cache "/tmp/kc-k-$p-$i" \
      > "$W/key_${p}_$i.txt" 2> "$W/key_${p}_$i.err"
    echo "key $p $i rc=$? wall $(wall "$t")" | tee -a "$W/walls.txt"
  done
done
pack
# 2. The suite: one cold run fills a store; warm runs under each rule on fresh databases.
S=/tmp/pairing-suite; rm -rf "$S"; mkdir -p "$S"
suite() {  # rule tag
  local t; t=$(date +%s.%N); sleep 0.6
  KTUNE_FINALIST_PAIRING=$1 KTUNE_CACHE_DIR=$S/kc CUDA_CACHE_PATH=$S/cc KTUNE_DB=$S/db_$2.json \
    KTUNE_COMPILE_PROCESSES=1 timeout 60 "$PB/tools/ktune" tune gemm --suite llm --json > "$W/suite_$2.json" 2> "$W/suite_$2.err"
  echo "suite $2 ($1) rc=$? wall $(wall "$t")" | tee -a "$W/walls.txt"
}
if [ "${SUITE_REPS:-2}" -gt 0 ] && [ "$(left)" -gt 100 ]; then
  suite drift cold
  for i in $(seq 1 "${SUITE_REPS:-2}"); do
    for p in $RULES; do [ "$(left)" -gt 80 ] && suite "$p" "warm_${p}_$i"; done
  done
fi
pack
# 3. The whole GEMM regret set under one rule.
l=$(( $(left) - 10 ))
if [ "$l" -gt 40 ]; then
  KTUNE_FINALIST_PAIRING=${REGRET_RULE:-drift} CUDA_CACHE_PATH=/tmp/cc-regret timeout "$l" "$PB/tools/ktune" regret \
    --set gpu --ops gemm --rounds 4 --exhaustive-budget 0.2 --cache /tmp/kc-regret --deadline $(( l - 15 )) \
    > "$W/regret_gemm.txt" 2> "$W/regret_gemm.err"
  echo "regret gemm (${REGRET_RULE:-drift}) rc=$? at $(( $(date +%s) - T0 )) s" | tee -a "$W/walls.txt"
fi
pack
{ cat "$W/gpu.txt"; echo; cat "$W/walls.txt" "$W/dropped.txt" 2>/dev/null
  for f in "$W"/key_*.txt; do echo "== $(basename "$f")"; grep -E "${KEY}|re-timed|^keys" "$f" | cut -c1-200 | head -4; done
  for f in "$W"/key_*.err; do echo "== $(basename "$f")"; grep -E "decision|within noise|finalist" "$f" | cut -c1-220 | tail -4; done
  echo; echo "regret gemm"; grep -E "^keys|within|geomean|worst" "$W/regret_gemm.txt" 2>/dev/null | head -8
  awk '$2 + 0 > 1.01' "$W/regret_gemm.txt" 2>/dev/null | head -8
  echo "total $(( $(date +%s) - T0 )) s of DEADLINE=$DEADLINE"; } > "$W/table.txt" 2>&1
pack; cat "$W/table.txt"
