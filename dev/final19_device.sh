#!/usr/bin/env bash
# The lead's final device call of the nineteenth session: ONE `nvidia-h200` call of at most DEADLINE
# seconds (default 330), on binaries staged by `bash dev/final19_stage.sh DEST` (this tree's as
# `GPU=1 bash dev/lead_stage.sh` stages them, the base's ktune in pb/base). The parts in priority
# order, each given what the ones before it left (a part that cannot fit is dropped; the table says so):
#   1. every GPU test program, run by dev/gpu_pass_device.sh as the eighteenth session's lead pass
#      ran them (JOBS=8, GEMM_SHARDS=4, PROGRAMS=none; cut at TEST_S, default min(280, DEADLINE -
#      TAIL_S - 10)); about 230 s there. Its TUNE and SUITE parts run here instead (2 and 3);
#   1b. issue 33's prefill list against cuBLASLt (dev/final19_prefill.sh, PREFILL_S seconds, default
#      62: 3 processes; PREFILL_S=0 skips it; its table appended to this one's);
#   2. the cold LLM suite (`ktune tune gemm --suite llm --json`: empty store, fresh CUDA_CACHE_PATH
#      and database, compile workers on, isolation on), base against this tree, PAIRS pairs
#      (default 3) interleaved, the order alternating per pair (about 16 s base, 9 s this); then
#      WARM_RUNS warm suites of each (the last pair's store, a fresh database; about 6 and 5 s each);
#   3. ONE_PAIRS (default 3) cold/warm pairs of 4096^3 NT, this tree, as gpu_pass's TUNE=1 runs them
#      (about 3.8 s a pair);
#   4. the GPU regret, guided against exhaustive (EXH_BUDGET x budgets, default 0.2) at REGRET_ONLY's
#      keys (`ktune regret --only`; default the 1- and 2-row and 16x4096x14336 decode keys).
# TESTS=0 skips part 1, PREFILL_S=0 part 1b, REGRET=0 part 4.
# Expected walls (the eighteenth session's lead pass and this session's first cold-suite call, H200):
# untar ~4 s, tests ~230 s, 3 suite pairs ~76 s, warm ~11 s, 4096^3 pairs ~12 s, regret ~25 s (3
# keys): about 360 s in all; at DEADLINE=330 the 4096^3 pairs and the regret are dropped. Give the
# device call timeout_s = DEADLINE + 15. ONE_PAIRS=1 leaves the regret ~8 s more.
# Every log goes into ONE archive, $OUT/final19.tgz (re-packed after each part, so a call killed
# late still returns the parts done), the table also into $OUT/table.txt and last on stdout.
#   (dev machine, in the checkout, its build/ current: BASE=<the base's build dir> bash
#    dev/final19_stage.sh .devwork/lead; then carry [".devwork/lead"] and run)
#   cd .devwork/lead && OUT=$OUT DEADLINE=330 bash dev/final19_device.sh
# Dry run on the dev machine (simulated device; the GPU tests skip or are cut):
#   KTUNE_BACKEND=sim DEADLINE=90 TEST_S=15 REGRET_SET=ci REGRET_ONLY="ci 16x4096x4096" \
#     OUT=/tmp/f19out bash dev/final19_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/final19; WK=/tmp/final19-work
rm -rf "$W" "$WK"; mkdir -p "$W" "$WK"
T0=$(date +%s); DEADLINE=${DEADLINE:-330}; TAIL_S=${TAIL_S:-6}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
fits() { [ "$(left)" -ge $(( $1 + TAIL_S )) ]; }  # seconds a part needs, the table's time kept
cap() { local l=$(( $(left) - TAIL_S )); echo $(( l < $1 ? l : $1 )); }  # a run's timeout
drop() { echo "$*" | tee -a "$W/dropped.txt"; }
pack() { tar -czf "$OUT/final19.tgz.part" -C "$W" . && mv "$OUT/final19.tgz.part" "$OUT/final19.tgz"; }
[ -d pb ] || tar -xJf pb.tar.xz
PB=$PWD/pb
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader > "$W/gpu.txt" 2>/dev/null || echo "no nvidia-smi" > "$W/gpu.txt"
# The base's worker finds its own libktune.so at $ORIGIN/.. (pb/base): LD_LIBRARY_PATH would put
# this tree's first, so it stays empty for the base; this tree's lives in pb/api (lead_stage's layout).
bin() { [ "$1" = base ] && echo "$PB/base/tools/ktune" || echo "$PB/tools/ktune"; }
libs() { [ "$1" = base ] && echo "" || echo "$PB/api:$PB/lib"; }
for v in this base; do
  echo "$v: $(cat "$PB/${v/this/.}/COMMIT" 2>/dev/null || echo '?') $("$(bin $v)" --version 2>&1 | head -1)$(
    LD_LIBRARY_PATH=$(libs $v) ldd "$PB/${v/this/.}/tools/ktune-worker" | grep -q 'not found' \
      && echo ' WARNING: its ktune-worker cannot load its libraries')"
