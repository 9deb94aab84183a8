#!/usr/bin/env bash
# GPU machine (carry .devwork/search, staged by `BASE=<other build> bash dev/regret_stage.sh`): the
# LLM suite's tuning time, this tree's ktune against the base build's (pb/base), alternating
# (base, this) x PAIRS: cold (its own empty ktune cache, a fresh CUDA compute cache), then warm (the
# store it filled, a fresh database). Per run: wall, configs compiled, finalists re-timed, the
# engine's total and each key's winner source. JSON and stderr in $OUT/ab.tgz; the table last.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/ab; rm -rf "$W"; mkdir -p "$W"
[ -d pb ] || tar -xJf pb.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
one() {  # who pass pair
  local K=pb/tools/ktune; [ "$1" = base ] && K=pb/base/tools/ktune
  local C=/tmp/kc-$1-$3 S; [ "$2" = cold ] && rm -rf "$C"; rm -rf "$C/db"
  S=$(date +%s.%N)
  KTUNE_CACHE_DIR=$C CUDA_CACHE_PATH=$( [ "$2" = cold ] && mktemp -d || echo /tmp/nvc-$1-$3 ) \
    timeout 90 "$K" tune gemm --suite llm --json --quiet > "$W/$1_$2$3.json" 2> "$W/$1_$2$3.err"
  echo "$1 $2 $3 rc=$? wall $(awk -v a="$S" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')" | tee -a "$W/walls.txt"
}
for p in $(seq 1 "${PAIRS:-2}"); do
  for who in base this; do one $who cold $p; one $who warm $p; done
done
tar czf "$OUT/ab.tgz" -C "$W" .
python3 - "$W" <<'PY'
import json, sys, os, re
w = sys.argv[1]
walls = {tuple(l.split()[:3]): l.split()[-1] for l in open(os.path.join(w, "walls.txt"))}
print("run              wall s  engine s  compiled  finalists  JIT winners (prefill, decode)")
for (who, pas, p), wall in walls.items():
    t = open(os.path.join(w, f"{who}_{pas}{p}.json")).read(); dec = json.JSONDecoder(); d = []; i = t.find("{")
    while i >= 0:
        try: o, end = dec.raw_decode(t[i:])
        except ValueError: break
        d += o if isinstance(o, list) else [o]; i = t.find("{", i + end)
    eng = sum(r.get("total_wall_ms", 0) or 0 for r in d) / 1e3
    comp = sum(r.get("compiled", 0) or 0 for r in d)
    fin = sum((r.get("vs_default") or {}).get("finalists", 0) for r in d)
    def m(r): x = re.search(r"M=(\d+),", r.get("key", "")); return int(x.group(1)) if x else 0
    pre = sum(1 for r in d if m(r) > 128 and r.get("winner_source") == "jit")
    dec_ = sum(1 for r in d if 0 < m(r) <= 128 and r.get("winner_source") == "jit")
    print(f"{who:5} {pas:5} {p:3}  {wall:>7}  {eng:8.2f}  {comp:8}  {fin:9}  {pre} of 4, {dec_} of 4")
PY
