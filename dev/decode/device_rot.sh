#!/bin/bash
# GPU machine, one call (issue 32, twenty-fifth session, helper small): DC_EF against its base at five
# 1..16-row keys with gemm_bench's rotated batches after a read flush (the default since this session)
# in PROCS (default 4) processes, then OLD_PROCS (default 2) processes with --rot_reset=0 (the earlier
# rotated timing, whose batches found the previous variant's lines of the rotating copies) into
# $OUT/old/; gu_ef_table.py and cfg_ratios.py of both sets. Process 0 compiles.
#   OUT=$OUT DEADLINE=75 bash dev/decode/device_rot.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-75}"
P16=$(d 2 4 1 4 2 3 4); M1="$(d 1 4 1 4 2 0 4),DC_XH=1"; E31=$(d 1 4 2 4 1 0 4); G6U4=$(d 2 8 1 4 1 0 6)
EF=DC_EF=1
KEYS_AB=${KEYS_AB:-"1x4096x4096:$(v "$M1" $EF)
16x4096x4096:$(v "$P16" $EF)
4x6144x4096:$(v "$E31" $EF)
4x4096x14336:$(v "$M1" $EF)
16x28672x4096:$(v "$G6U4" $EF)"}
SHAPES=$(echo "$KEYS_AB" | cut -d: -f1 | paste -sd,)
mkdir -p "$OUT/old"
run_one() {  # DIR P ARGS...: one gemm_bench process into DIR/benchP.log
  local dir=$1 p=$2 lim rev="" T
  shift 2
  lim=${BENCH_S:-15}; [ "$(left)" -lt "$lim" ] && lim=$(( $(left) - 2 ))
  [ $((p % 2)) = 0 ] && rev=rev
  T=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "$lim" "$B/bench/gemm_bench" --kinds=decode "$@" \
    --only="$(list $rev)" --twin="$(list $rev)" --shapes="$SHAPES" --rounds="${ROUNDS:-5}" \
    > "$dir/bench$p.log" 2> "$dir/bench$p.err"
  echo "bench $dir $p rc=$? $(( $(date +%s) - T ))s (limit $lim${rev:+, reversed}) $*"
}
C0_S=${C0_S:-30} run_one "$OUT" 0 --rounds=1
for p in $(seq 1 "${PROCS:-4}"); do fits 12 "bench $p" && run_one "$OUT" "$p" && n=$p; done
for p in $(seq 1 "${OLD_PROCS:-2}"); do fits 12 "old $p" && run_one "$OUT/old" "$p" --rot_reset=0 && no=$p; done
echo "VERIFY ok: $(grep -h '^VERIFY' "$OUT"/bench*.log "$OUT"/old/bench*.log | grep -c ' ok ') of $(grep -h '^VERIFY' "$OUT"/bench*.log "$OUT"/old/bench*.log | wc -l)"
grep -h "^CLOCKS" "$OUT"/bench*.log | awk '{print $4, $5}' | sort | uniq -c | head -3
echo "== rotated after a flush (the new default), ${n:-0} processes"
python3 dev/decode/gu_ef_table.py "$OUT" "${n:-0}" 2>&1 | grep -v "| pair |" | cut -c1-220
python3 dev/decode/cfg_ratios.py "$OUT" "${n:-0}" 2>&1 | cut -c1-170
echo "== --rot_reset=0 (the earlier rotated timing), ${no:-0} processes"
python3 dev/decode/gu_ef_table.py "$OUT/old" "${no:-0}" 2>&1 | grep -v "| pair \|flush" | cut -c1-220
python3 dev/decode/cfg_ratios.py "$OUT/old" "${no:-0}" 2>&1 | grep " rot " | cut -c1-170
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err old 2>/dev/null; rm -rf ./*.err ./*.log old)
