#!/usr/bin/env bash
# GPU machine (carry .devwork/search, staged by `BENCH=compile_tier_bench bash dev/regret_stage.sh
# DEST`): are a cold tuning's parallel NVRTC compiles slower as threads of one process than in
# processes, and does NVRTC's own cache (the driver's compute cache, which NVRTC 13 reads and
# writes: CUDA_CACHE_PATH / CUDA_CACHE_DISABLE) cost the cold compiles? Every compile here is
# cold: a fresh CUDA_CACHE_PATH per run, or the cache off. (a) compile_tier_bench: the 15 configs
# a cold 4096^3 tuning compiles, on 15 threads, through 15 compile workers (the tuner's
# KTUNE_COMPILE_PROCESSES=1 path), as 15 processes, and alone; (b) `ktune tune` cold: 4096^3 with
# the base path, KTUNE_COMPILE_PROCESSES=1, CUDA_CACHE_DISABLE=1 and both, twice each; then the
# LLM suite cold with the base path and with the variant fastest at 4096^3. Tables last.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/cp; rm -rf "$W"; mkdir -p "$W"
[ -d pb ] || tar -xJf pb.tar.xz
K=pb/tools/ktune; B=pb/tools/compile_tier_bench; WK=$PWD/pb/tools/ktune-worker
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader; nproc
vars() { case $1 in base) ;; procs) echo KTUNE_COMPILE_PROCESSES=1 ;; nocache) echo CUDA_CACHE_DISABLE=1 ;;
         procs_nocache) echo KTUNE_COMPILE_PROCESSES=1 CUDA_CACHE_DISABLE=1 ;; esac; }
tune() {  # variant name args...: a cold tuning (empty store, fresh NVRTC/driver cache)
  local v=$1 n=$2; shift 2; rm -rf "/tmp/kc-$n"; local S; S=$(date +%s.%N)
  env $(vars "$v") KTUNE_CACHE_DIR=/tmp/kc-$n CUDA_CACHE_PATH=$(mktemp -d) timeout 90 $K tune gemm "$@" \
    --json --quiet > "$W/$n.json" 2> "$W/$n.err"
  local rc=$?
  echo "TUNE $v $n rc=$rc wall $(awk -v a="$S" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')" >> "$W/walls.txt"
  tail -1 "$W/walls.txt"
}
tune base p4096_0 --m 4096 --n 4096 --k 4096 --layout NT
python3 - "$W" <<'PY'
import json, sys
w = sys.argv[1]; t = open(f"{w}/p4096_0.json").read(); r = json.JSONDecoder().raw_decode(t[t.find("{"):])[0]
r = r[0] if isinstance(r, list) else r
cf = [c["config"] for c in r.get("candidates", []) if c.get("source") == "jit" and c.get("status") in
      ("ok", "timeout") and not c.get("reason", "").startswith("not reached")]
open(f"{w}/c.cfg", "w").write("\n".join(cf) + "\n")
open(f"{w}/tma.cfg", "w").write("\n".join(c for c in cf if "KIND=tma" in c) + "\n")
print("CONFIGS", len(cf))
PY
C=$W/c.cfg; N=15
bench() {  # label cache(fresh|off) args...
  local l=$1 c=$2; shift 2; echo "== $l" >> "$W/bench.txt"
  if [ "$c" = off ]; then CUDA_CACHE_DISABLE=1 "$B" "$@" >> "$W/bench.txt" 2>&1
  else CUDA_CACHE_PATH=$(mktemp -d) "$B" "$@" >> "$W/bench.txt" 2>&1; fi
}
procs() {  # label cache: N processes, one config each, started together
  local l=$1 c=$2 at; at=$(python3 -c 'import time; print(int(time.time()*1000)+1500)')
  local d; d=$(mktemp -d); echo "== $l" >> "$W/bench.txt"
  for i in $(seq 0 $((N - 1))); do
    if [ "$c" = off ]; then CUDA_CACHE_DISABLE=1 "$B" --configs="$C" --one=$i --at=$at > "$W/p$i.txt" 2>&1 &
    else CUDA_CACHE_PATH=$d "$B" --configs="$C" --one=$i --at=$at > "$W/p$i.txt" 2>&1 & fi
  done
  wait; grep -h JOB "$W"/p*.txt >> "$W/bench.txt"; rm -f "$W"/p*.txt
}
for rep in 1 2; do
  bench "thread fresh $rep" fresh --configs="$C" --threads=$N
  bench "worker fresh $rep" fresh --configs="$C" --threads=$N --workers="$WK"
  bench "thread off $rep" off --configs="$C" --threads=$N
  bench "worker off $rep" off --configs="$C" --threads=$N --workers="$WK"
  procs "procs fresh $rep" fresh
