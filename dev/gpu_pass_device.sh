#!/usr/bin/env bash
# The GPU regression pass after a change that should alter no behaviour (issue 31's move of the
# ops onto the public registration), in ONE device call of at most DEADLINE seconds (default 290):
#   1. every GPU test program (tests/*_gpu_test) with prebuilt binaries: gemm_vs_default_gpu_test
#      alone first (it asserts a tuned winner beats the default: timing), then the others JOBS at
#      a time (default 4; gemm_gpu_test split into GEMM_SHARDS gtest shards, default 3), all under
#      TEST_S seconds (default 150); compiles dominate them and the machine has 16 cores;
#   2. the fair benches (dev/bench_device.sh, PROGRAMS="gemm rowwise", REPS processes, default
#      2): gemm_bench on the LLM suite's shapes (GEMM_SHAPES) and rowwise_bench, in the time left.
# The tests and benches share one kernel cache, so the benches reuse the tests' code objects.
# Staging on the dev machine: `GPU=1 bash dev/lead_stage.sh` (pb.tar.xz: tools, every GPU test,
# benches, libktune, the isolation plugin and the build path compiled into the isolation tests).
# Logs under $OUT (tarball), a short table last. Usage: DEADLINE=290 bash dev/gpu_pass_device.sh
# (TUNE=1: one shape's cold/warm tuning time first, TUNE_MODES the compile workers on/off; SUITE=1:
# the main job's winners per key, then its warm wall with SUITE_WARM=1, the default.)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; L=/tmp/gpu-pass-logs; rm -rf "$L"; mkdir -p "$L"
T0=$(date +%s); DEADLINE=${DEADLINE:-290}; TEST_S=${TEST_S:-150}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
[ -f pb.tar.xz ] && [ ! -d pb ] && tar -xJf pb.tar.xz
PB=$PWD/pb
export LD_LIBRARY_PATH="$PB/api:$PB/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$PB/tools/ktune" --version > "$L/prebuilt.log" 2>&1 || { echo "prebuilt binaries do not run:"; tail -3 "$L/prebuilt.log"; exit 1; }
# The isolation tests start the worker and load the plugin from their build paths.
if [ -f "$PB/BUILD_DIR" ]; then
  BD=$(cat "$PB/BUILD_DIR")
  if mkdir -p "$BD/tools" "$BD/tests" 2>/dev/null; then  # never over a real build's files
    for f in tools/ktune-worker tests/libktune_isolation_gpu_plugin.so; do
      [ -e "$BD/$f" ] || ln -s "$PB/$f" "$BD/$f"
    done
  else
    echo "note: cannot create $BD here: the isolation GPU tests will not find their worker"
  fi
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$L/gpu.txt"
export KTUNE_CACHE_DIR=/tmp/kc-gpu-pass

# 0. TUNE=1: one GEMM shape tuned with an empty cache, then with the warm code-object store, before
#    anything else runs on the machine (issue 34's tuning time; JSON per run, read on the dev box).
#    TUNE_MODES (default "1"): KTUNE_COMPILE_PROCESSES per pair of runs, e.g. "1 0 1 0" alternates
#    the compile workers with in-process compiles. Each cold run has a fresh store and a fresh
#    CUDA_CACHE_PATH (NVRTC's compiles hit the driver's cache otherwise: bench/NOTES.md).
if [ "${TUNE:-0}" = 1 ]; then
  i=0
  for mode in ${TUNE_MODES:-1}; do
    i=$((i + 1))
    for run in cold warm; do
      s=$(date +%s.%N); tag=${run}_p${mode}_$i
      CUDA_CACHE_PATH=/tmp/cc-tune-$i KTUNE_COMPILE_PROCESSES=$mode KTUNE_CACHE_DIR=/tmp/kc-tune-$i \
        KTUNE_DB=/tmp/kc-tune-$i/db.$run.json timeout 30 "$PB/tools/ktune" \
        tune gemm --m 4096 --n 4096 --k 4096 --layout NT --json > "$L/tune_$tag.json" 2> "$L/tune_$tag.err"
      echo "tune_$tag: rc=$? wall $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s" \
        | tee -a "$L/tune.txt"
    done
  done
  TEST_S=$(( TEST_S + $(date +%s) - T0 ))
fi
# 0b. SUITE=1: the main job (`ktune tune gemm --suite llm`, empty cache of its own) and its winners
#     per key, JIT or cuBLASLt (issues 32 and 33 count the JIT winners), before the tests too.
if [ "${SUITE:-0}" = 1 ]; then
  s=$(date +%s)
  CUDA_CACHE_PATH=/tmp/cc-suite KTUNE_CACHE_DIR=/tmp/kc-suite KTUNE_DB=/tmp/kc-suite/db.json \
    timeout 90 "$PB/tools/ktune" \
    tune gemm --suite llm --json > "$L/suite.json" 2> "$L/suite.err"
  echo "suite: rc=$? wall $(( $(date +%s) - s )) s" > "$L/suite.txt"
  python3 dev/suite_winners.py "$L/suite.json" >> "$L/suite.txt" 2>&1
  if [ "${SUITE_WARM:-1}" = 1 ]; then  # the same store, a fresh database: the warm suite's wall
    w=$(date +%s.%N)
    CUDA_CACHE_PATH=/tmp/cc-suite KTUNE_CACHE_DIR=/tmp/kc-suite KTUNE_DB=/tmp/kc-suite/db.warm.json \
      timeout 60 "$PB/tools/ktune" tune gemm --suite llm --json > "$L/suite_warm.json" 2> "$L/suite_warm.err"
    echo "suite warm: rc=$? wall $(awk -v a="$w" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s" >> "$L/suite.txt"
  fi
  TEST_S=$(( TEST_S + $(date +%s) - s ))
