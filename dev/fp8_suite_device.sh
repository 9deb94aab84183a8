#!/usr/bin/env bash
# GPU machine, issue 33: the main job's winners and the fair bench of the suite's prefill shapes in
# one call (binaries staged by dev/fp8_stage.sh into pb/, tools/ktune and its worker included;
# nothing is built here), steps in order against a deadline of BUDGET seconds:
#   1. the main job, `ktune tune gemm --suite llm --json`, with an empty cache and database of its
#      own (a fresh folder; SUITE_S at most), and its winners per key (dev/suite_winners.py);
#   2. dev/fp8_final_device.sh's copy rate and PROCS gemm_bench processes (fair method, cuBLASLt #0
#      and the best of 8 in the same process) over $SHAPES and $ONLY_NAMES, the GPU tests if TESTS=1;
#   3. NCU_CFG (a name of dev/fp8_device_common.sh, empty: skipped): ncu's source page (SASS with
#      PC-sampled warp stalls) of one launch at 4096^3, kept whole in $OUT/src.csv.
# Files back (at most 8): suite.json, suite.txt, gpu.txt, bench_P.txt, bench_err.tgz, src.csv.
# BUDGET (110) SUITE_S (40) PROCS (3)
set -uo pipefail
BUDGET_DEFAULT=110
. dev/fp8_device_common.sh
run_suite "${SUITE_S:-40}"
NCU_S=0
[ -n "${NCU_CFG:-}" ] && NCU_S=14
BUDGET=$(( $(left) - NCU_S )) TESTS=${TESTS:-0} bash dev/fp8_final_device.sh
if [ -n "${NCU_CFG:-}" ] && [ "$(left)" -gt 8 ]; then
  timeout $(( $(left) - 2 )) ncu --clock-control none -k 'regex:^ktune_gemm' --launch-count 1 \
    --section SourceCounters -f -o /tmp/ncu_src "$PB/bench/gemm_bench" --kinds=tma --profile \
    --only="${!NCU_CFG}" --profile_lt= --shapes=4096x4096x4096 > /dev/null 2>&1 &&
    ncu -i /tmp/ncu_src.ncu-rep --page source --csv --print-source sass > "$OUT/src.csv" 2>&1
  at "ncu source rc=$?"
fi
# The device tool returns at most 8 files: the benches' stderr (pre-pass lines) in one archive.
tar -czf "$OUT/bench_err.tgz" -C "$OUT" $(cd "$OUT" && ls bench_*.err 2>/dev/null) 2>/dev/null &&
  rm -f "$OUT"/bench_*.err
cat "$OUT/suite.txt"
