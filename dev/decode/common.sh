# Sourced by the decode device scripts (dev/decode/device_*.sh): the pieces every call repeats.
# Needs OUT (the call's output folder) and, for start_gpu_tests, B (the prebuilt tree's root).

# print_bench_tables N [WIDTH]: bench process 1..N's summary (from its "interleaved rounds" line),
# or, for a process cut before its summary, its RATIO and RESULT lines.
print_bench_tables() {
  local p w=${2:-230}
  for p in $(seq 1 "$1"); do
    echo "== process $p"
    if grep -q "interleaved rounds" "$OUT/bench$p.log"; then
      sed -n '/interleaved rounds/,$p' "$OUT/bench$p.log" | cut -c1-"$w"
    else
      grep -E "^RATIO|^RESULT" "$OUT/bench$p.log" | cut -c1-200
    fi
  done
}

# start_gpu_tests DEFAULT_FILTERS DEFAULT_SECONDS: gemm_gpu_test once per ';'-separated gtest filter
# ($TESTS, else the default), all at once, each with its own kernel cache, each cut at $TEST_S
# seconds (else the default); logs $OUT/test<i>.log; their pids in PIDS.
start_gpu_tests() {
  local f i=0 filters
  PIDS=()
  IFS=';' read -ra filters <<< "${TESTS:-$1}"
  for f in "${filters[@]}"; do
    i=$((i + 1))
    KTUNE_CACHE_DIR=/tmp/kcache$i timeout "${TEST_S:-$2}" "$B/tests/gemm_gpu_test" \
      --gtest_filter="$f" > "$OUT/test$i.log" 2>&1 &
    PIDS+=($!)
  done
}

# start_gpu_tests FILTERS S, waited for: the exit codes, the wall time and the results (at most
# GT_LINES lines, default 40).
gpu_tests() {
  local S
  S=$(date +%s)
  start_gpu_tests "$1" "$2"
  wait_gpu_tests "$S" "${GT_LINES:-40}" 220 "${PIDS[@]}"
}

# Waits for start_gpu_tests' PIDS (started at epoch START) and prints their exit codes, the wall
# time since START and at most LINES result lines, COLS columns wide.
wait_gpu_tests() {  # START LINES COLS PID...
  local start=$1 lines=$2 cols=$3 q rcs=""
  shift 3
  for q in "$@"; do wait "$q"; rcs="$rcs $?"; done
  echo "tests rc:$rcs ($(( $(date +%s) - start ))s)"
  grep -hE "^\[ *(OK|FAILED|PASSED) |Failure|bad," "$OUT"/test*.log 2>/dev/null | cut -c1-"$cols" | head -"$lines"
}

