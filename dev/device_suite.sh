#!/usr/bin/env bash
# GPU machine: build the CLI and run the README's main job (`ktune tune gemm --suite llm`) plus the
# row-wise tuners, timing each. Logs under $OUT; a short summary last.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
now() { date +%s.%N; }
el() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}'; }
bash dev/device_build.sh ktune ktune-worker > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
export KTUNE_CACHE_DIR=/tmp/ksuite
K=/tmp/kb/tools/ktune
S=$(now); timeout 400 $K tune gemm --suite llm > "$OUT/suite.txt" 2>&1
echo "suite rc=$? wall=$(el $S)s"
grep -E "^gemm|winner|compiled" "$OUT/suite.txt" | cut -c1-170
S=$(now); timeout 100 $K tune rmsnorm --rows 16384 --cols 8192 > "$OUT/rmsnorm.txt" 2>&1
echo "rmsnorm rc=$? wall=$(el $S)s"; grep -E "winner|compiled" "$OUT/rmsnorm.txt" | cut -c1-170
S=$(now); timeout 100 $K tune silu_mul --rows 16384 --cols 14336 > "$OUT/silu.txt" 2>&1
echo "silu_mul rc=$? wall=$(el $S)s"; grep -E "winner|compiled" "$OUT/silu.txt" | cut -c1-170
