#!/bin/bash
# GPU machine, one call (issue 32, twenty-fourth session, helper small; after device_ef2.sh): the
# tuned op's pick at the suite's wide 16-row keys with the DC_EF twins curated: `ktune tune gemm` at
# each of TUNE_KEYS REPS (default 4) times, each with a fresh database (one kernel cache: only the
# first compiles), the winner line of each run.
#   OUT=$OUT DEADLINE=45 bash dev/decode/device_ef3.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-45}"
for r in $(seq 1 "${REPS:-4}"); do
  for key in ${TUNE_KEYS:-16x28672x4096 16x14336x4096}; do
    fits 8 "tune $key run $r" || break 2
    IFS=x read -r m nn k <<< "$key"
    S=$(date +%s)
    KTUNE_VERBOSE=1 KTUNE_CACHE_DIR=/tmp/kc-tune KTUNE_DB=/tmp/kc-tune/db_${key}_$r.json \
      timeout "${TUNE_S:-12}" "$B/tools/ktune" tune gemm --m "$m" --n "$nn" --k "$k" --layout NT --json \
      > "$OUT/tune_${key}_$r.json" 2> "$OUT/tune_${key}_$r.err"
    echo "tune $key run $r rc=$? $(( $(date +%s) - S ))s"
  done
done
for f in "$OUT"/tune_*.err; do echo "== $(basename "$f")"; grep -E "finalists|  winner|  vs default" "$f" | head -3 | cut -c1-220; done
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.json ./*.err 2>/dev/null; rm -f ./*.err ./*.json)
