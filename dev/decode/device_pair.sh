#!/bin/bash
# GPU machine, one call (issue 32, ninth session: the pair splitting A's rows, DC_GRID = 7). Binaries
# from pb/ (bash dev/decode/stage.sh), logs under $OUT; each step is skipped when the call's DEADLINE
# (s) would be passed:
#   1. the GemmGpu.Decode* tests in parallel processes (TESTS: ';'-separated filters), TEST_S s; if
#      the first two (by default the pair's own test and DecodeTmaVsReference) do not pass, the
#      benches run without DC_GRID = 7 (an overlay of the shipped decode list less those configs);
#   2. NCU=1: ncu of NCU_ONLY (gemm_bench --profile --only, X@MxNxK per shape) at NCU_SHAPES with the
#      linear read of the same bytes and cuBLASLt #0: duration, DRAM and L2 bytes and %, grid, waves,
#      plus the WarpStateStats and ComputeWorkloadAnalysis sections (stall reasons, pipe use);
#      NCU_EXTRA: more ncu arguments (e.g. --section Occupancy --section LaunchStats);
#      PROBE_FILE: a gemm_bench --curated overlay for the benches and ncu (dropped if tests 1-2 fail);
#   3. PROCS processes of gemm_bench --kinds=$KINDS --shapes=$SHAPES --rounds=$ROUNDS (BENCH_S s
#      each, the last cut at what the deadline leaves), after process 1 SUITE=1: `ktune tune gemm
#      --suite llm` on an empty cache and database (SUITE_S s) and dev/decode/suite_decode.py;
#      the short view per process, process 1's pre-pass (TOP fastest per shape, mode and variant).
set -uo pipefail
source "$(dirname "$0")/common.sh"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/summary.txt") 2>&1
start_deadline 250
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv,noheader
if [ "${BUILD:-0}" = 1 ]; then  # no staged pb/: build here (carry .devdeps with benchmark.tar, the
  # Google Benchmark files of the dev machine, which the GPU machine lacks)
  S=$(date +%s); mkdir -p /opt/deps && tar -C /opt/deps -xf .devdeps/benchmark.tar
  bash dev/device_build.sh gemm_gpu_test gemm_bench ktune ktune-worker > "$OUT/build.log" 2>&1 ||
    { tail -40 "$OUT/build.log"; exit 1; }
  for f in tests/gemm_gpu_test bench/gemm_bench tools/ktune tools/ktune-worker; do
    mkdir -p "pb/$(dirname "$f")" && ln -sf "/tmp/kb/$f" "pb/$f"
  done
  mkdir -p pb/lib && cp -L /opt/deps/usr/lib/x86_64-linux-gnu/libbenchmark.so.1debian pb/lib/
  echo "build $(( $(date +%s) - S ))s"
fi
B=$PWD/pb
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KTUNE_CACHE_DIR=/tmp/kcache
S=$(date +%s)
start_gpu_tests "GemmGpu.DecodeTmaPair*;GemmGpu.DecodeTmaVsReference;GemmGpu.DecodeFused*:GemmGpu.DecodeOp*;GemmGpu.DecodeWgmma*:GemmGpu.DecodeVs*:GemmGpu.DecodeFma*" 50
rcs=""; for p in "${PIDS[@]}"; do wait "$p"; rcs="$rcs $?"; done
echo "tests rc:$rcs ($(( $(date +%s) - S ))s)"
grep -hE "^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure|bad," "$OUT"/test*.log | head -30
CUR=(); [ -n "${PROBE_FILE:-}" ] && CUR=(--curated="$PROBE_FILE")
if [ -n "${PROBE_FILE:-}" ] && { ! grep -q "^\[  PASSED  \]" "$OUT/test1.log" || ! grep -q "^\[  PASSED  \]" "$OUT/test2.log"; }; then
  CUR=(); echo "tests 1-2 not passed: benches without $PROBE_FILE"
elif ! grep -q "^\[  PASSED  \]" "$OUT/test1.log" || ! grep -q "^\[  PASSED  \]" "$OUT/test2.log"; then
  python3 - "$OUT/nopair.json" <<'EOF'
import json, sys
d = json.load(open("templates/gemm/curated.json"))
lv = d["kernels"]["decode"]
for k in lv:
    lv[k] = [e for e in lv[k] if e["config"].get("DC_GRID") != 7]
d["kernels"] = {"decode": lv}
json.dump(d, open(sys.argv[1], "w"))
EOF
  CUR=(--curated="$OUT/nopair.json"); echo "tests 1-2 not passed: benches without DC_GRID=7"
fi
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null && fits "${NCU_S:-30}" ncu; then
  S=$(date +%s)
  timeout "${NCU_S:-30}" ncu --clock-control none -k 'regex:ktune_gemm_decode|ktune_read_bound|nvjet|sm90|gemm' \
    --section WarpStateStats --section ComputeWorkloadAnalysis ${NCU_EXTRA:-} \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,launch__grid_size,launch__waves_per_multiprocessor \
    "$B/bench/gemm_bench" --kinds=decode "${CUR[@]}" --profile --only="${NCU_ONLY:-}" --shapes="${NCU_SHAPES:-128x4096x4096}" \
    > "$OUT/ncu.txt" 2>&1
  echo "ncu rc=$? $(( $(date +%s) - S ))s"
  grep -E "^PROFILE|^  [a-zA-Z_0-9]+.*\(|gpu__time|dram__|lts__|launch__|Warp Cycles Per Issued|Issue Slots Busy|Executed Ipc A|stalled|pipeline is|ERROR" \
    "$OUT/ncu.txt" | cut -c1-200 | head -${NCU_LINES:-90}
fi
n=0
for p in $(seq 1 "${PROCS:-2}"); do
  fits 20 "bench $p" || break
  lim=${BENCH_S:-90}; [ "$(left)" -lt "$lim" ] && lim=$(( $(left) - 5 ))
  S=$(date +%s)
  timeout "$lim" "$B/bench/gemm_bench" --kinds=${KINDS:-decode} "${CUR[@]}" --shapes=${SHAPES:-decode} \
    --rounds=${ROUNDS:-3} > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
  echo "bench $p rc=$? $(( $(date +%s) - S ))s (limit $lim)"; n=$p
  if [ "$p" = 1 ] && [ "${SUITE:-1}" = 1 ] && fits "${SUITE_S:-25}" suite; then
    run_suite "${SUITE_S:-25}"
  fi
done
grep -h "^VERIFY" "$OUT"/bench*.log 2>/dev/null | grep -v " ok " | head -10
for p in $(seq 1 "$n"); do  # the short view: JIT, cuBLASLt best, read, gate/up, residual (us)
  echo "== process $p: $(grep -c '^RESULT .* ktune ' "$OUT/bench$p.log") rows"
  grep -E "^RESULT .* (ktune|read_bound) " "$OUT/bench$p.log" | awk '{printf "%s %s %s; ", $3, $4, $5} END {print ""}' | cut -c1-3000
done
[ "$n" -ge 1 ] && { echo "== process 1 pre-pass: the ${TOP:-3} fastest per shape, mode and variant (us)";
                    python3 dev/decode/prepass_top.py "${TOP:-3}" < "$OUT/bench1.err" | head -${TOP_LINES:-150}; }
echo "call wall $(( $(date +%s) - T0 ))s"
# Few files come back from a call: the logs in one archive, the bench logs and the summary beside it.
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err ./*.json ./ncu.txt 2>/dev/null; rm -f test*.log ./*.err ncu.txt)
