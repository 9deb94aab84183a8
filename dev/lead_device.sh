#!/usr/bin/env bash
# The lead's GPU pass over the merged tree, in one call against a deadline (DEADLINE seconds,
# default 230), steps in order of priority, each skipped once the deadline would be overrun:
#   1. GPU tests: gemm_gpu_test (every kind incl. the decode wgmma body, the tuned op), the fp8
#      GEMM test, the capture test;
#   2. tuning time of the guided search: 4096^3 NT cold then warm store, the LLM suite warm, with
#      the JSON's engine and process split;
#   3. the fair benches (dev/bench_device.sh: gemm_bench + rowwise_bench, REPS processes);
#   4. the first call of an unseen key in background mode (bench/shape_first_call_bench).
# Binaries from pb/ (dev/lead_stage.sh); without them, or when they do not run, a build.
# Logs under $OUT (one tarball + summary). Usage: DEADLINE=230 bash dev/lead_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; L=/tmp/lead-logs; mkdir -p "$L"
T0=$(date +%s); DEADLINE=${DEADLINE:-230}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
PB=$PWD/pb
export LD_LIBRARY_PATH="$PB/api:$PB/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! "$PB/tools/ktune" --version > "$L/prebuilt.log" 2>&1; then
  echo "prebuilt binaries do not run ($(tail -1 "$L/prebuilt.log")): building"
  bash dev/device_build.sh ktune ktune-worker gemm_gpu_test gemm_fp8_gpu_test shapes_gpu_test \
    gemm_bench rowwise_bench shape_first_call_bench > "$L/build.log" 2>&1 || { tail -20 "$L/build.log"; exit 1; }
  PB=/tmp/kb
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$L/gpu.txt"
export KTUNE_CACHE_DIR=/tmp/kc-lead
step() {  # name budget command...
  local n=$1 b=$2; shift 2
  if [ "$(left)" -lt "$b" ]; then echo "$n: skipped ($(left) s left, needs $b)"; return; fi
  local s; s=$(date +%s)
  timeout "$b" "$@" > "$L/$n.log" 2>&1; local rc=$?
  echo "$n: rc=$rc $(( $(date +%s) - s ))s"
}
step gemm_gpu_test 80 "$PB/tests/gemm_gpu_test" --gtest_brief=1
grep -E "^\[  (PASSED|FAILED) |Failure|FAILED  \]" "$L/gemm_gpu_test.log" | head -12
step gemm_fp8_gpu_test 25 "$PB/tests/gemm_fp8_gpu_test" --gtest_brief=1
grep -E "^\[  (PASSED|FAILED) " "$L/gemm_fp8_gpu_test.log"
step shapes_gpu_test 25 "$PB/tests/shapes_gpu_test" --gtest_brief=1
grep -E "^\[  (PASSED|FAILED) " "$L/shapes_gpu_test.log"
K=$PB/tools/ktune
tune_json() {  # name cache args...: wall time with process start, the engine's split per key
  local n=$1 c=$2 b=$3; shift 3
  if [ "$(left)" -lt "$b" ]; then echo "$n: skipped ($(left) s left)"; return; fi
  local s; s=$(date +%s.%N)
  KTUNE_CACHE_DIR=$c KTUNE_DB=$c/db.json timeout "$b" "$K" tune gemm "$@" --json > "$L/$n.json" 2> "$L/$n.err"
  local rc=$?
  echo "$n: rc=$rc wall $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s"
  python3 - "$L/$n.json" <<'PY'
import json, sys
t, d, ks, i = open(sys.argv[1]).read(), json.JSONDecoder(), [], 0
while True:  # one JSON object per key (the suite prints several)
    i = t.find("{", i)
    if i < 0: break
    try: o, i = d.raw_decode(t, i)
    except ValueError: break
    ks += o if isinstance(o, list) else [o]
for k in ks:
    print("   %-46s %-8s total %7.0f ms compile %6.0f bench %6.0f fin %5.0f compiled %3s process %s" % (
        str(k.get("key", ""))[:46], k.get("winner_source", ""), k.get("total_wall_ms", 0),
        k.get("compile_wall_ms", 0), k.get("bench_wall_ms", 0), k.get("finalists_ms", 0),
        k.get("compiled", ""), {a: round(b) for a, b in (k.get("process") or {}).items()}))
PY
}
tune_json tune_cold /tmp/kc-t1 20 --m 4096 --n 4096 --k 4096 --layout NT
rm -f /tmp/kc-t1/db.json; tune_json tune_warm /tmp/kc-t1 15 --m 4096 --n 4096 --k 4096 --layout NT
tune_json suite_cold /tmp/kc-t2 40 --suite llm
rm -f /tmp/kc-t2/db.json; tune_json suite_warm /tmp/kc-t2 30 --suite llm
B=$(( $(left) - 25 ))
if [ "$B" -gt 40 ]; then
  BB=$PB/bench REPS=${REPS:-2} BUDGET_S=$B OUT=$L \
    GEMM_SHAPES=${GEMM_SHAPES:-4096x4096x4096,1024x14336x4096,16x4096x4096,128x4096x4096} \
    bash dev/bench_device.sh > "$L/fair.log" 2>&1
  tail -30 "$L/fair.log"
else echo "fair benches: skipped ($(left) s left)"; fi
step first_call 20 "$PB/bench/shape_first_call_bench"
tail -6 "$L/first_call.log"
tar -czf "$OUT/lead_logs.tgz" -C "$L" .
echo "total $(( $(date +%s) - T0 ))s"