fi

# 1. GPU tests, each cut at TEST_END (a cut program is not a pass: its summary is missing).
TEST_END=$(( T0 + TEST_S ))
# FAILED: gtest's brief mode prints no failure summary, so the failed tests' own lines count.
count() {
  local c
  if [ "$1" = FAILED ]; then c=$(grep -c '^\[  FAILED  \] [A-Za-z_0-9/.]* (' "$2"); echo "${c:-0}"; return; fi
  c=$(sed -n "s/^\[  $1 *\] \([0-9]*\) test.*/\1/p" "$2" | head -1); echo "${c:-0}"
}
run_test() {  # name program [shard total | --gtest_filter=...]
  local n=$1 p=$2 s b rc extra=(); s=$(date +%s); b=$(( TEST_END - s ))
  [ "$b" -lt 10 ] && { echo "$n: not started (test budget spent)"; return; }
  case "${3:-}" in
    --gtest*) extra=("$3") ;;
    ?*) export GTEST_SHARD_INDEX=$3 GTEST_TOTAL_SHARDS=$4 ;;
  esac
  timeout "$b" "$p" --gtest_brief=1 "${extra[@]}" > "$L/$n.log" 2>&1; rc=$?
  printf "%-30s rc=%-3s %4ss passed %-3s failed %-3s skipped %-3s%s\n" "$n" "$rc" \
    "$(( $(date +%s) - s ))" "$(count PASSED "$L/$n.log")" "$(count FAILED "$L/$n.log")" \
    "$(count SKIPPED "$L/$n.log")" "$([ "$rc" = 124 ] && echo ' cut by the budget: not a pass')"
}
export -f run_test count; export L TEST_END
JOBS_FILE=$L/jobs.txt; : > "$JOBS_FILE"; : > "$L/tests.txt"
# ONLY="a b=Filter*:Other*": just those programs (b with a gtest filter), all at once: a
# follow-up to a pass that cut or failed them, or the programs a merge touched.
if [ -n "${ONLY:-}" ]; then
  for e in $ONLY; do
    n=${e%%=*}
    if [ "$n" = "$e" ]; then echo "$n $PB/tests/$n" >> "$JOBS_FILE"
    else echo "$n $PB/tests/$n --gtest_filter=${e#*=}" >> "$JOBS_FILE"; fi
  done
  GEMM_SHARDS=0; LONG=""
else
  run_test gemm_vs_default_gpu_test "$PB/tests/gemm_vs_default_gpu_test" | tee "$L/tests.txt"
  GEMM_SHARDS=${GEMM_SHARDS:-3}
  LONG="analysis_gpu_test rowwise_gpu_test gemm_fp8_gpu_test rowwise_ops_gpu_test isolation_gemm_gpu_test"
fi
# The GEMM shards first (the longest), so the pool drains evenly.
for i in $(seq 0 $(( GEMM_SHARDS - 1 ))); do
  echo "gemm_gpu_test.$i $PB/tests/gemm_gpu_test $i $GEMM_SHARDS" >> "$JOBS_FILE"
done
# Then the other long programs (the sixth session's pass cut analysis and rowwise at the end of
# the queue), then the rest.
for n in $LONG; do [ -x "$PB/tests/$n" ] && echo "$n $PB/tests/$n" >> "$JOBS_FILE"; done
for p in "$PB"/tests/*_gpu_test; do
  n=$(basename "$p"); [ -n "${ONLY:-}" ] && break
  case " gemm_vs_default_gpu_test gemm_gpu_test $LONG " in
    *" $n "*) ;;
    *) echo "$n $p" >> "$JOBS_FILE" ;;
  esac
done
xargs -P "${JOBS:-4}" -L 1 bash -c 'run_test "$0" "$1" ${2:-} ${3:-}' < "$JOBS_FILE" \
  | tee -a "$L/tests.txt"

# 2. The fair benches in the time left (15 s kept for the table and the tarball).
BB_S=$(( $(left) - 15 ))
if [ "$BB_S" -gt 40 ]; then
  BB=$PB/bench REPS=${REPS:-2} BUDGET_S=$(( BB_S - 30 )) OUT=$L PROGRAMS=${PROGRAMS:-gemm rowwise} \
    GEMM_TIMEOUT=$(( BB_S / 3 )) ROWWISE_TIMEOUT=40 \
    GEMM_SHAPES=${GEMM_SHAPES:-4096x4096x4096,4096x6144x4096,4096x4096x14336,1024x14336x4096,16x6144x4096,16x4096x4096,16x28672x4096,16x4096x14336} \
    bash dev/bench_device.sh > "$L/fair.log" 2>&1
else echo "fair benches: skipped ($(left) s left)" | tee "$L/fair.log"; fi
tar -czf "$OUT/gpu_pass_logs.tgz" -C "$L" .
[ -f "$L/tune.txt" ] && { echo "== tuning time"; cat "$L/tune.txt"; }
[ -f "$L/suite.txt" ] && { echo "== the main job's winners"; cat "$L/suite.txt"; }
echo "== GPU tests"; cat "$L/tests.txt"
echo "== fair benches"; tail -40 "$L/fair.log"
echo "total $(( $(date +%s) - T0 ))s"
