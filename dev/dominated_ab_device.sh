#!/usr/bin/env bash
# GPU machine (carry .devwork/search, staged by `BASE=<main's build dir> bash dev/regret_stage.sh
# DEST`): the guided search without the dominated GEMM kinds (this tree, pb/tools) against the base
# (pb/base) in one call, by priority within DEADLINE seconds (default 130):
#   1. `ktune tune gemm --m 4096 --n 4096 --k 4096 --layout NT` cold, PAIRS pairs (default 3),
#      interleaved base/this, every run an empty store and a fresh CUDA_CACHE_PATH, all cores;
#   2. `ktune regret --set gpu --only REGRET_ONLY` with this tree (GPU quality at keys the rule
#      fires at: guided winner / exhaustive winner, re-timed interleaved);
#   3. the same 4096^3 pairs on 8 cores (taskset -c 0-7: the pool's threads follow the affinity
#      mask), CORE_PAIRS pairs (default 2);
#   4. the suite cold once each (no claim from one run).
# Compile workers on in every run (KTUNE_COMPILE_PROCESSES=1, the CLI's GPU default). Table last.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/dom; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s); DEADLINE=${DEADLINE:-130}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
[ -d pb ] || tar -xJf pb.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader; nproc
bin() { [ "$1" = base ] && echo "$PWD/pb/base/tools/ktune" || echo "$PWD/pb/tools/ktune"; }
tune() {  # build tag [taskset cpus] -- args: one cold run
  local b=$1 tag=$2 cpus=$3; shift 4; local S; S=$(date +%s.%N)
  local pre=(); [ -n "$cpus" ] && pre=(taskset -c "$cpus")
  KTUNE_COMPILE_PROCESSES=1 KTUNE_CACHE_DIR=$W/kc-$tag CUDA_CACHE_PATH=$W/cc-$tag \
    timeout 60 "${pre[@]}" "$(bin "$b")" tune gemm "$@" --json > "$W/$tag.json" 2> "$W/$tag.err"
  echo "TUNE $b $tag rc=$? wall $(awk -v a="$S" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')" \
    | tee -a "$W/walls.txt"
}
SHAPE=(--m 4096 --n 4096 --k 4096 --layout NT)
for i in $(seq 1 "${PAIRS:-3}"); do
  for b in base this; do tune $b "${b}_16c_$i" "" -- "${SHAPE[@]}"; done
done
if [ "$(left)" -gt 60 ]; then
  KTUNE_COMPILE_PROCESSES=1 timeout $(( $(left) - 40 )) "$(bin this)" regret --set gpu \
    --only "${REGRET_ONLY:-4096x6144x4096 NT|4096x4096x4096 NT}" --exhaustive-budget 0.2 \
    --cache "$W/regret" > "$W/regret.txt" 2>&1
  echo "regret rc=$? $(( $(date +%s) - T0 )) s"
fi
for i in $(seq 1 "${CORE_PAIRS:-2}"); do
  [ "$(left)" -gt 20 ] || break
  for b in base this; do tune $b "${b}_8c_$i" 0-7 -- "${SHAPE[@]}"; done
done
for b in base this; do
  [ "$(left)" -gt 25 ] || break
  tune $b "${b}_suite" "" -- --suite llm
done
tar -czf "$OUT/dom.tgz" -C "$W" --exclude='kc-*' --exclude='cc-*' --exclude=regret .
cat "$W/regret.txt" 2>/dev/null | tail -12
python3 - "$W" <<'PY'
import sys, json
w = sys.argv[1]
print("\nrun             wall s  engine s  compiled  compile wall  job max  job sum   winner")
for l in open(f"{w}/walls.txt"):
    f = l.split(); tag = f[2]
    try:
        t = open(f"{w}/{tag}.json").read(); d = []; dec = json.JSONDecoder(); i = t.find("{")
        while i >= 0:
            o, e = dec.raw_decode(t[i:]); d += o if isinstance(o, list) else [o]; i = t.find("{", i + e)
    except Exception: d = []
    s = lambda k: sum(r.get(k, 0) for r in d)
    cj = lambda k: sum(r.get("compile_jobs", {}).get(k, 0) for r in d)
    win = (f"{d[0].get('winner_source')} {1e3 * d[0].get('winner_median_ms', 0):.1f}us") if len(d) == 1 else f"{len(d)} keys"
    print(f"{tag:14} {f[-1]:>7} {s('total_wall_ms')/1e3:8.2f} {s('compiled'):9} {s('compile_wall_ms')/1e3:12.2f} "
          f"{max([r.get('compile_jobs', {}).get('job_ms_max', 0) for r in d] + [0]):8.0f} {cj('job_ms_sum'):8.0f}   {win}")
PY
echo "total $(( $(date +%s) - T0 )) s"
