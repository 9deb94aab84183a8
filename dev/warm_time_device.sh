#!/usr/bin/env bash
# GPU machine (carry .devwork/warm, staged by `[BASE=<other build>] bash dev/regret_stage.sh
# .devwork/warm` from the checkout's root): where a warm tuning run's wall time goes (issue 34's warm path).
# Per build (WHOS: "this" = pb/tools, "base" = pb/base/tools): one cold 4096^3 NT and one cold LLM
# suite fill their own stores (empty cache, fresh CUDA_CACHE_PATH); then N warm 4096^3 runs and NS
# warm suites (the cold run's store, a fresh database), interleaved across builds, each with
# KTUNE_TIMELINE (base/timeline.h: marks from the tuner and its worker, one file per run) and the
# shell's own start and end (epoch); a build other than base and this runs pb/<who>/tools/ktune.
# ALT=1: see below. DEADLINE: see one(). EXTRA=1: one warm 4096^3 in process (KTUNE_ISOLATE=0) and one
# verbose warm 4096^3 and suite of the first build. PREP=1, SHARE=1, GPUTEST: see below. Logs in
# $OUT/warm.tgz; tables last
# (dev/warm_timeline.py).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/warmt; rm -rf "$W"; mkdir -p "$W"
[ -d pb ] || tar -xJf pb.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$W/gpu.txt"
WHOS=${WHOS:-this}; N=${N:-3}; NS=${NS:-2}
SHAPE=(--m "${SM:-4096}" --n "${SN:-4096}" --k "${SK:-4096}" --layout NT)  # SM/SN/SK: another shape
one() {  # who pass tag env... -- args...
  local who=$1 pass=$2 tag=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  # DEADLINE=s: no run starts after s seconds of this script (the device call's grant).
  if [ -n "${DEADLINE:-}" ] && [ "$SECONDS" -ge "$DEADLINE" ]; then echo "skip $who $pass $tag (deadline)"; return; fi
  # A build other than this and base: pb/<who>/tools (staged by STAGE_EXTRA, dev/regret_stage.sh).
  # BUILD_<who>=b: who runs build b's binaries (this, base, ...); ENV_<who>="V=x ...": with these
  # variables too (a knob's variant of a build timed beside it).
  local bv=BUILD_$who ev=ENV_$who b=$who xenv=(); [ -n "${!bv:-}" ] && b=${!bv}
  [ -n "${!ev:-}" ] && read -r -a xenv <<< "${!ev}" && envs+=("${xenv[@]}")
  local K=pb/tools/ktune; [ "$b" != this ] && K=pb/$b/tools/ktune
  local kind=shape; [ "$1" = --suite ] && kind=suite
  local C=/tmp/kc-$who-$kind S E rc
  [ "${SHARE:-0}" = 1 ] && C=/tmp/kc-$kind  # SHARE=1: one store for every build (same kernels)
  # KEEPDB=1: the database the last run left (a key tuned again, as an operator's second run).
  [ "$pass" = cold ] && rm -rf "$C"; [ "${KEEPDB:-0}" = 1 ] || rm -rf "$C/db"
  local name=${who}_${kind}_${pass}_$tag
  # GAP=s: a pause before each run, so no run starts inside the last one's driver teardown (an
  # operator's single command; back to back, the next cuInit queues behind it).
  [ -n "${GAP:-}" ] && sleep "$GAP"
  S=$(date +%s.%N)
  env "${envs[@]}" KTUNE_TIMELINE="$W/$name.tl" KTUNE_CACHE_DIR=$C \
    CUDA_CACHE_PATH=$( [ "$pass" = cold ] && mktemp -d || echo /tmp/nvc-unused ) \
    timeout 90 "$K" tune gemm "$@" --json --quiet > "$W/$name.json" 2> "$W/$name.err"
  rc=$?; E=$(date +%s.%N)
  echo "$name $rc $S $E" >> "$W/walls.txt"
  echo "$name rc=$rc wall $(awk -v a="$S" -v b="$E" 'BEGIN{printf "%.3f", b-a}')"
}
# SHARE=1: the first build's cold runs fill the one store; the kernels' sources must be the same.
COLDS=$WHOS; [ "${SHARE:-0}" = 1 ] && COLDS=${WHOS%% *}
# GPUTEST="prog ...": GPU test programs staged beside pb.tar.xz, run first (their logs in $OUT).
for g in ${GPUTEST:-}; do
  timeout "${GPUTEST_S:-120}" "./$g" > "$OUT/$g.txt" 2>&1; echo "$g rc=$?"; tail -3 "$OUT/$g.txt"
done
# SHAPE_RUNS=0: no single-shape runs (cold, prep or warm): the suite only.
[ "${SHAPE_RUNS:-1}" = 1 ] || N=0
[ "${SHAPE_RUNS:-1}" = 1 ] && for who in $COLDS; do one $who cold 0 -- "${SHAPE[@]}"; done
# SUITE=0: the single shape only.
[ "${SUITE:-1}" = 1 ] && for who in $COLDS; do one $who cold 0 -- --suite llm; done
# PREP=1: one unmeasured warm suite per build first: a warm race can reach configs its cold run
# did not (it then compiles them: bench/NOTES.md); after it the store holds them.
# PREP_ENV="K=V ...": the environment of those runs (KTUNE_VERBOSE=1: the race's batches in .err).
if [ "${PREP:-0}" = 1 ] && [ "${SUITE:-1}" = 1 ]; then
  for who in $WHOS; do one $who warm prep ${PREP_ENV:-} -- --suite llm; done
fi
# ...and one unmeasured warm single shape per build (a kernel of the build's own, such as the
# device comparison's, is compiled into the shared store by its first run).
if [ "${PREP:-0}" = 1 ] && [ "${SHAPE_RUNS:-1}" = 1 ]; then
  for who in $WHOS; do one $who warm prep -- "${SHAPE[@]}"; done
fi
# ALT=1: the builds' order alternates from one pair to the next (pair 1 as WHOS, pair 2 reversed).
order() { if [ "${ALT:-0}" = 1 ] && [ $(( $1 % 2 )) = 0 ]; then echo "$WHOS" | awk '{for(i=NF;i>0;i--) printf "%s ", $i}'; else echo "$WHOS"; fi; }
for i in $(seq 1 "$N"); do for who in $(order $i); do one $who warm $i -- "${SHAPE[@]}"; done; done
# SECOND=n: then n rounds of each build tuning the single shape again on the database the last
# run left, which holds the key (KEEPDB: the operator's second `ktune tune` of a tuned key).
for i in $(seq 1 "${SECOND:-0}"); do for who in $(order $i); do KEEPDB=1 one $who warm second$i -- "${SHAPE[@]}"; done; done
[ "${SUITE:-1}" = 1 ] || NS=0
for i in $(seq 1 "$NS"); do for who in $(order $i); do one $who warm $i -- --suite llm; done; done
if [ "${EXTRA:-0}" = 1 ]; then
  who=${WHOS%% *}
  one $who warm noiso KTUNE_ISOLATE=0 -- "${SHAPE[@]}"
  one $who warm verbose KTUNE_VERBOSE=1 -- "${SHAPE[@]}"
  one $who warm verbose KTUNE_VERBOSE=1 -- --suite llm
fi
tar czf "$OUT/warm.tgz" -C "$W" .
python3 dev/warm_timeline.py "$W"
# REACH=1: per suite run, what each key's race reached and compiled, and the race's owed classes
# and coverage picks (dev/warm_reach_table.py).
[ "${REACH:-0}" = 1 ] && python3 dev/warm_reach_table.py "$W" | tee "$OUT/reach.txt"