done > "$W/versions.txt"
cat "$W/gpu.txt" "$W/versions.txt"

# 1. The GPU test programs (dev/gpu_pass_device.sh; DEADLINE=1 there skips its fair benches).
# TESTS=0: not (a caller that runs them elsewhere, e.g. on another GPU: dev/final20_device.sh).
if [ "${TESTS:-1}" = 1 ]; then
  TEST_S=${TEST_S:-$(( DEADLINE - TAIL_S - 10 < 280 ? DEADLINE - TAIL_S - 10 : 280 ))}
  OUT=$W/gpu_pass DEADLINE=1 TEST_S=$TEST_S JOBS=${JOBS:-8} GEMM_SHARDS=${GEMM_SHARDS:-4} PROGRAMS=none \
    TUNE=0 SUITE=0 bash dev/gpu_pass_device.sh > "$W/gpu_pass.log" 2>&1
  cp /tmp/gpu-pass-logs/tests.txt "$W/tests.txt" 2>/dev/null
  grep -q "not started\|cut by the budget" "$W/tests.txt" 2>/dev/null && drop "GPU tests: some cut or not started at TEST_S=$TEST_S"
  echo "tests done at $(( $(date +%s) - T0 )) s"; pack
fi

# 1b. Issue 33's prefill list, fair method (dev/final19_prefill.sh; its logs in $W/prefill).
if [ "${PREFILL_S:-62}" -gt 0 ] && fits "${PREFILL_MIN:-40}"; then
  OUT=$W BUDGET=$(cap "${PREFILL_S:-62}") PROCS_MAX=${PREFILL_PROCS:-3} bash dev/final19_prefill.sh \
    > "$W/prefill.log" 2>&1; rc=$?
  echo "prefill done at $(( $(date +%s) - T0 )) s (rc=$rc)"; pack
elif [ "${PREFILL_S:-62}" -gt 0 ]; then drop "prefill list ($(left) s left)"; fi

# One ktune run: kt variant timeout tag args...; E (an array) holds its environment.
# GAP_S (default 0.6) seconds before each run: a process started right after another's exit waits in
# cuInit behind the previous one's GPU-context teardown (248-465 ms against 59-98 ms), which no lone run pays.
kt() {
  local v=$1 s=$2 tag=$3 t; shift 3; sleep "${GAP_S:-0.6}"; t=$(date +%s.%N)
  env "${E[@]}" LD_LIBRARY_PATH="$(libs "$v")" KTUNE_COMPILE_PROCESSES=1 timeout "$s" "$(bin "$v")" "$@" \
    > "$W/$tag.json" 2> "$W/$tag.err"
  echo "$tag $v rc=$? wall $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')" | tee -a "$W/walls.txt"
}
# 2. The LLM suite, cold pairs then one warm run of each. The last cold store per variant is kept.
declare -A LAST=()
suite_cold() {  # variant pair
  local v=$1 i=$2 d=$WK/suite_$1_$2 tag=suite_cold_$1_$2
  mkdir -p "$d"
  E=(KTUNE_CACHE_DIR="$d/kc" CUDA_CACHE_PATH="$d/cc" KTUNE_DB="$d/kc/db.json" KTUNE_TIMELINE="$W/$tag.tl")
  kt "$v" "$(cap 60)" "$tag" tune gemm --suite llm --json
  python3 dev/suite_winners.py "$W/$tag.json" > "$W/winners_$tag.txt" 2>&1
  [ -n "${LAST[$v]:-}" ] && rm -rf "${LAST[$v]}"
  LAST[$v]=$d
}
need() { [ "$1" = base ] && echo "${SUITE_MIN_BASE:-20}" || echo "${SUITE_MIN_THIS:-13}"; }
for i in $(seq 1 "${PAIRS:-3}"); do
  order="base this"; [ $(( i % 2 )) = 0 ] && order="this base"
  fits $(( $(need base) + $(need this) )) || { drop "suite pairs $i..${PAIRS:-3} ($(left) s left)"; break; }
  for v in $order; do suite_cold "$v" "$i"; done
