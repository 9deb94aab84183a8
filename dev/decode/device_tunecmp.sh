#!/bin/bash
# GPU machine, one call (issue 32, fourteenth session, second task): the tuner's measurements
# against gemm_bench's at the LLM suite's four decode keys (M = 16, layout NT as the suite's):
#   1. `ktune tune gemm --m 16 --n N --k K --layout NT --json` per key, KTUNE_VERBOSE=1, isolation
#      on (the CLI's default), one kernel cache, a fresh database per key;
#   2. gemm_bench process 1 over the same shapes (the decode kind's curated list, the fair method:
#      read flush and rotation, cuBLASLt #0..7), with the tuner's three fastest decode configs per
#      key as --twin (timed in the pick's interleaved rounds);
#   3. the four keys tuned again (warm store, fresh databases: tune_<key>_2), then gemm_bench
#      process 2 if the deadline leaves room;
#   4. dev/decode/tunecmp.py's table: per config both timed, the tuner's median beside gemm_bench's.
#   OUT=$OUT DEADLINE=80 bash dev/decode/device_tunecmp.sh     (binaries: dev/decode/stage.sh)
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-80}"
KEYS=${KEYS:-16x6144x4096 16x4096x4096 16x28672x4096 16x4096x14336}
tune_keys() {  # $1: the report files' suffix
  local key m n k S
  for key in $KEYS; do
    fits 8 "tune $key$1" || return
    IFS=x read -r m n k <<< "$key"
    S=$(date +%s)
    KTUNE_VERBOSE=1 KTUNE_CACHE_DIR=/tmp/kc-tune KTUNE_DB=/tmp/kc-tune/db_$key$1.json \
      timeout "${TUNE_S:-25}" "$B/tools/ktune" tune gemm --m "$m" --n "$n" --k "$k" --layout NT --json \
      > "$OUT/tune_$key$1.json" 2> "$OUT/tune_$key$1.err"
    echo "tune $key$1 rc=$? $(( $(date +%s) - S ))s"
  done
}
mkdir -p /tmp/kc-tune
tune_keys ""
TW=$(python3 dev/decode/tunecmp.py twins "$OUT" $KEYS)
echo "twins: $TW"
SH=$(echo $KEYS | tr ' ' ,)
PROCS=1 SHAPES=$SH bench_procs 1 "${BENCH_S:-30}" "--twin=$TW"
mv "$OUT/bench1.log" "$OUT/b1.log"; mv "$OUT/bench1.err" "$OUT/b1.err"
tune_keys _2
PROCS=1 SHAPES=$SH bench_procs 1 "${BENCH_S:-30}" "--twin=$TW"
[ -f "$OUT/bench1.log" ] && { mv "$OUT/bench1.log" "$OUT/bench2.log"; mv "$OUT/bench1.err" "$OUT/bench2.err"; }
mv "$OUT/b1.log" "$OUT/bench1.log"; mv "$OUT/b1.err" "$OUT/bench1.err"
grep -h "^VERIFY" "$OUT"/bench*.log 2>/dev/null | grep -v " ok " | head -10
grep -h "memset\|flush" "$OUT"/tune_*.err 2>/dev/null | grep -v '"event"' | head -5
python3 dev/decode/tunecmp.py table "$OUT" $KEYS
print_bench_tables 2 230 2>/dev/null | grep -v "^  ktune" | head -40
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.err ./*.log 2>/dev/null && rm -f ./*.err)
