#!/usr/bin/env bash
# GPU machine, issue 33: the four-block clusters as a config of the space (binaries staged by
# dev/fp8_stage.sh into pb/; nothing is built here), in one call against BUDGET seconds:
#   1. `ktune tune gemm --m 3000 --n 5000 --k 1000 --json` (empty cache and database; TUNE_S at
#      most): $OUT/tune.json, and in tune.txt the winner and every CLUSTER_M = 4 candidate's line
#      (whether the guided race reached it);
#   2. dev/fp8_final_device.sh: the copy rate, PROCS gemm_bench processes ($ONLY_NAMES, $TWIN_NAMES,
#      $SHAPES), then the GPU tests ($GEMM_FILTER, gemm_fp8_gpu_test $FP8_FILTER).
# Files back (at most 8): tune.json, tune.txt, gpu.txt, bench_P.txt, bench_err.tgz, tests.log.
# BUDGET (140) TUNE_S (25)
set -uo pipefail
BUDGET_DEFAULT=140
. dev/fp8_device_common.sh
s=$(date +%s)
td=/tmp/kc-tune-fp8-$$
KTUNE_CACHE_DIR=$td KTUNE_DB=$td/db.json timeout "${TUNE_S:-25}" \
  "$PB/tools/ktune" tune gemm --m 3000 --n 5000 --k 1000 --json > "$OUT/tune.json" 2> /tmp/tune.err
echo "tune: rc=$? wall $(( $(date +%s) - s )) s" > "$OUT/tune.txt"
python3 - "$OUT/tune.json" >> "$OUT/tune.txt" 2>&1 <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r = r[0] if isinstance(r, list) else r
print("winner", r.get("winner_source"), r.get("winner"), r.get("winner_median_ms"), "vs_default", r.get("vs_default"))
s = r.get("search", {})
print("search", {k: s.get(k) for k in ("name", "reached", "not_reached", "compiled", "regret_estimate")})
for c in sorted(r.get("candidates", []), key=lambda c: c.get("median_us") or 1e9):
    if c.get("status") == "ok" and c.get("median_us"):
        print(f"{c['median_us']:9.2f} {c.get('source')} {c.get('config')}")
    elif "CLUSTER_M=4" in c.get("config", ""):
        print("   (CL4)", c.get("status"), c.get("reason", "")[:80], c.get("config"))
PY
tail -3 /tmp/tune.err >> "$OUT/tune.txt"
at "tune"
BUDGET=$(left) bash dev/fp8_final_device.sh
tar -czf "$OUT/bench_err.tgz" -C "$OUT" $(cd "$OUT" && ls bench_*.err 2>/dev/null) 2>/dev/null &&
  rm -f "$OUT"/bench_*.err
head -40 "$OUT/tune.txt"