done
# WARM_RUNS (default 2) warm runs of each, interleaved; each on a fresh database, so a later run's
# store holds what the earlier warm races compiled (a store as a user's second day sees it).
for r in $(seq 1 "${WARM_RUNS:-2}"); do
  for v in base this; do
    d=${LAST[$v]:-}
    [ -n "$d" ] || continue
    fits "${WARM_MIN:-9}" || { drop "warm suite $v run $r ($(left) s left)"; continue; }
    E=(KTUNE_CACHE_DIR="$d/kc" CUDA_CACHE_PATH="$d/cc" KTUNE_DB="$d/kc/db.warm$r.json" \
       KTUNE_TIMELINE="$W/suite_warm_${v}_$r.tl")
    kt "$v" "$(cap 40)" "suite_warm_${v}_$r" tune gemm --suite llm --json
    python3 dev/suite_winners.py "$W/suite_warm_${v}_$r.json" > "$W/winners_suite_warm_${v}_$r.txt" 2>&1
  done
done
rm -rf "$WK"/suite_*; pack

# 3. 4096^3 NT, cold (empty store, fresh CUDA cache) then warm (that store, a fresh database).
# ONE_BASE=1: the base too, each pair's order alternating (tags tune_<run>_<i> this, tune_<run>_<i>_base).
for i in $(seq 1 "${ONE_PAIRS:-3}"); do
  fits "${ONE_MIN:-8}" || { drop "4096^3 pairs $i..${ONE_PAIRS:-3} ($(left) s left)"; break; }
  vs="this"; [ "${ONE_BASE:-0}" = 1 ] && { vs="this base"; [ $(( i % 2 )) = 0 ] && vs="base this"; }
  for v in $vs; do
    sfx=""; [ "$v" = base ] && sfx=_base
    for run in cold warm; do
      d=$WK/kc-tune-$i$sfx
      E=(CUDA_CACHE_PATH="$WK/cc-tune-$i$sfx" KTUNE_CACHE_DIR="$d" KTUNE_DB="$d/db.$run.json")
      kt "$v" "$(cap 30)" "tune_${run}_$i$sfx" tune gemm --m 4096 --n 4096 --k 4096 --layout NT --json
    done
  done
done
pack

# 4. The GPU regret (in-process; rows printed as each key ends; no key starts after --deadline).
if [ "${REGRET:-1}" = 1 ] && fits "${REGRET_MIN:-20}"; then
  l=$(( $(left) - TAIL_S ))
  CUDA_CACHE_PATH=$WK/cc-regret LD_LIBRARY_PATH="$(libs this)" timeout "$l" "$PB/tools/ktune" regret \
    --set "${REGRET_SET:-gpu}" --ops gemm --rounds 4 --exhaustive-budget "${EXH_BUDGET:-0.2}" \
    --cache "$WK/kc-regret" --deadline $(( l > 24 ? l - 12 : l / 2 )) \
    --only "${REGRET_ONLY:-decode 1x4096x4096 NT|decode 2x4096x4096 NT|decode 16x4096x14336 NT}" \
    > "$W/regret.txt" 2> "$W/regret.err"
  rc=$?; echo "regret rc=$rc" >> "$W/regret.txt"
  [ "$rc" = 124 ] && drop "regret cut at ${l} s (rows above it done)"
elif [ "${REGRET:-1}" = 1 ]; then drop "regret ($(left) s left)"; fi
rm -rf "$WK"

python3 dev/final19_table.py "$W" > "$W/table.txt" 2>&1
[ -f "$W/prefill/table.txt" ] && { echo; echo "prefill (issue 33)"; cat "$W/prefill/table.txt"; } >> "$W/table.txt"
echo "total $(( $(date +%s) - T0 )) s of DEADLINE=$DEADLINE" >> "$W/table.txt"
pack; cp "$W/table.txt" "$OUT/table.txt"
echo; cat "$W/table.txt"
