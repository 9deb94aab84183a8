#!/usr/bin/env bash
# GPU machine (carry .devwork/search, staged by `BASE=<other build> bash dev/regret_stage.sh`): the
# LLM suite's tuning time, this tree's ktune against the base build's (pb/base), alternating per
# pair: base cold, base warm, this cold, this warm, and with SHAL=1 this tree with
# --shallow-lookahead cold (a flag of 1e591b2 only: the deeper look-ahead it turned off was
# reverted after the sixteenth session's call; bench/NOTES.md). Cold: an empty ktune cache and
# a fresh CUDA compute cache; warm: the store the run's own cold pass filled, a fresh database. Then
# one shape (4096^3 NT) cold and warm, base then this, and one verbose warm suite of this tree
# (where the warm time goes, for the next session). JSON and stderr in $OUT/ab.tgz; tables last.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/ab; rm -rf "$W"; mkdir -p "$W"
[ -d pb ] || tar -xJf pb.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
nproc
one() {  # who pass pair what...
  local who=$1 pass=$2 p=$3; shift 3
  local K=pb/tools/ktune; [ "$who" = base ] && K=pb/base/tools/ktune
  local extra=(); [ "$who" = shal ] && extra=(--shallow-lookahead)
  local C=/tmp/kc-$who-$p S; [ "$pass" = cold ] && rm -rf "$C"; rm -rf "$C/db"
  S=$(date +%s.%N)
  KTUNE_CACHE_DIR=$C CUDA_CACHE_PATH=$( [ "$pass" = cold ] && mktemp -d || echo /tmp/nvc-$who-$p ) \
    timeout 90 "$K" tune gemm "$@" "${extra[@]}" --json --quiet > "$W/${who}_$pass$p.json" 2> "$W/${who}_$pass$p.err"
  echo "$who $pass $p rc=$? wall $(awk -v a="$S" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')" | tee -a "$W/walls.txt"
}
for p in $(seq 1 "${PAIRS:-2}"); do
  for who in base this; do one $who cold $p ${SUITE_ARGS:---suite llm}; one $who warm $p ${SUITE_ARGS:---suite llm}; done
  [ "${SHAL:-0}" = 1 ] && one shal cold $p ${SUITE_ARGS:---suite llm}
done
for who in base this; do
  one $who cold 9 ${SHAPE_ARGS:---m 4096 --n 4096 --k 4096 --layout NT}
  one $who warm 9 ${SHAPE_ARGS:---m 4096 --n 4096 --k 4096 --layout NT}
done
C=/tmp/kc-this-1; rm -rf "$C/db"; S=$(date +%s.%N)
KTUNE_VERBOSE=1 KTUNE_CACHE_DIR=$C timeout 60 pb/tools/ktune tune gemm ${SUITE_ARGS:---suite llm} --json --quiet \
  > "$W/this_verbose_warm1.json" 2> "$W/this_verbose_warm1.err"
echo "this verbose_warm 1 rc=$? wall $(awk -v a="$S" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')" | tee -a "$W/walls.txt"
tar czf "$OUT/ab.tgz" -C "$W" .
python3 - "$W" <<'PY'
import json, sys, os, re
w = sys.argv[1]
def load(f):
    t = open(f).read(); dec = json.JSONDecoder(); d = []; i = t.find("{")
    while i >= 0:
        try: o, end = dec.raw_decode(t[i:])
        except ValueError: break
        d += o if isinstance(o, list) else [o]; i = t.find("{", i + end)
    return d
print("run              wall s  engine s  compiled  finalists  look  JIT winners (prefill, decode)")
for line in open(os.path.join(w, "walls.txt")):
    who, pas, p = line.split()[:3]; wall = line.split()[-1]
    d = load(os.path.join(w, f"{who}_{pas}{p}.json"))
    eng = sum(r.get("total_wall_ms", 0) or 0 for r in d) / 1e3
    comp = sum(r.get("compiled", 0) or 0 for r in d)
    fin = sum((r.get("vs_default") or {}).get("finalists", 0) for r in d)
    look = max([(r.get("process") or {}).get("lookahead_compiled", 0) or 0 for r in d] + [0])
    def m(r): x = re.search(r"M=(\d+),", r.get("key", "")); return int(x.group(1)) if x else 0
    pre = sum(1 for r in d if m(r) > 128 and r.get("winner_source") == "jit")
    dec_ = sum(1 for r in d if 0 < m(r) <= 128 and r.get("winner_source") == "jit")
    print(f"{who:5} {pas:12} {p:3}  {wall:>7}  {eng:8.2f}  {comp:8}  {fin:9}  {look:4.0f}  {pre} of 4, {dec_} of 4")
print("\nper key (engine ms / compiled / raced / winner us / source)")
for line in open(os.path.join(w, "walls.txt")):
    who, pas, p = line.split()[:3]
    for r in load(os.path.join(w, f"{who}_{pas}{p}.json")):
        if "M=" not in r.get("key", ""): continue
        k = re.search(r"M=(\d+),N=(\d+),K=(\d+)", r["key"]).groups()
        v = r.get("vs_default") or {}
        print(f"{who:5} {pas:12} {p} {'x'.join(k):16} {r.get('total_wall_ms',0):6.0f} "
              f"c{r.get('compiled',0):3} r{(r.get('search') or {}).get('reached',0):3} "
              f"cw{r.get('compile_wall_ms',0):6.0f} fin{r.get('finalists_ms',0):5.0f} "
              f"{v.get('winner_us',0):8.1f} {r.get('winner_source','')}")
PY
