#!/usr/bin/env bash
# Issue 17 in one call, on a machine with several GPUs of one model (on one GPU it runs what one GPU
# allows: --devices all is then the one-device path, a regression check against --devices 0, and
# one `ktune serve`). Prints a short table; logs and JSON under $OUT.
#   1. ktune tune gemm --suite llm --devices all  vs  --devices 0   (wall, speed-up, same winners)
#   2. one key, 4096^3 NT, spread over every GPU  vs  one GPU
#   3. one `ktune serve` per GPU (CUDA_VISIBLE_DEVICES) on one queue of a loopback redis-server:
#      the suite's keys, each tuned once (published count), wall time
#   4. the GPU tests (ctest -L gpu) and the CPU tests of this feature (STAGE=nogtests skips them)
# Both sides of 1 and 2 run with the code-object store already warm (a first --devices 0 pass
# compiles everything), each with its own fresh tuning database: they compare benchmarking.
# While each run of 1 and 2 runs, nvidia-smi samples every GPU's utilisation (100 ms): the table
# says how busy each GPU was and for how much of the run they were busy at the same time, next to
# the report's per-device busy time and overlap (sum of busy / the devices' wall time).
# $OUT keeps few files (the device tool returns a limited count): mg_summary.txt (the table),
# mg_build.log, mg_gpus.txt, the ctest logs, and mg_runs.tar.gz with every run's JSON/stderr.
# Needs: .devdeps with the Debian redis-server, redis-tools, libjemalloc2, liblzf1, libhiredis
# .debs (dev/device_build.sh unpacks them into /opt/deps); without redis-server step 3 is skipped.
# Usage: bash dev/device_multi_gpu.sh      (REBUILD=1 rebuilds /tmp/kb from scratch)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
W=/tmp/mg; rm -rf "$W"; mkdir -p "$W"
now() { date +%s.%N; }
el() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}'; }
T0=$(now)
export PATH=/opt/deps/usr/bin:$PATH
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
TARGETS="ktune ktune-worker"
[ "${STAGE:-all}" != nogtests ] && TARGETS="$TARGETS device_pool_test isolation_devices_test remote_warm_test buffers_test"
if [ "${SKIP_BUILD:-0}" = 1 ]; then
  :
elif [ ! -x /tmp/kb/tools/ktune ] || [ "${REBUILD:-0}" = 1 ]; then
  bash dev/device_build.sh > "$OUT/mg_build.log" 2>&1 || { tail -40 "$OUT/mg_build.log"; exit 1; }
else
  # shellcheck disable=SC2086
  bash dev/device_build.sh $TARGETS > "$OUT/mg_build.log" 2>&1 || { tail -40 "$OUT/mg_build.log"; exit 1; }
