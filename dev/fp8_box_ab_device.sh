#!/usr/bin/env bash
# GPU machine, issue 33: the one-box copies (a K-major operand's tile in one TMA box per stage)
# against 64-row boxes, in ONE call and in the same rounds: ktune's pick of each shape and its
# twins with the box probe knobs (TMA_ABOX / TMA_BBOX = 64, defines tma.cuh reads: A and B in
# 64-row boxes as before the one-box change; A's only; B's only) timed in the same interleaved
# rounds of each gemm_bench process against cuBLASLt (#0 and the best of its first 8).
# Staging (dev machine, in this tree, build/ current for gemm_bench, gemm_gpu_test,
# gemm_fp8_gpu_test, ktune, ktune-worker; a clean export of HEAD, so commit first):
#   bash dev/fp8_stage.sh <checkout>/.devwork/fp8     (then carry [".devwork/fp8"])
# Run (timeout_s = BUDGET + 30):
#   cd .devwork/fp8 && OUT=$OUT BUDGET=300 bash dev/fp8_box_ab_device.sh
# Steps, against a deadline of BUDGET seconds (300):
#   1. gemm_gpu_test $GEMM_FILTER (the box knobs' configs against float64 and cuBLASLt, the cluster
#      grid), cut at TEST_S (120): a map that disagreed with the kernel's copies hangs or fails here;
#   2. PROCS (3) gemm_bench processes, up to PROCS_MAX (5) while the time left holds one more (the
#      first cut at BENCH1_S, 120: cold compiles; the others at 1.3x the last wall + 5 s), each over
#      $SHAPES with ROUNDS (5) rounds: CL4E2 at 3000x5000x1000 NT and NN, B at 4096x6144x4096, P176
#      at 1024x14336x4096 ($PICKS, names of dev/fp8_device_common.sh), their twins A64+B64, A64, B64.
# Expected wall (estimated, not yet run): tests 30-60 s (31 cold compiles on 16 cores), the cold
# first process 30-60 s (its 12 kernels compiled in parallel up front, then kept in the store),
# warm ones 12-25 s: about 3-4 minutes with 5 processes, plus the machine's start. Everything (gpu.txt, run.log, tests.log/.txt,
# p<P>.txt/.err, table.txt) in ONE archive, $OUT/box_ab.tgz (re-packed after each step); the table
# last on stdout (dev/fp8_box_ab_table.py: twin / pick > 1 means the one-box pick is faster).
set -uo pipefail
RES=${OUT:-/tmp/out}; mkdir -p "$RES"
export OUT=/tmp/box_ab; rm -rf "$OUT"; mkdir -p "$OUT"
BUDGET=${BUDGET:-300} BUDGET_DEFAULT=300
pack() { tar -czf "$RES/box_ab.tgz.part" -C "$OUT" . && mv "$RES/box_ab.tgz.part" "$RES/box_ab.tgz"; }
trap pack EXIT
say() { echo "box_ab: $*" | tee -a "$OUT/run.log"; }
# Clocks into gpu.txt, gemm_bench checked to start (exit 1 if it does not), configs(), left(), at().
. dev/fp8_device_common.sh
TEST_S=${TEST_S:-120}
[ "$TEST_S" -gt $(( $(left) - 60 )) ] && TEST_S=$(( $(left) - 60 ))
if [ "$TEST_S" -ge 10 ]; then
  timeout -k 2 "$TEST_S" "$PB/tests/gemm_gpu_test" \
    --gtest_filter="${GEMM_FILTER:-GemmGpu.TmaBoxProbe*:GemmGpu.TmaClusterGrid*}" > "$OUT/tests.log" 2>&1
  say "$(at "tests (cap $TEST_S s) rc=$?")"
else
  say "tests skipped: $(left) s left" > "$OUT/tests.log"
fi
grep -hE "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|worst error|resident clusters" "$OUT/tests.log" \
  | cut -c1-160 > "$OUT/tests.txt"
pack
SHAPES=${SHAPES:-3000x5000x1000,3000x5000x1000:NN,4096x6144x4096,1024x14336x4096}
PICKS=${PICKS:-CL4E2@3000x5000x1000 B@4096x6144x4096 P176@1024x14336x4096}
ONLY=$(configs "$PICKS")
TW=""
for p in $PICKS; do
  n=${p%%@*}
  for v in +TMA_ABOX=64+TMA_BBOX=64 +TMA_ABOX=64 +TMA_BBOX=64; do TW="$TW $n$v${p#"$n"}"; done
done
TWIN=$(configs "$TW")
say "BUDGET $BUDGET s, $(left) s left, PROCS ${PROCS:-3} (up to ${PROCS_MAX:-5}), ROUNDS ${ROUNDS:-5}"
echo "only: $ONLY" >> "$OUT/run.log"; echo "twin: $TWIN" >> "$OUT/run.log"
CAP=${BENCH1_S:-120} WARM=25  # a process's cap; the time kept for each required process to come
for p in $(seq 1 "${PROCS_MAX:-5}"); do
  keep=$(( p < ${PROCS:-3} ? (${PROCS:-3} - p) * WARM : 0 ))
  s=$(( $(left) - 4 - keep ))
  [ "$s" -gt "$CAP" ] && s=$CAP
  if [ "$p" -gt "${PROCS:-3}" ] && [ "$s" -lt "$CAP" ]; then say "no process $p: $(left) s left"; break; fi
  if [ "$s" -lt 8 ]; then say "process $p skipped: $(left) s left"; break; fi
  s0=$(date +%s)
  timeout -k 2 "$s" stdbuf -oL "$PB/bench/gemm_bench" --kinds=tma --only="$ONLY" --twin="$TWIN" \
    --shapes="$SHAPES" --rounds="${ROUNDS:-5}" > "$OUT/p$p.txt" 2> "$OUT/p$p.err"
  rc=$?
  w=$(( $(date +%s) - s0 ))
  CAP=$(( w * 13 / 10 + 5 < 15 ? 15 : w * 13 / 10 + 5 )) WARM=$CAP
  say "$(at "process $p (cap $s s, wall $w s) rc=$rc")$([ "$rc" = 124 ] && echo ' CUT: its last shapes are lost')"
  grep -E "^VERIFY" "$OUT/p$p.txt" | grep -v " ok " | head -5 | tee -a "$OUT/run.log"
  pack
done
python3 dev/fp8_box_ab_table.py "$OUT"/p[0-9]*.txt > "$OUT/table.txt" 2>&1
say "$(at total)"
pack
cat "$OUT/gpu.txt" "$OUT/tests.txt"
echo "== the box probe (issue 33), $(sed -n 2p "$OUT/gpu.txt" | cut -d, -f1), ROUNDS ${ROUNDS:-5}: twin / pick > 1: the one-box pick faster"
cat "$OUT/table.txt"
