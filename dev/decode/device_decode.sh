#!/bin/bash
# Device run of the decode probe: build (16 jobs), then 3 processes of decode_probe; full logs
# under $OUT, the ROW lines of every process last. Usage: bash dev/decode/device_decode.sh [rounds]
set -o pipefail
ROUNDS=${1:-30}
OUT=${OUT:-/tmp/decode_out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv
( cd dev/decode && JOBS=16 ./build_probe.sh bin > "$OUT/build.log" 2>&1 ) || { tail -40 "$OUT/build.log"; exit 1; }
grep "registers" "$OUT/build.log" | tr '\n' ';' | head -c 1500; echo
for p in 1 2 3; do
  timeout 150 dev/decode/bin/decode_probe "$ROUNDS" > "$OUT/probe$p.log" 2>&1
  echo "process $p rc $?"
done
grep -h "FAIL\|odd\|copy\|read bound\|CHECKS" "$OUT/probe1.log" | head -30
for p in 1 2 3; do echo "== process $p"; grep "^ROW" "$OUT/probe$p.log" | cut -c5-; done