fi
K=${K:-/tmp/kb/tools/ktune}
NG=${NG:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw --format=csv > "$OUT/mg_gpus.txt" 2>&1
echo "build ok $(el "$T0")s; $NG GPU(s)"
export KTUNE_CACHE_DIR=$W/cache
unset KTUNE_REMOTE_CACHE KTUNE_DB

# tune LABEL DEVICES ARGS...: a run with its own database; prints the wall time into $W/LABEL.wall
tune() {
  local label=$1 devs=$2; shift 2
  local s smi=""; s=$(now)
  if [ "$NG" -gt 0 ] && command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=timestamp,index,utilization.gpu --format=csv,noheader,nounits -lms 100 \
      > "$W/$label.smi" 2>&1 &
    smi=$!
  fi
  KTUNE_DB=$W/$label.db.json timeout 580 "$K" tune gemm "$@" --devices "$devs" --json --quiet \
    > "$W/$label.json" 2> "$W/$label.err"
  echo "$?" > "$W/$label.rc"; el "$s" > "$W/$label.wall"
  if [ -n "$smi" ]; then kill "$smi" 2> /dev/null; wait "$smi" 2> /dev/null; fi
}
# (SUITE_ARGS / KEY_ARGS replace them for a quick check on the simulated devices, e.g.
#  KTUNE_BACKEND=sim KTUNE_SIM_DEVICES=2 NG=2 SKIP_BUILD=1 K=build/tools/ktune STAGE=nogtests
#  SUITE_ARGS="--m 64 --n 64 --k 64" KEY_ARGS="--m 128 --n 128 --k 128 --kinds mma")
read -r -a SUITE <<< "${SUITE_ARGS:---suite llm}"
read -r -a KEY <<< "${KEY_ARGS:---m 4096 --n 4096 --k 4096 --layout NT}"
tune warm_suite 0 "${SUITE[@]}"   # compiles: later runs hit the store
tune warm_key 0 "${KEY[@]}"
tune suite_one 0 "${SUITE[@]}"
tune suite_all all "${SUITE[@]}"
tune key_one 0 "${KEY[@]}"
tune key_all all "${KEY[@]}"
echo "tuning runs done $(el "$T0")s"

# Step 3: one server per GPU on one queue.
SERVE=skipped
if command -v redis-server > /dev/null; then
  PORT=6391
  redis-server --port $PORT --bind 127.0.0.1 --save '' --appendonly no --dir "$W" \
    --logfile "$W/redis.log" --daemonize no > /dev/null 2>&1 &
  RPID=$!
  URL=redis://127.0.0.1:$PORT/0
  for _ in $(seq 50); do "$K" remote ping --remote "$URL" > /dev/null 2>&1 && break; sleep 0.1; done
  python3 - "$W/keys.jsonl" <<'EOF'
import json, sys
shapes = [(4096, 6144, 4096), (4096, 4096, 4096), (4096, 28672, 4096), (4096, 4096, 14336),
          (16, 6144, 4096), (16, 4096, 4096), (16, 28672, 4096), (16, 4096, 14336)]
with open(sys.argv[1], "w") as f:
    for m, n, k in shapes:  # the suite: nn.Linear weights [N][K] (NT), bf16
        f.write(json.dumps({"family": "gemm", "key": "", "layout": "NT", "ab": "bf16", "c": "bf16",
                            "m": m, "n": n, "k": k, "lda": k, "ldb": k, "ldc": n, "alpha": 1.0,
                            "beta": 0.0, "bias": False, "act": "none", "aligned16": True}) + "\n")
EOF
  "$K" tune --from-file "$W/keys.jsonl" --queue "$URL" > "$W/enqueue.txt" 2>&1
  S=$(now); pids=()
  for g in $(seq 0 $((NG - 1))); do
    # The warm store (a fleet gets code objects through the remote too), each its own database.
    CUDA_VISIBLE_DEVICES=$g KTUNE_DB=$W/serve$g.db.json timeout 580 "$K" serve --queue "$URL" \
      --id "gpu$g" --exit-when-empty > "$W/serve$g.out" 2> "$W/serve$g.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  SERVE_WALL=$(el "$S")
  "$K" remote stats --remote "$URL" --json > "$W/serve_stats.json" 2>&1
  SERVE="$NG server(s), wall ${SERVE_WALL}s, $(python3 -c "
import json; j = json.load(open('$W/serve_stats.json'))
print('published', j['cache'].get('published'), 'pending', j['queue']['pending'], 'counters', j['queue']['counters'])
" 2>&1)"
  # The issue-15 target: the LLM suite on a fresh machine (empty cache) with this warm remote
  # (only once the servers published something: otherwise it would tune the whole suite).
  S=$(now)
  if grep -q '"published": *[1-9]' "$W/serve_stats.json"; then
    KTUNE_CACHE_DIR=$W/fresh KTUNE_REMOTE_CACHE=$URL timeout 120 "$K" tune gemm "${SUITE[@]}" \
      --json --quiet > "$W/fresh_suite.json" 2> "$W/fresh_suite.err"
  else
    : > "$W/fresh_suite.json"
  fi
  FRESH_WALL=$(el "$S")
  SERVE="$SERVE
fresh machine, warm remote, suite llm: wall ${FRESH_WALL}s, $(python3 -c "
import json
text, dec, i, out = open('$W/fresh_suite.json').read(), json.JSONDecoder(), 0, []
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    d, i = dec.raw_decode(text, i); out.append(d)
print(len(out), 'keys, from', sorted(set(d['from'] for d in out)), 'compiled', sum(d['compiled'] for d in out))
" 2>&1) (target: <= 1 s, nothing compiled)"
  kill "$RPID" 2> /dev/null; wait "$RPID" 2> /dev/null
fi

python3 - "$W" "$NG" "$SERVE" <<'EOF' | tee "$OUT/mg_summary.txt"
import json, sys
w, ng, serve = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def docs(label):
    text, out, i = open(f"{w}/{label}.json").read(), [], 0
    dec = json.JSONDecoder()
    while i < len(text):
        while i < len(text) and text[i].isspace(): i += 1
        if i >= len(text): break
        d, i = dec.raw_decode(text, i); out.append(d)
    return out
def smi(label):
    # Utilisation samples: per GPU the mean over the samples where some GPU was busy, and the share
    # of those samples where every GPU was busy at once.
    try:
        lines = open(f"{w}/{label}.smi").read().splitlines()
    except OSError:
        return ""
    samples = []  # one query prints a row per GPU, in index order: a new sample at each repeat
    for ln in lines:
        parts = [p.strip() for p in ln.split(",")]
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit(): continue
        g = int(parts[1])
        if not samples or g in samples[-1]: samples.append({})
        samples[-1][g] = int(parts[2])
    busy = [v for v in samples if any(x > 0 for x in v.values())]
    if not busy: return "no busy samples"
    gpus = sorted({g for v in busy for g in v})
    mean = ", ".join(f"gpu{g} {sum(v.get(g, 0) for v in busy) / len(busy):.0f}%" for g in gpus)
    both = sum(all(v.get(g, 0) > 0 for g in gpus) for v in busy) / len(busy)
    return f"{len(busy)} busy samples, mean util {mean}, all GPUs busy at once in {both * 100:.0f}%"
def row(name, one, many):
    a, b = docs(one), docs(many)
    wa, wb = float(open(f"{w}/{one}.wall").read()), float(open(f"{w}/{many}.wall").read())
    rc = open(f"{w}/{one}.rc").read().strip() + "/" + open(f"{w}/{many}.rc").read().strip()
    same = len(a) == len(b) and all(x["key"] == y["key"] and x["winner"] == y["winner"] for x, y in zip(a, b))
    bench = sum(d["bench_wall_ms"] for d in a) / 1e3, sum(d["bench_wall_ms"] for d in b) / 1e3
    per_dev = {}
    for d in b:
        for s in d.get("devices", []): per_dev[s["device"]] = per_dev.get(s["device"], 0) + s["candidates"]
    print(f"{name:<22} {wa:8.2f} {wb:8.2f} {wa / wb:7.2f}x  bench {bench[0]:6.2f}/{bench[1]:6.2f} s  "
          f"winners {'same' if same else 'DIFFER'} ({len(a)} keys)  rc {rc}  candidates/device {per_dev}")
    busy, dwall = {}, 0.0
    fin = sum(d.get("finalists_ms", 0) for d in a) / 1e3, sum(d.get("finalists_ms", 0) for d in b) / 1e3
    for d in b:
        dwall += d.get("devices_wall_ms", 0)
        for s in d.get("devices", []):
            busy[s["device"]] = busy.get(s["device"], 0) + s["busy_ms"]
    if busy:
        print(f"   devices: wall {dwall / 1e3:.2f} s, busy " +
              ", ".join(f"gpu{k} {v / 1e3:.3f} s ({per_dev.get(k, 0)} cand)" for k, v in sorted(busy.items())) +
              f"; overlap sum(busy)/wall {sum(busy.values()) / max(dwall, 1e-9):.2f} (ideal {len(busy)})")
    tot = sum(d["total_wall_ms"] for d in a) / 1e3, sum(d["total_wall_ms"] for d in b) / 1e3
    comp = sum(d["compile_wall_ms"] for d in a) / 1e3, sum(d["compile_wall_ms"] for d in b) / 1e3
    print(f"   per key, summed (1 GPU | all): tuning {tot[0]:.2f} | {tot[1]:.2f} s, compile "
          f"{comp[0]:.2f} | {comp[1]:.2f} s, bench {bench[0]:.2f} | {bench[1]:.2f} s "
          f"(finalists {fin[0]:.2f} | {fin[1]:.2f} s, rest of bench {bench[0] - fin[0]:.2f} | "
          f"{bench[1] - fin[1]:.2f} s: speed-up {(bench[0] - fin[0]) / max(bench[1] - fin[1], 1e-9):.2f}x)")
    for label in (one, many):
        u = smi(label)
        if u: print(f"   nvidia-smi {label}: {u}")
    if not same:
        for x, y in zip(a, b):
            if x["winner"] != y["winner"]:
                print(f"   {x['key'][:60]}: {x['winner']} ({x['winner_median_ms']*1e3:.1f} us) vs "
                      f"{y['winner']} ({y['winner_median_ms']*1e3:.1f} us)")
print(f"{ng} GPU(s); store warm for both sides; wall s (--devices 0 | all), speed-up")
print(f"{'run':<22} {'1 GPU':>8} {'all':>8} {'speedup':>8}")
row("suite llm (8 keys)", "suite_one", "suite_all")
row("4096^3 NT (1 key)", "key_one", "key_all")
print(f"serve, one per GPU: {serve}")
EOF
if [ "${STAGE:-all}" != nogtests ]; then
  # Whatever is left of a ~6 minute call (at least 2 minutes), several tests at a time.
  LEFT=$(awk -v a="$T0" -v b="$(now)" 'BEGIN{l = 330 - (b - a); printf "%d", l < 120 ? 120 : l}')
  (cd /tmp/kb && timeout "$LEFT" ctest -j4 --timeout 240 -L gpu --output-on-failure > "$OUT/mg_ctest_gpu.log" 2>&1)
  grep -E "tests passed|\(Failed\)|Not Run|Timeout" "$OUT/mg_ctest_gpu.log" | head -20
  (cd /tmp/kb && timeout 300 ctest -j3 --timeout 240 -R "device_pool_test|isolation_devices_test|remote_warm_test|buffers_test" \
    --output-on-failure > "$OUT/mg_ctest_cpu.log" 2>&1)
  grep -E "tests passed|\(Failed\)|Not Run|Timeout|Passed|Skipped" "$OUT/mg_ctest_cpu.log" | head -10
fi
(cd "$W" && tar czf "$OUT/mg_runs.tar.gz" --exclude='cache' --exclude='fresh' --exclude='*.db.json' \
  ./*.json ./*.err ./*.smi ./*.wall ./*.rc ./*.out ./*.txt ./*.jsonl 2> /dev/null)
echo "total $(el "$T0")s"