done
bench "seq-tma off" off --configs="$W/tma.cfg" --seq
for rep in 1 2; do
  for v in base procs nocache procs_nocache; do tune $v "p4096_${v}_$rep" --m 4096 --n 4096 --k 4096 --layout NT; done
done
BEST=$(python3 - "$W/walls.txt" <<'PY'
import sys, statistics as st, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    f = l.split()
    if f[2].startswith("p4096_") and f[2] != "p4096_0": d[f[1]].append(float(f[-1]))
m = {v: st.median(x) for v, x in d.items() if v != "base"}
print(min(m, key=m.get) if m else "procs_nocache")
PY
)
tune base suite_base --suite llm
tune "$BEST" "suite_$BEST" --suite llm
cp "$W/bench.txt" "$W/walls.txt" "$OUT/" 2>/dev/null; tar czf "$OUT/cp.tgz" -C "$W" .
python3 - "$W" <<'PY'
import sys, json, glob, os, statistics as st
w = sys.argv[1]; mode = None; rows = {}
for line in open(f"{w}/bench.txt"):
    if line.startswith("== "): mode = line[3:].strip(); rows.setdefault(mode, [])
    elif line.startswith("JOB "): f = line.split(); rows[mode].append((float(f[3]), float(f[5]), float(f[6]), f[7]))
    elif line.startswith("WORKERS"): print(mode, line.strip())
print("mode                 jobs  tma job ms mean/max   all mean   span ms")
for m, r in rows.items():
    if not r: continue
    t = [x[0] for x in r if x[3] == "tma"] or [0]
    print(f"{m:20} {len(r):4}  {st.mean(t):7.0f} {max(t):7.0f}   {st.mean(x[0] for x in r):7.0f}  "
          f"{max(x[2] for x in r) - min(x[1] for x in r):7.0f}")
print("\nrun                          wall s  engine s  compiled  compile wall  job mean  procs")
for l in open(f"{w}/walls.txt"):
    f = l.split(); n = f[2]; p = f"{w}/{n}.json"
    try:
        t = open(p).read(); d = []; dec = json.JSONDecoder(); i = t.find("{")
        while i >= 0:
            o, e = dec.raw_decode(t[i:]); d += o if isinstance(o, list) else [o]; i = t.find("{", i + e)
    except Exception: d = []
    eng = sum(r.get("total_wall_ms", 0) for r in d) / 1e3; comp = sum(r.get("compiled", 0) for r in d)
    cw = sum(r.get("compile_wall_ms", 0) for r in d) / 1e3
    js = sum(r.get("compile_jobs", {}).get("job_ms_sum", 0) for r in d); jn = sum(r.get("compile_jobs", {}).get("jobs", 0) for r in d)
    pr = max([r.get("compile_jobs", {}).get("processes", 0) for r in d] + [0])
    print(f"{f[1]:14} {n:22} {f[-1]:>6}  {eng:7.2f}  {comp:8}  {cw:10.2f}  {js / max(jn, 1):8.0f}  {pr}")
PY
