#!/usr/bin/env bash
# GPU machine, one call (issue 35, any shape): build the CLI and the graph test, run the CUDA-graph
# GPU test, then a held-out prediction check for one N x K of the LLM suite:
#   1. range pre-tuning `ktune tune gemm --m 1..8192 --n N --k K` (guided search; 20 M values),
#   2. HELD_OUT odd M values tuned exhaustively (every candidate timed in one run), and for each the
#      config `ktune predict` gives it from the OTHER keys (a key is never its own neighbour),
#   3. the predicted config's median over the exhaustive winner's and over the default's, both
#      from that exhaustive run's candidate medians (same process, same buffers; not the
#      interleaved re-timing of the issue's target).
# Logs under $OUT, the table last.
#   bash dev/shape_device.sh          (carry .devdeps)   SHAPE_NK=4096x4096 HELD_OUT="7 77 ..."
#   SHAPE_STAGE=first_call            only the build and bench/shape_first_call_bench
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s)
export KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/kcache}
NK=${SHAPE_NK:-4096x4096}; N=${NK%x*}; K=${NK#*x}
HELD_OUT=${HELD_OUT:-"3 13 77 333 777 1500 3001 5555"}
bash dev/device_build.sh ktune ktune-worker shapes_gpu_test shape_first_call_bench > "$OUT/build.log" 2>&1 \
  || { tail -40 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - T0 )) s"
# The first call of an unseen key in background mode vs a tuned call (host CPU time).
timeout 150 /tmp/kb/bench/shape_first_call_bench 32 2>&1 | tee "$OUT/first_call.log" | grep -E "RESULT|SKIP|tuned so far"
[ "${SHAPE_STAGE:-all}" = first_call ] && exit 0
KT=/tmp/kb/tools/ktune
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
timeout 120 /tmp/kb/tests/shapes_gpu_test > "$OUT/shapes_gpu_test.log" 2>&1
echo "shapes_gpu_test rc=$? ($(grep -cE '^\[       OK' "$OUT/shapes_gpu_test.log") ok)"; grep -E "FAILED|Failure" -A4 "$OUT/shapes_gpu_test.log" | head -20
t=$(date +%s)
timeout 200 $KT tune gemm --m 1..8192 --n "$N" --k "$K" --layout NT --quiet > "$OUT/range.log" 2>&1
echo "range pre-tuning rc=$? $(( $(date +%s) - t )) s"; tail -2 "$OUT/range.log"
echo "M ratio_to_winner ratio_to_default confidence predicted" > "$OUT/heldout.txt"
for m in $HELD_OUT; do
  [ $(( $(date +%s) - T0 )) -gt 420 ] && { echo "time budget: stopping before M=$m"; break; }
  timeout 60 $KT tune gemm --m "$m" --n "$N" --k "$K" --layout NT --search exhaustive --json \
    > "$OUT/tune_$m.json" 2> "$OUT/tune_$m.err"
  $KT predict gemm --m "$m" --n "$N" --k "$K" --layout NT --json > "$OUT/predict_$m.json" 2>&1
  python3 - "$OUT/tune_$m.json" "$OUT/predict_$m.json" "$m" >> "$OUT/heldout.txt" <<'EOF'
import json, sys
rep = json.load(open(sys.argv[1]))
pr = json.load(open(sys.argv[2]))
r = rep[-1] if isinstance(rep, list) else rep
cands = {(c.get("source", "jit"), c["config"]): c for c in r.get("candidates", [])}
def med(src, cfg):
    c = cands.get((src, cfg))
    return c.get("median_us") if c and c.get("status") == "ok" else None
win = med(r.get("winner_source", "jit"), r["winner"])
p = med(pr["source"], pr["config"])
vd = r.get("vs_default", {})
d = med(vd.get("baseline_source", "jit"), vd.get("baseline", "")) if vd else None
f = lambda a, b: "%.3f" % (a / b) if a and b else "nan"
print(sys.argv[3], f(p, win), f(p, d), "%.2f" % pr["confidence"], pr["source"], pr["config"][:60])
EOF
done
echo "held-out (predicted config's median / exhaustive winner's, / default's):"
cat "$OUT/heldout.txt"
python3 - "$OUT/heldout.txt" <<'EOF'
import math, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
w = sorted(float(r[1]) for r in rows if r[1] != "nan")
d = [float(r[2]) for r in rows if r[2] != "nan"]
if w:
    print("n=%d geomean %.3f p95 %.3f max %.3f; max vs default %.3f" % (
        len(w), math.exp(sum(map(math.log, w)) / len(w)), w[min(len(w) - 1, int(0.95 * len(w)))],
        w[-1], max(d) if d else float("nan")))
EOF
echo "total: $(( $(date +%s) - T0 )) s"
