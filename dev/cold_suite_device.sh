#!/usr/bin/env bash
# GPU machine (carry .devwork/search, staged by `BASE=<main's build dir> bash dev/regret_stage.sh
# DEST`): where the cold LLM suite's wall goes per key, and this tree against the base, cold
# (`ktune tune gemm --suite llm`: empty KTUNE_CACHE_DIR, fresh CUDA_CACHE_PATH, its own
# KTUNE_TIMELINE; compile workers on, isolation on), interleaved per pair (VARIANTS: base, this;
# `ahead4` ran this with KTUNE_RACE_AHEAD=4, a probe of a reverted commit: bench/NOTES.md). Then the
# GPU regret at the keys where this tree compiles other configs (REGRET_ONLY, `ktune regret --only`,
# exhaustive side at EXH_BUDGET x budgets), then more pairs while DEADLINE allows, then one cold
# 4096^3 pair (ONE=1). Tables last (dev/suite_timeline.py per run). VARIANTS: the order within a
# pair (default "base this"); REGRET=0 skips the regret; RUN_MIN: seconds a suite run needs
# left before DEADLINE to start (default 22). Every run's files are written under $OUT/cs at once,
# packed into $OUT/cs.tgz at the end (the device tool returns a limited number of files).
#   OUT=$OUT PAIRS=3 DEADLINE=180 bash dev/cold_suite_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=$OUT/cs; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s); DEADLINE=${DEADLINE:-180}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
[ -d pb ] || tar -xJf pb.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$W/gpu.txt"
nproc >> "$W/gpu.txt"
bin() { [ "$1" = base ] && echo "$PWD/pb/base/tools/ktune" || echo "$PWD/pb/tools/ktune"; }
run() {  # variant tag args...: one cold run
  local v=$1 tag=$2; shift 2
  local S; S=$(date +%s.%N); local extra=()
  [ "$v" = ahead4 ] && extra=(KTUNE_RACE_AHEAD=4)
  env "${extra[@]}" KTUNE_COMPILE_PROCESSES=1 KTUNE_CACHE_DIR=/tmp/cswork/kc-$tag CUDA_CACHE_PATH=/tmp/cswork/cc-$tag \
    KTUNE_TIMELINE=$W/$tag.tl timeout 60 "$(bin "$v")" tune gemm "$@" --json > "$W/$tag.json" 2> "$W/$tag.err"
  local rc=$?
  echo "RUN $v $tag rc=$rc wall $(awk -v a="$S" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')" \
    | tee -a "$W/walls.txt"
  rm -rf "/tmp/cswork/kc-$tag" "/tmp/cswork/cc-$tag"
}
pair() {  # i (ALT=1: the order of VARIANTS reversed in the even pairs)
  local order="${VARIANTS:-base this}"
  [ "${ALT:-0}" = 1 ] && [ $(( $1 % 2 )) = 0 ] && order=$(echo "$order" | tr ' ' '\n' | tac | tr '\n' ' ')
  for v in $order; do
    [ "$(left)" -gt "${RUN_MIN:-22}" ] || return 1
    run "$v" "suite_${v}_$1" --suite llm
  done
}
pair 1
# The GPU regret where this tree leaves kinds out (decode rows): exhaustive (every kind) against
# guided, the two winners re-timed interleaved.
if [ "${REGRET:-1}" = 1 ] && [ "$(left)" -gt 40 ]; then
  l=$(( $(left) - 25 ))
  timeout "$l" pb/tools/ktune regret --set gpu --ops gemm --rounds 4 \
    --exhaustive-budget "${EXH_BUDGET:-0.2}" --cache /tmp/cswork/kc-regret --deadline $(( l - 12 )) \
    --only "${REGRET_ONLY:-decode 16x28672x4096|decode 16x6144x4096|decode 8x28672x4096}" \
    > "$W/regret.txt" 2> "$W/regret.err"
  echo "regret rc=$?" >> "$W/regret.txt"; rm -rf /tmp/cswork/kc-regret
fi
for i in $(seq 2 "${PAIRS:-3}"); do pair "$i" || break; done
if [ "${ONE:-1}" = 1 ]; then
  for v in base this; do
    [ "$(left)" -gt 8 ] && run "$v" "one_$v" --m 4096 --n 4096 --k 4096 --layout NT --quiet
  done
fi
echo "== per key (ms)"
for f in "$W"/suite_*.tl; do
  t=$(basename "$f" .tl); python3 dev/suite_timeline.py "$f" "$W/$t.json" "$t" 2>&1 | tail -n +2
done | cut -c1-160
echo "== regret"; grep -v "^$" "$W/regret.txt" 2>/dev/null | cut -c1-200
echo "== walls"; cat "$W/walls.txt"
echo "total $(( $(date +%s) - T0 )) s"
# One archive back (the device tool returns a limited number of files); loose files only when cut.
tar -czf "$OUT/cs.tgz" -C "$W" . && rm -rf "$W"
