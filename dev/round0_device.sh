#!/usr/bin/env bash
# GPU machine (carry .devwork/warm: dev/device_compare_stage.sh's staging plus warm_floor_probe,
# built by dev/warm_floor_probe.cc's line): FLOOR_BEFORE probe processes (what one warm 4096^3
# cannot avoid on this host, without ktune), then dev/warm_time_device.sh's warm A/B (its
# variables pass through: WHOS, N, NS, PREP, ALT, SHARE, DEADLINE; the finalists' rounds in its
# tables), then FLOOR_AFTER probes, each 0.6 s after the last process as the A/B's runs are. The
# probe's marks in $OUT/floor.txt (ms from the shell's start; "end": the shell's), medians last.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; : > "$OUT/floor.txt"
[ -d pb ] || tar -xJf pb.tar.xz
floor() {  # count tag
  for i in $(seq 1 "$1"); do
    sleep 0.6
    S=$(date +%s%N); ./warm_floor_probe "$S" > /tmp/floor1.txt 2>&1; E=$(date +%s%N)
    awk -v t="$2$i" '{print t, $0}' /tmp/floor1.txt >> "$OUT/floor.txt"
    awk -v t="$2$i" -v a="$S" -v b="$E" 'BEGIN{printf "%s FLOOR end %.1f\n", t, (b - a) / 1e6}' >> "$OUT/floor.txt"
  done
}
floor "${FLOOR_BEFORE:-2}" before
GPUTEST="" bash dev/warm_time_device.sh
floor "${FLOOR_AFTER:-3}" after
echo "== floor probe: ms from the shell's start, per process (before*, after*)"
python3 dev/floor_table.py "$OUT/floor.txt"
