#!/usr/bin/env bash
# GPU machine (carry .devwork/search, staged by `BENCH=1 bash dev/regret_stage.sh DEST`): where a
# cold tuning's compile time goes (issue 34). (a) the same tma configs compiled by N threads of one
# process, by N processes started together, and one at a time; (b) the fast tier: NVRTC's
# --Ofast-compile builds of the same configs against the tuner's builds, compile times and the
# kernels timed interleaved (ranking, regret of finishing the fast tier's top k). The configs are
# the ones a cold `ktune tune` of each shape compiled, in this call. Logs in $OUT; tables last.
#   FASTS="--Ofast-compile=max --Ofast-compile=mid" N=15 bash dev/compile_tier_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/ct; rm -rf "$W"; mkdir -p "$W"
[ -d pb ] || tar -xJf pb.tar.xz
K=pb/tools/ktune; B=pb/tools/compile_tier_bench
export LD_LIBRARY_PATH=$PWD/pb${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}  # libbenchmark for the bench
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
echo "nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo); siblings $(grep -m1 siblings /proc/cpuinfo | cut -d: -f2) cores $(grep -m1 'cpu cores' /proc/cpuinfo | cut -d: -f2)"
tune() {  # name args...: a cold tuning (empty store, fresh database)
  local n=$1; shift; rm -rf "/tmp/kc-$n"; local S; S=$(date +%s.%N)
  KTUNE_CACHE_DIR=/tmp/kc-$n CUDA_CACHE_PATH=$(mktemp -d) timeout 90 $K tune gemm "$@" --json --quiet \
    > "$W/$n.json" 2> "$W/$n.err"
  echo "TUNE $n rc=$? wall $(awk -v a="$S" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')" | tee -a "$W/log"
}
tune p4096 --m 4096 --n 4096 --k 4096 --layout NT
tune d16 --m 16 --n 6144 --k 4096 --layout NT
(python3 - "$W" <<'PY'
import json, sys
w = sys.argv[1]
for n in ("p4096", "d16"):
    t = open(f"{w}/{n}.json").read(); r = json.JSONDecoder().raw_decode(t[t.find("{"):])[0]
    if isinstance(r, list): r = r[0]
    cj = r.get("compile_jobs", {})
    print(f"TUNEJSON {n} engine {r.get('total_wall_ms',0):.0f} ms compiled {r.get('compiled')} "
          f"compile_wall {r.get('compile_wall_ms',0):.0f} jobs {json.dumps(cj)}")
    cf = [c["config"] for c in r.get("candidates", []) if c.get("source") == "jit" and c.get("status") in
          ("ok", "timeout") and not c.get("reason", "").startswith("not reached")]  # raced = compiled
    open(f"{w}/{n}.cfg", "w").write("\n".join(cf) + "\n")
    print(f"CONFIGS {n} {len(cf)}")
PY
) | tee -a "$W/log"
N=${N:-15}
# A fresh driver cache per run: NVRTC 13 answers a repeated compile from it (its first call,
# without this, timed cache hits after the first pass; bench/NOTES.md, seventeenth session).
run() { echo "== $*" >> "$W/bench.txt"; CUDA_CACHE_PATH=$(mktemp -d) "$B" "$@" >> "$W/bench.txt" 2>&1; }
procs() {  # cfg fast...: N processes, each one config, started together
  local cfg=$1; shift; local at; at=$(python3 -c 'import time; print(int(time.time()*1000)+1500)')
  local cnt; cnt=$(grep -c . "$cfg"); local S; S=$(date +%s.%N)
  echo "== procs $cfg $*" >> "$W/bench.txt"
  local d; d=$(mktemp -d)
  for i in $(seq 0 $((cnt < N ? cnt - 1 : N - 1))); do
    CUDA_CACHE_PATH=$d "$B" --configs="$cfg" --one=$i --at=$at "$@" > "$W/proc_$i.txt" 2>&1 &
  done
  wait; cat "$W"/proc_*.txt | grep JOB >> "$W/bench.txt"; rm -f "$W"/proc_*.txt
  echo "WALL procs $cnt $(awk -v a="$at" -v b="$(date +%s%3N)" 'BEGIN{printf "%.1f", b-a}') (from --at)" >> "$W/bench.txt"
}
C4=$W/p4096.cfg; C16=$W/d16.cfg
for rep in 1 2; do
  run --configs="$C4" --threads="$N"
  procs "$C4"
done
run --configs="$C4" --seq
run --configs="$C4" --threads=8; procs "$C4" # 15 procs again after an 8-thread pass
for f in ${FASTS:---Ofast-compile=max --Ofast-compile=mid}; do
  run --configs="$C4" --seq --fast="$f"
  run --configs="$C4" --threads="$N" --fast="$f"
  run --configs="$C4" --shape=4096x4096x4096 --rank --fast="$f"
  run --configs="$C16" --shape=16x6144x4096 --rank --fast="$f"
done
run --configs="$C16" --threads="$N"; procs "$C16"
cp "$W/bench.txt" "$W/log" "$OUT/" 2>/dev/null; tar czf "$OUT/ct.tgz" -C "$W" .
python3 - "$W/bench.txt" <<'PY'
import sys, re, statistics as st
mode = None; rows = {}
for line in open(sys.argv[1]):
    if line.startswith("== "): mode = line[3:].strip(); rows.setdefault(mode, [])
    elif line.startswith("JOB "):
        f = line.split(); rows[mode].append((float(f[3]), float(f[5]), float(f[6])))
    elif line.startswith(("WALL", "RANKSUM", "RANKCOMPILE", "WARMUP")) and not line.startswith("WARMUP"):
        print(f"{(mode or '')[:70]:70} | {line.strip()}")
print("\nper mode: jobs, job wall ms mean / median / max, span ms (first start to last end)")
for m, r in rows.items():
    if not r: continue
    w = [x[0] for x in r]
    print(f"{m[:80]:80} {len(r):3} {st.mean(w):7.0f} {st.median(w):7.0f} {max(w):7.0f} "
          f"{max(x[2] for x in r) - min(x[1] for x in r):7.0f}")
PY
cat "$W/log"
