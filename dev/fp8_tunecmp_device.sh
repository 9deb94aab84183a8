#!/usr/bin/env bash
# GPU machine, one call (issue 33): the tuner's measurements against gemm_bench's at 4096^3 and
# 4096x6144x4096 bf16 NT, the same configs, to split a disagreement into its causes (binaries
# staged by dev/fp8_stage.sh into pb/; nothing is built here). In order, against BUDGET seconds:
#   t1: `KTUNE_VERBOSE=1 ktune tune gemm --m M --n N --k K --layout NT --json` per key, isolation on
#       (the CLI's default), an empty kernel cache and database per key and run;
#   gemm_bench process 1: --only = B, D and t1's three fastest JIT configs per key (its race
#       medians), the fair method (pre-pass, ROUNDS interleaved rounds against cuBLASLt #0 and the
#       best of 8), with --tuner_method=TM (gemm_bench's sampling, the tuner's do_bench one run per
#       synchronisation and 10 per synchronisation, same rounds: bench/gemm_bench_tuner.h) and
#       --sustain_ms=SUS (each variant SUS ms of queued runs, NVML clocks and power);
#   t2: as t1; gemm_bench process 2;
#   t3: as t1 with KTUNE_ISOLATE=0 (in the tuner's process) on t1's kernel store (fresh database);
#   gemm_bench process 3;
#   nvidia-smi's SM clock and power every 100 ms through the call (smi.csv);
#   dev/fp8_tunecmp.py's tables last (table.txt). Files back: gpu.txt, table.txt, logs.tgz.
#   OUT=$OUT BUDGET=88 bash dev/fp8_tunecmp_device.sh
set -uo pipefail
BUDGET_DEFAULT=88
. dev/fp8_device_common.sh
KEYS=${KEYS:-4096x4096x4096 4096x6144x4096}
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 100 \
  > "$OUT/smi.csv" 2>&1 &
SMI=$!
# tune LABEL ISOLATE [STORE]: every key once, its own database (and kernel cache, or STORE's).
tune() {
  local key m n k d c S
  for key in $KEYS; do
    [ "$(left)" -ge 12 ] || { echo "tune $1 $key skipped: $(left) s left"; return; }
    IFS=x read -r m n k <<< "$key"
    d=/tmp/kc-$1-$key; rm -rf "$d"; mkdir -p "$d"
    c=$d; [ -n "${3:-}" ] && c=/tmp/kc-$3-$key
    S=$(date +%s); echo "tune $1 $key starts $(date -u +%T.%3N)"
    KTUNE_ISOLATE=$2 KTUNE_VERBOSE=1 KTUNE_CACHE_DIR=$c KTUNE_DB=$d/db.json \
      timeout "${TUNE_S:-20}" "$PB/tools/ktune" tune gemm --m "$m" --n "$n" --k "$k" --layout NT --json \
      > "$OUT/tune_$1_$key.json" 2> "$OUT/tune_$1_$key.err"
    echo "tune $1 $key isolate=$2 rc=$? $(( $(date +%s) - S )) s"
    cp "$d/db.json" "$OUT/db_$1_$key.json" 2> /dev/null
    grep -h "isolated benchmarking\|falls back" "$OUT/tune_$1_$key.err" | head -2
  done
}
bench() {
  [ "$(left)" -ge "$2" ] || { echo "bench $1 skipped: $(left) s left"; return; }
  echo "bench $1 starts $(date -u +%T.%3N)"
  timeout "$2" stdbuf -oL "$PB/bench/gemm_bench" --kinds=tma --only="$ONLY" \
    --shapes="$(echo $KEYS | tr ' ' ,)" --rounds="${ROUNDS:-5}" --tuner_method="${TM:-4}" \
    --sustain_ms="${SUS:-120}" > "$OUT/bench_$1.txt" 2> "$OUT/bench_$1.err"
  at "bench $1 rc=$?"
  grep -E "^VERIFY" "$OUT/bench_$1.txt" | grep -v " ok " | head -5
}
env -u LD_LIBRARY_PATH ldd "$PB/tools/ktune-worker" | grep ktune | sed "s/^/without pb\/lib: /"
tune t1 1
ONLY=$(python3 dev/fp8_tunecmp.py only "$OUT" $KEYS)
[ -n "$ONLY" ] || ONLY=$(configs "B D")
echo "only: $ONLY"
bench 1 "${BENCH1_S:-22}"
tune t2 1
bench 2 "${BENCH_S:-16}"
tune t3 0 t1
bench 3 "${BENCH_S:-16}"
kill "$SMI" 2> /dev/null
python3 dev/fp8_tunecmp.py table "$OUT" $KEYS > "$OUT/table.txt" 2>&1
cat "$OUT/table.txt"
(cd "$OUT" && tar czf logs.tgz ./*.json ./*.err ./bench_*.txt ./smi.csv 2> /dev/null &&
  rm -f ./*.json ./*.err ./bench_*.txt ./smi.csv)
at total
