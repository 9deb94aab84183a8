#!/usr/bin/env bash
# GPU machine, one call: the guided search's tuning time and quality against the exhaustive one,
# and the peers' tuning time in the same run (issue 34). Steps in order of priority, each
# time-boxed against one deadline (DEADLINE seconds from the start, default 330), so a short
# device grant still brings back the first ones:
#   1. one GEMM shape (4096^3 NT), guided: cold (empty cache) and warm code-object store (fresh
#      database); the LLM suite (8 shapes) the same way; each report's bench stage split into
#      load / verify / measure / finalists (JSON);
#   2. the peers: Triton's tutorial autotuner and torch.compile(mode="max-autotune"), tuning time
#      from first call to result (bench/tuning_peers.py);
#   3. `ktune regret --set gpu`: GEMM then row-wise keys spread over the set (GEMM_LIMIT,
#      ROW_LIMIT, default 24 and 10; 0 = all 62 + 24), both searches in one process on one shared store, per key the
#      guided winner's time over the exhaustive winner's (interleaved re-timing) and each side's
#      tuning time. With the whole set this step needs about 6-9 minutes.
# Builds as dev/device_build.sh does (carry .devdeps); logs under $OUT; a short table last.
# Usage: bash dev/regret_device.sh   (SKIP_BUILD=1 reuses $KB, default /tmp/kb-regret)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s)
DEADLINE=${DEADLINE:-330}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
now() { date +%s.%N; }
el() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}'; }
# Its own build directory (KB): a warm machine may hold another tree's /tmp/kb.
KB=${KB:-/tmp/kb-regret}
if [ -z "${SKIP_BUILD:-}" ]; then
  S=$(now)
  { if [ -d .devdeps ]; then for f in .devdeps/*.deb; do dpkg -x "$f" /opt/deps; done; fi
    cmake -S . -B "$KB" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=/opt/deps/usr -DKTUNE_WERROR=OFF &&
    cmake --build "$KB" -j"$(nproc)" --target ktune ktune-worker; } > "$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
  echo "build $(el $S)s"
fi
K=$KB/tools/ktune
SUM="$OUT/summary.txt"; : > "$SUM"
row() { echo "$*" | tee -a "$SUM"; }
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader | tee -a "$SUM"
# The tuning reports' stage split: one line per key.
split() { python3 - "$1" <<'EOF'
import json, sys
t = open(sys.argv[1]).read(); dec = json.JSONDecoder(); d = []
i = t.find('{')  # one report per key, concatenated (the suite), or one list
while i >= 0:
    try: o, end = dec.raw_decode(t[i:])
    except ValueError: break
    d += o if isinstance(o, list) else [o]
    i = t.find('{', i + end)
if not d: print("  no JSON"); sys.exit()
for r in d:
    s = r.get("search", {}); s = s if isinstance(s, dict) else {}
    rounds = " ".join("r%d:%d/%d/-%d" % (x["round"], x.get("compiled", 0), x["benchmarked"], x["eliminated"]) for x in s.get("rounds", []))
    print("  %-28s total %5.0f ms: compile %4.0f | bench %4.0f = load %3.0f verify %4.0f measure %4.0f + finalists %4.0f | "
          "compiled %s hits %s not_reached %s regret %.2f%% rounds(compiled/timed/-out) %s" % (
          r.get("key", "")[:28], r.get("total_wall_ms", 0), r.get("compile_wall_ms", 0), r.get("bench_wall_ms", 0),
          r.get("bench_load_ms", 0), r.get("bench_verify_ms", 0), r.get("bench_measure_ms", 0), r.get("finalists_ms", 0),
          s.get("compiled"), s.get("store_hits"), s.get("not_reached"), 100 * (s.get("regret_estimate") or 0), rounds))
EOF
}

# 1. Tuning time, guided: one shape and the suite, cold and with a warm store (fresh database).
export KTUNE_CACHE_DIR=/tmp/kr-guided; rm -rf "$KTUNE_CACHE_DIR"
for pass in cold warm; do
  [ "$pass" = warm ] && rm -rf "$KTUNE_CACHE_DIR/db"
  S=$(now); timeout 60 $K tune gemm --m 4096 --n 4096 --k 4096 --layout NT --json --quiet > "$OUT/one_$pass.json" 2>&1
  row "guided 4096^3 NT $pass: wall $(el $S)s"; split "$OUT/one_$pass.json" | tee -a "$SUM"
  rm -rf "$KTUNE_CACHE_DIR/db"
  S=$(now); timeout 90 $K tune gemm --suite llm --json --quiet > "$OUT/suite_$pass.json" 2>&1
  row "guided suite llm $pass: wall $(el $S)s rc=$?"; split "$OUT/suite_$pass.json" >> "$SUM"
done

# 2. The peers (time-boxed; their own compile caches are cold in a fresh machine).
P=$(( $(left) * 2 / 5 )); [ "$P" -gt 90 ] && P=90
if [ "$P" -gt 20 ]; then
  timeout $P env PYTHONUNBUFFERED=1 python3 bench/tuning_peers.py --budget=$(( P / 2 - 5 )) \
    --shapes=4096x4096x4096,16x4096x4096 > "$OUT/peers.txt" 2>&1
  echo "peers rc=$? (limit ${P}s)" >> "$OUT/peers.txt"
  grep -E "^(device|triton|inductor)|skipped|rc=" "$OUT/peers.txt" | tee -a "$SUM"
fi

# 3. The regret harness (rows print as they finish; a timeout keeps what ran).
R=$(( $(left) - 10 )); G=$(( R * 7 / 10 ))
if [ "$G" -gt 20 ]; then
  timeout $G $K regret --set gpu --ops gemm --limit "${GEMM_LIMIT:-24}" --deadline $(( G - 25 )) > "$OUT/regret_gemm.txt" 2> "$OUT/regret_gemm.err"
  echo "regret gemm rc=$? (limit ${G}s)"
fi
R=$(( $(left) - 5 ))
if [ "$R" -gt 15 ]; then
  timeout $R $K regret --set gpu --ops rmsnorm,silu_mul --limit "${ROW_LIMIT:-10}" --deadline $(( R - 10 )) > "$OUT/regret_rows.txt" 2> "$OUT/regret_rows.err"
  echo "regret rows rc=$? (limit ${R}s)"
fi
echo; echo "== regret (GEMM) =="; cat "$OUT/regret_gemm.txt" 2>/dev/null | cut -c1-150
echo "== regret (row-wise) =="; cat "$OUT/regret_rows.txt" 2>/dev/null | cut -c1-150
echo "== summary =="; cat "$SUM"
echo "total $(( $(date +%s) - T0 ))s"