# The --only/--twin entries of $KEYS_AB ("SHAPE:CFG:CFG..." per key): every CFG@SHAPE, each key's
# configs in reverse order with `rev`.
list() {  # [rev]
  local key out="" cfgs c idx
  for key in $KEYS_AB; do
    IFS=: read -ra cfgs <<< "$key"
    idx=$(seq 1 $(( ${#cfgs[@]} - 1 )))
    [ "${1:-}" = rev ] && idx=$(seq $(( ${#cfgs[@]} - 1 )) -1 1)
    for c in $idx; do out="$out;${cfgs[$c]}@${cfgs[0]}"; done
  done
  echo "${out#;}"
}

# The --only/--twin entries of $KEYS ("SHAPE:CFG:CFG..." per key): every CFG@SHAPE beside the same
# config with $KNOB added, the pair's order swapped with `rev`.
knob_list() {  # [rev]
  local key cfg out="" cfgs i
  for key in $KEYS; do
    IFS=: read -ra cfgs <<< "$key"
    for i in $(seq 1 $(( ${#cfgs[@]} - 1 ))); do
      cfg=${cfgs[$i]}
      if [ "${1:-}" = rev ]; then out="$out;$cfg,$KNOB@${cfgs[0]};$cfg@${cfgs[0]}"
      else out="$out;$cfg@${cfgs[0]};$cfg,$KNOB@${cfgs[0]}"; fi
    done
  done
  echo "${out#;}"
}

# The call's deadline: T0 now, DL seconds (DEADLINE, else the script's default $1); left prints
# the seconds left, fits N WHAT says whether N more seconds fit (else prints that WHAT is skipped).
start_deadline() { T0=$(date +%s); DL=${DEADLINE:-$1}; }
# device_preamble SECONDS: a device script's start: $OUT, the output tee'd into $OUT/summary.txt
# (it survives a cut call), the deadline, the GPU's clocks, the staged binaries (B=pb and their
# libraries) and the kernel cache.
device_preamble() {
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
  exec > >(tee "$OUT/summary.txt") 2>&1
  start_deadline "$1"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv,noheader
  B=$PWD/pb
  export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export KTUNE_CACHE_DIR=/tmp/kcache
}
left() { echo $(( DL - ($(date +%s) - T0) )); }
fits() { [ "$(left)" -gt "$1" ] || { echo "skipped $2: $(left) s left"; return 1; }; }

# run_suite SECONDS: the main job (`ktune tune gemm --suite llm`) on an empty cache and database,
# then its winners per key and the decode keys' races (dev/suite_winners.py, suite_decode.py).
run_suite() {
  local S
  S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kc-suite KTUNE_DB=/tmp/kc-suite/db.json timeout "$1" "$B/tools/ktune" \
    tune gemm --suite llm --json > "$OUT/suite.json" 2> "$OUT/suite.err"
  echo "suite rc=$? wall $(( $(date +%s) - S ))s"
  python3 dev/suite_winners.py "$OUT/suite.json"
  python3 dev/decode/suite_decode.py "$OUT/suite.json"
}

# bench_procs DEFAULT_PROCS DEFAULT_SECONDS [gemm_bench args...]: PROCS (else the default) gemm_bench
# processes over SHAPES (ROUNDS), each cut at BENCH_S (else the default) or what the deadline
# leaves, cycling over the binaries of pb/bench named in BINS (default gemm_bench; each its own
# kernel cache: an A/B of kernel sources in alternating processes); logs $OUT/bench<p>.log/.err;
# n: the processes that ran.
bench_procs() {
  local p lim S bins bin procs=${PROCS:-$1} secs=${BENCH_S:-$2}
  shift 2
  n=0
  for p in $(seq 1 "$procs"); do
    fits 20 "bench $p" || break
    lim=$secs; [ "$(left)" -lt "$lim" ] && lim=$(( $(left) - 5 ))
    S=$(date +%s); bins=(${BINS:-gemm_bench}); bin=${bins[$(( (p - 1) % ${#bins[@]} ))]}
    KTUNE_CACHE_DIR=/tmp/kcache_$bin timeout "$lim" "$B/bench/$bin" --kinds=decode "$@" \
      --shapes="${SHAPES:-64x4096x4096,128x4096x4096}" --rounds="${ROUNDS:-3}" > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
    echo "bench $p $bin rc=$? $(( $(date +%s) - S ))s (limit $lim)"; n=$p
  done
}

# PROCS A/B processes of gemm_bench over the caller's `list` (its configs, each timed beside its
# twin), the list reversed in every second process; DEF_S seconds each unless BENCH_S. Sets n.
twin_procs() {  # DEF_S
  local p lim S rev
  n=0
  for p in $(seq 1 "${PROCS:-3}"); do
    fits 15 "bench $p" || break
    lim=${BENCH_S:-$1}; [ "$(left)" -lt "$lim" ] && lim=$(( $(left) - 3 ))
    rev=""; [ $((p % 2)) = 0 ] && rev=rev
    S=$(date +%s)
    KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "$lim" "$B/bench/gemm_bench" --kinds=decode \
      --only="$(list $rev)" --twin="$(list $rev)" --shapes="$SHAPES" --rounds="${ROUNDS:-5}" \
      > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
    echo "bench $p rc=$? $(( $(date +%s) - S ))s (limit $lim${rev:+, reversed})"; n=$p
  done
}

# `ktune tune gemm` at each key of $KEYS (NT, KTUNE_VERBOSE, one database per key, TUNE_S seconds
# each, while the deadline allows), then dev/decode/tunecmp.py's table of the picks.
tune_keys() {
  mkdir -p /tmp/kc-tune
  for key in $KEYS; do
    fits 6 "tune $key" || break
    IFS=x read -r m nn k <<< "$key"
    S=$(date +%s)
    KTUNE_VERBOSE=1 KTUNE_CACHE_DIR=/tmp/kc-tune KTUNE_DB=/tmp/kc-tune/db_$key.json \
      timeout "${TUNE_S:-15}" "$B/tools/ktune" tune gemm --m "$m" --n "$nn" --k "$k" --layout NT --json \
      > "$OUT/tune_$key.json" 2> "$OUT/tune_$key.err"
    echo "tune $key rc=$? $(( $(date +%s) - S ))s"
  done
  python3 dev/decode/tunecmp.py table "$OUT" $KEYS 2>&1 | cut -c1-260
}

# The tables last: `bench_procs N`'s tables, each process's pre-pass top (TOP), then the probe run
# $2 (its log and stderr in $OUT, under the title $3): its pre-pass and its RESULT lines; the
# call's wall; the logs packed.
final_tables() {
  local n=$1 probe=$2 title=$3
  print_bench_tables "$n" 250 | grep -v "^  ktune" | head -60
  for p in $(seq 1 "$n"); do
    echo "== process $p pre-pass: the ${TOP:-8} fastest per shape and mode (us)"
    python3 dev/decode/prepass_top.py "${TOP:-8}" < "$OUT/bench$p.err" | cut -c1-900
  done
  echo "== $title pre-pass (us)"; python3 dev/decode/prepass_top.py 12 < "$OUT/$probe.err" 2>/dev/null | cut -c1-900
  grep -E "^RESULT" "$OUT/$probe.log" 2>/dev/null | cut -c1-200 | head -12
  echo "call wall $(( $(date +%s) - T0 ))s"
  (cd "$OUT" && tar czf logs.tgz ./*.log ./*.err ./*.json 2>/dev/null; rm -f ./*.err ./tune_*.json)
}

# The call's wall time, then its logs (*.log, *.err) packed into $OUT/logs.tgz (the device tool
# returns only a few files by count).
end_call() {
  echo "call wall $(( $(date +%s) - T0 ))s"
  (cd "$OUT" && tar czf logs.tgz ./*.log ./*.err 2>/dev/null; rm -f ./*.err ./*.log)
}

# PINNED x NB processes cycling the binaries in `bins` (pb/bench/), each `--only=$PIN` over
# $PSHAPES for ROUNDS rounds, at most PIN_S s (default DEF), into $OUT/pinP.log/.err, each started
# only if FIT s are left; AFTER (a command, default none) runs after each. Sets np, the last one run.
run_pinned() {  # NB FIT DEF [AFTER]
  local nb=$1 fit=$2 def=$3 after=${4:-:} p bin lim s
  np=0
  for p in $(seq 1 $(( nb * ${PINNED:-3} ))); do
    fits "$fit" "pinned $p" || break
    bin=${bins[$(( (p - 1) % nb ))]}; lim=${PIN_S:-$def}; [ "$(left)" -lt "$lim" ] && lim=$(( $(left) - 3 ))
    s=$(date +%s)
    KTUNE_CACHE_DIR=/tmp/kcache_$bin timeout "$lim" "$B/bench/$bin" --kinds=decode,tma --only="$PIN" \
      --shapes="$PSHAPES" --rounds="${ROUNDS:-5}" > "$OUT/pin$p.log" 2> "$OUT/pin$p.err"
    echo "pinned $p $bin rc=$? $(( $(date +%s) - s ))s (limit $lim)"; np=$p
    $after
  done
}

# The paired A/B of a probe knob (the scripts' list() gives each config with and without it):
# gemm_bench process 0 compiles beside the knob's GPU test TEST (unless TESTS=none; TEST_DEF s),
# then PROCS (default 4) processes of ROUNDS (default 5) interleaved rounds, every even one with
# the pairs reversed, each while FIT_S seconds are left, capped at BENCH_S (default BENCH_DEF);
# then the VERIFY summary. Sets n: the processes run. Uses $B, $OUT, $SHAPES.
#   knob_ab TEST TEST_DEF C0_DEF FIT_S BENCH_DEF
knob_ab() {
  local test=$1 test_def=$2 c0_def=$3 fit_s=$4 bench_def=$5 S T p lim rev
  S=$(date +%s)
  PIDS=()
  [ "${TESTS:-}" != none ] && start_gpu_tests "$test" "${TEST_S:-$test_def}"
  KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "${C0_S:-$c0_def}" "$B/bench/gemm_bench" \
    --kinds=decode --only="$(list)" --twin="$(list)" --shapes="$SHAPES" --rounds=1 \
    > "$OUT/bench0.log" 2> "$OUT/bench0.err"
  echo "bench 0 (compiles; beside the tests) rc=$? $(( $(date +%s) - S ))s"
  [ "${#PIDS[@]}" -gt 0 ] && wait_gpu_tests "$S" 12 200 "${PIDS[@]}"
  n=0
  for p in $(seq 1 "${PROCS:-4}"); do
    fits "$fit_s" "bench $p" || break
    lim=${BENCH_S:-$bench_def}; [ "$(left)" -lt "$lim" ] && lim=$(( $(left) - 2 ))
    rev=""; [ $((p % 2)) = 0 ] && rev=rev
    T=$(date +%s)
    KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "$lim" "$B/bench/gemm_bench" --kinds=decode \
      --only="$(list $rev)" --twin="$(list $rev)" --shapes="$SHAPES" --rounds="${ROUNDS:-5}" \
      > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
    echo "bench $p rc=$? $(( $(date +%s) - T ))s (limit $lim${rev:+, reversed})"; n=$p
  done
  grep -h "^VERIFY" "$OUT"/bench*.log 2>/dev/null | grep -v " ok " | cut -c1-200 | head -6
  grep -hE "failed|error" "$OUT"/bench*.err 2>/dev/null | head -5
  echo "VERIFY ok: $(grep -h '^VERIFY' "$OUT"/bench*.log 2>/dev/null | grep -c ' ok ') of" \
    "$(grep -h '^VERIFY' "$OUT"/bench*.log 2>/dev/null | wc -l)"
}

# stage_trace LIMIT ONLY SHAPES: the per-stage trace (pb/bench/gemm_bench_stage, a DC_TRACE = 2
# build: dev/decode/trace_stage.sh) of the --only configs, at most LIMIT s (TRACE_S) and what the
# deadline leaves; its tables in $OUT/stages.txt, their event / steady-state lines printed.
stage_trace() {
  local lim=${TRACE_S:-$1} S
  [ "$lim" -gt $(( $(left) - 3 )) ] && lim=$(( $(left) - 3 ))
  S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_stage timeout "$lim" "$B/bench/gemm_bench_stage" --kinds=decode --trace=4 \
    --only="$2" --shapes="$3" > "$OUT/stage.log" 2> "$OUT/stage.err"
  echo "trace rc=$? $(( $(date +%s) - S ))s, $(grep -c '^DCT ' "$OUT/stage.log") block lines"
  python3 dev/decode/trace_stages.py < "$OUT/stage.log" > "$OUT/stages.txt" 2>&1
  grep -E "^(event|==|steady)" "$OUT/stages.txt" | cut -c1-220 | sed 's/DC_WG=2,//; s/DC_PF=1,//'
  gzip -f "$OUT/stage.log"
}

# d MT WARPS NT U DEPTH XR GRID: a TMA-fed decode config (DC_WG 2, one producer warp) as gemm_bench's
# --only takes it.
d() {  # MT WARPS NT U DEPTH XR GRID
  echo "DC_WG=2,DC_WARPS=$2,DC_NT=$3,DC_MT=$1,DC_U=$4,DC_DEPTH=$5,DC_PF=1,DC_XR=$6,DC_GRID=$7"
}
# v CFG KNOBS...: the config, then the config with each knob set (a key's A/B list entry).
v() {  # CFG KNOBS...: the config, then the config with each knob set
  local c=$1 out=$1 k; shift
  for k in "$@"; do out="$out:$c,$k"; done
  echo "$out"
}
