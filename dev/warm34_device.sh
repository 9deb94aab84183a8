#!/usr/bin/env bash
# GPU machine (carry .devwork/warm, staged by `BASE=<base build> bash dev/regret_stage.sh
# .devwork/warm` from the checkout's root): issue 34's warm 4096^3 with the early wave
# (KTUNE_EARLY_JIT, autotune/tuning_run_early.cc) against the base build and against this build
# with KTUNE_EARLY_JIT=0, in alternating order (one shared store filled by one cold run, fresh
# databases, 0.6 s before each run); then the warm LLM suite (NS runs each); then the cold 4096^3
# in COLD rotated pairs (each build's own empty store). Every part is dev/warm_time_device.sh;
# logs in $OUT/{w,s,c<i>}/warm.tgz, tables printed by each part (dev/warm_timeline.py).
# DEADLINE: no part starts after this many seconds.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
D=${DEADLINE:-170}
left() { echo $(( D - SECONDS )); }
# WARM_WHOS: the warm part's builds (default "base this noearly").
echo "== warm 4096^3: ${WARM_WHOS:-base this noearly}, ${N:-6} rounds"
OUT=$OUT/w WHOS="${WARM_WHOS:-base this noearly}" BUILD_noearly=this ENV_noearly="KTUNE_EARLY_JIT=0" SHARE=1 \
  PREP=1 ALT=1 N=${N:-6} GAP=0.6 SUITE=0 DEADLINE=$(( $(left) < ${W_S:-50} ? $(left) : ${W_S:-50} )) \
  bash dev/warm_time_device.sh 2>&1 | tail -${TAIL:-60}
if [ "$(left)" -gt 25 ] && [ "${NS:-2}" -gt 0 ]; then
  echo "== warm LLM suite: base / this, ${NS:-2} rounds"
  OUT=$OUT/s WHOS="base this" SHARE=1 SHAPE_RUNS=0 PREP=1 ALT=1 NS=${NS:-2} GAP=0.6 \
    DEADLINE=$(( $(left) < ${S_S:-45} ? $(left) : ${S_S:-45} )) bash dev/warm_time_device.sh 2>&1 |
    grep -E "rc=|wall|suite" | tail -20
fi
for i in $(seq 1 "${COLD:-4}"); do
  [ "$(left)" -gt 6 ] || break
  W2="base this"; [ $((i % 2)) = 0 ] && W2="this base"
  OUT=$OUT/c$i WHOS="$W2" SHARE=0 SUITE=0 N=0 PREP=0 GAP=0.6 bash dev/warm_time_device.sh 2>&1 |
    grep "rc="
done
echo "== done at ${SECONDS}s"
