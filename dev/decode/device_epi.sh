#!/bin/bash
# GPU machine, one call (issue 32: the TMA body's epilogues at 32..128 rows, then 128 rows against
# cuBLASLt). Binaries from pb/ (bash dev/decode/stage.sh), logs under $OUT; each step is skipped when
# the call's DEADLINE (s) would be passed:
#   1. the GemmGpu.Decode* tests in parallel processes (TESTS: ';'-separated gtest filters), TEST_S s;
#   2. PROCS processes of gemm_bench --kinds=$KINDS --shapes=$SHAPES --rounds=$ROUNDS (BENCH_S s
#      each): per process the interleaved table (JIT, cuBLASLt default/best, the read bound, the
#      gate/up and residual ratios), then process 1's pre-pass (the TOP fastest per shape and variant);
#      BINS="gemm_bench gemm_bench_old ..." (files in pb/bench): process p runs the ((p-1) % n)-th,
#      an A/B of kernel sources in alternating processes; ONLY: gemm_bench --only (the configs timed);
#   3. NCU=1: ncu over the decode config NCU_CFG, the linear read of the same bytes and cuBLASLt's
#      heuristic #0 (gemm_bench --profile) at NCU_SHAPES: duration, DRAM and L2 throughput.
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble 110
start_gpu_tests "GemmGpu.DecodeTma*;GemmGpu.DecodeFused*;GemmGpu.DecodeWgmma*;GemmGpu.DecodeOp*;GemmGpu.DecodeVsReference:GemmGpu.DecodeFma*" 45
rcs=""; for p in "${PIDS[@]}"; do wait "$p"; rcs="$rcs $?"; done
echo "tests rc:$rcs ($(( $(date +%s) - T0 ))s)"
grep -hE "^\[ *(OK|FAILED|SKIPPED|PASSED) |Failure|bad," "$OUT"/test*.log | head -30
n=0; read -ra BL <<< "${BINS:-gemm_bench}"
ONLY_ARG=(); [ -n "${ONLY:-}" ] && ONLY_ARG=(--only="$ONLY")
for p in $(seq 1 "${PROCS:-2}"); do
  fits "${BENCH_S:-15}" "bench $p" || break
  S=$(date +%s); bin=${BL[$(( (p - 1) % ${#BL[@]} ))]}
  timeout "${BENCH_S:-15}" "$B/bench/$bin" --kinds=${KINDS:-decode} --shapes=${SHAPES:-32x4096x4096} \
    --rounds=${ROUNDS:-3} "${ONLY_ARG[@]}" > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
  echo "bench $p ($bin) rc=$? $(( $(date +%s) - S ))s"; n=$p
  # The short view: JIT, cuBLASLt best, read, gate/up and residual (us), then their ratios.
  grep -E "^RESULT .* (ktune|cublaslt_best|read_bound|silu_mul|residual) " "$OUT/bench$p.log" | awk '{printf "%s %s %s; ", $3, $4, $5} END {print ""}'
done
grep -h "^VERIFY" "$OUT"/bench*.log 2>/dev/null | grep -v " ok " | head -10
print_bench_tables "$([ "${TABLES:-1}" = 1 ] && echo "$n" || echo 0)" 260
[ "$n" -ge 1 ] && { echo "== process 1 pre-pass: the ${TOP:-4} fastest per shape, mode and variant (us)";
                    python3 dev/decode/prepass_top.py "${TOP:-4}" < "$OUT/bench1.err"; }
if [ "${NCU:-0}" = 1 ] && command -v ncu > /dev/null && fits "${NCU_S:-25}" ncu; then
  S=$(date +%s)
  timeout "${NCU_S:-25}" ncu --clock-control none -k 'regex:ktune_gemm_decode|ktune_read_bound|nvjet|sm90|gemm' \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,launch__grid_size,launch__waves_per_multiprocessor \
    "$B/bench/gemm_bench" --kinds=decode --profile --only="${NCU_CFG:-}" --shapes="${NCU_SHAPES:-128x4096x4096}" \
    > "$OUT/ncu.txt" 2>&1
  echo "ncu rc=$? $(( $(date +%s) - S ))s"
  grep -E "^PROFILE|^  [a-zA-Z_0-9]+.*\(|gpu__time|dram__|lts__|launch__|ERROR" "$OUT/ncu.txt" | cut -c1-160 | head -${NCU_LINES:-60}
fi
echo "call wall $(( $(date +%s) - T0 ))s"
