#!/usr/bin/env bash
# GPU machine, one short call: `ktune regret` on named keys only (a re-check of one regret run's
# misses after a change, and the keys its deadline cut), each --only TEXT its own process with its
# own fresh store and databases (so the guided side has no tuned neighbours: the prior starts from
# its static score), all against one DEADLINE (seconds, default 70). Binaries from pb.tar.xz
# (dev/regret_stage.sh). Usage: DEADLINE=70 SKIP=57 bash dev/regret_misses.sh 'gemm:64x6144x4096 NT' ...
# An argument is OPS:TEXT (OPS as --ops takes it); SKIP=N first runs the GEMM set's spread order
# past its first N keys (what a deadline cut).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s); DEADLINE=${DEADLINE:-70}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
[ -f pb.tar.xz ] && [ ! -d pb ] && tar -xJf pb.tar.xz
K=$PWD/pb/tools/ktune
"$K" --version > /dev/null 2>&1 || { echo "no runnable $K"; exit 1; }
R="$OUT/regret_misses.txt"; : > "$R"
one() {  # label, then ktune regret's arguments
  local label=$1; shift
  local l; l=$(left); [ "$l" -gt 8 ] || { echo "$label: skipped (deadline)" >> "$R"; return; }
  echo "== $label" >> "$R"
  timeout "$l" "$K" regret --set "${SET:-gpu}" --rounds 4 --exhaustive-budget "${EXH_BUDGET:-0.2}" \
    --cache "$(mktemp -d /tmp/rm.XXXX)" --deadline $(( l - 6 )) "$@" 2>> "$OUT/regret_misses.err" |
    grep -v "^shape\|^$\|exhaustive side's" >> "$R"
}
[ -n "${SKIP:-}" ] && one "gemm, spread order past $SKIP" --ops gemm --skip "$SKIP"
for a in "$@"; do one "$a" --ops "${a%%:*}" --only "${a#*:}"; done
cut -c1-200 "$R"; echo "total $(( $(date +%s) - T0 ))s"
