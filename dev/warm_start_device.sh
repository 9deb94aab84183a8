#!/usr/bin/env bash
# GPU machine (carry .devwork/warm: `[BASE=<other build>] bash dev/regret_stage.sh .devwork/warm`
# plus warm_floor_probe beside it, built by dev/warm_floor_probe.cc's line): the one-shape warm
# start-up (issue 34). 1. FLOOR1 lone floor probes and FLOOR2 pairs of probes started together (two
# processes starting the driver at once, as `ktune tune` and its worker do); 2.
# dev/warm_time_device.sh's warm 4096^3 A/B (its variables pass through: WHOS, BUILD_<who>,
# ENV_<who>, N, PREP, ALT, SHARE, GAP, SECOND, DEADLINE; SUITE=0 here); 3. FLOOR1 lone probes
# again; FLOOR_ENV: see below. Each probe 0.6 s after the last process. Probe marks in $OUT/floor.txt (ms from each
# probe's own start), tables last.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; : > "$OUT/floor.txt"
[ -d pb ] || tar -xJf pb.tar.xz
probe() {  # tag [VAR=value ...]: the probe with these variables
  local t=$1 S E; shift
  S=$(date +%s%N); env "$@" ./warm_floor_probe "$S" > "/tmp/fl_$t.txt" 2>&1; E=$(date +%s%N)
  set -- "$t"
  awk -v t="$1" '{print t, $0}' "/tmp/fl_$1.txt" >> "$OUT/floor.txt"
  awk -v t="$1" -v a="$S" -v b="$E" 'BEGIN{printf "%s FLOOR end %.1f\n", t, (b - a) / 1e6}' >> "$OUT/floor.txt"
}
for i in $(seq 1 "${FLOOR1:-2}"); do sleep 0.6; probe alone$i; done
for i in $(seq 1 "${FLOOR2:-2}"); do sleep 0.6; probe pair${i}a & probe pair${i}b & wait; done
# FLOOR_ENV="VAR=value ...": then as many lone probes and pairs with these variables (tags x*).
if [ -n "${FLOOR_ENV:-}" ]; then
  read -r -a fe <<< "$FLOOR_ENV"
  for i in $(seq 1 "${FLOOR1:-2}"); do sleep 0.6; probe xalone$i "${fe[@]}"; done
  for i in $(seq 1 "${FLOOR2:-2}"); do sleep 0.6; probe xpair${i}a "${fe[@]}" & probe xpair${i}b "${fe[@]}" & wait; done
fi
SUITE=0 GPUTEST="" bash dev/warm_time_device.sh
for i in $(seq 1 "${FLOOR1:-2}"); do sleep 0.6; probe after$i; done
echo "== floor probe: ms from each probe's start (alone*, after*: one process; pair*: two at once)"
python3 dev/floor_table.py "$OUT/floor.txt"
