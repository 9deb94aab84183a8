#!/usr/bin/env bash
# GPU machine, one call (about 8 minutes): the guided search against the exhaustive one (issue 34).
#   1. where the bench stage of 4096x28672x4096 goes (exhaustive, in-process, JSON breakdown);
#   2. one GEMM shape and the LLM suite, guided, cold (empty cache) and with a warm code-object
#      store (fresh database), and the suite exhaustive with the same warm store;
#   3. `ktune regret --set gpu`: >= 60 GEMM shapes and 24 row-wise shapes, both searches in one
#      process, per key the guided winner's time over the exhaustive winner's (interleaved).
# Build as dev/device_build.sh (carry .devdeps); logs under $OUT; a short table last.
# Usage: bash dev/regret_device.sh   (SKIP_BUILD=1 reuses /tmp/kb; GEMM_LIMIT/ROW_LIMIT cut the sets)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
now() { date +%s.%N; }
el() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}'; }
if [ -z "${SKIP_BUILD:-}" ]; then
  S=$(now); bash dev/device_build.sh ktune ktune-worker > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
  echo "build $(el $S)s"
fi
K=/tmp/kb/tools/ktune
SUM="$OUT/summary.txt"; : > "$SUM"
row() { echo "$*" | tee -a "$SUM"; }
field() { python3 -c "import json,sys
t=open('$1').read(); i=t.find('{'); d=json.loads(t[i:]) if i>=0 else {}
d=d[0] if isinstance(d,list) else d
print(' '.join('%s=%s'%(k,d.get(k)) for k in sys.argv[1:]))" "${@:2}" 2>/dev/null; }

# 1. The bench-stage breakdown (exhaustive, no isolation so the report splits the stage).
export KTUNE_CACHE_DIR=/tmp/kr-probe; rm -rf "$KTUNE_CACHE_DIR"
timeout 120 $K tune gemm --m 4096 --n 28672 --k 4096 --layout NT --search exhaustive --no-isolate \
  --json --quiet > "$OUT/gateup_exhaustive.json" 2> "$OUT/gateup_exhaustive.err"
python3 - "$OUT/gateup_exhaustive.json" <<'EOF' | tee -a "$SUM"
import json, sys
t = open(sys.argv[1]).read(); i = t.find('{')
if i < 0: print("gate_up probe: no JSON"); sys.exit()
d = json.loads(t[i:]); d = d[0] if isinstance(d, list) else d
c = d.get("candidates", [])
dev = sum(x.get("runs", 0) * x.get("median_us", 0) for x in c) / 1e3
slow = sorted(((x.get("median_us", 0), x["config"][:40], x.get("runs", 0)) for x in c if x.get("median_us")), reverse=True)[:5]
print("gate_up exhaustive: bench %.0f ms = load %.0f + verify %.0f + measure %.0f + record %.0f; finalists %.0f ms; "
      "timed runs' device time %.0f ms over %d candidates" % (d["bench_wall_ms"], d["bench_load_ms"], d["bench_verify_ms"],
      d["bench_measure_ms"], d["bench_record_ms"], d["finalists_ms"], dev, len(c)))
for m, cfg, r in slow: print("  slowest: %.0f us x %d runs  %s" % (m, r, cfg))
EOF

# 2. Tuning time, guided: one shape and the suite, cold and with a warm store (fresh database).
export KTUNE_CACHE_DIR=/tmp/kr-guided; rm -rf "$KTUNE_CACHE_DIR"
for pass in cold warm; do
  [ "$pass" = warm ] && rm -rf "$KTUNE_CACHE_DIR/db"
  S=$(now); timeout 60 $K tune gemm --m 4096 --n 4096 --k 4096 --layout NT --json --quiet > "$OUT/one_$pass.json" 2>&1
  row "guided 4096^3 $pass: wall $(el $S)s $(field "$OUT/one_$pass.json" total_wall_ms compile_wall_ms bench_wall_ms winner_median_ms)"
  rm -rf "$KTUNE_CACHE_DIR/db"
  S=$(now); timeout 120 $K tune gemm --suite llm --json --quiet > "$OUT/suite_guided_$pass.json" 2>&1
  row "guided suite $pass: wall $(el $S)s rc=$?"
done
rm -rf "$KTUNE_CACHE_DIR/db"
S=$(now); timeout 120 $K tune gemm --suite llm --search exhaustive --json --quiet > "$OUT/suite_exhaustive_warm.json" 2>&1
row "exhaustive suite warm store: wall $(el $S)s"

# 3. The regret harness (rows print as they finish; a timeout keeps what ran).
L=${GEMM_LIMIT:-0}
timeout 200 $K regret --set gpu --ops gemm --limit "$L" > "$OUT/regret_gemm.txt" 2> "$OUT/regret_gemm.err"
echo "regret gemm rc=$?"
timeout 60 $K regret --set gpu --ops rmsnorm,silu_mul --limit "${ROW_LIMIT:-0}" > "$OUT/regret_rows.txt" 2> "$OUT/regret_rows.err"
echo "regret rows rc=$?"
echo; echo "== regret (GEMM) =="; head -1 "$OUT/regret_gemm.txt"; grep -v "^shape" "$OUT/regret_gemm.txt" | sort -k2 -g -r | head -8
tail -1 "$OUT/regret_gemm.txt"
echo "== regret (row-wise) =="; tail -1 "$OUT/regret_rows.txt"
echo "== summary =="; cat "$SUM"
