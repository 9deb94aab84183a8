#!/usr/bin/env bash
# GPU machine (carry .devwork/search, staged by `bash dev/lead_stage.sh DEST` and
# build/bench/compile_split_bench copied to DEST/pb/bench): issue 34's cold path in one call.
#   1. dev/gpu_pass_device.sh's tuning-time pairs (TUNE_MODES: the compile workers on/off, cold then
#      warm) and the suite cold/warm, no tests (its TUNE/SUITE steps, env passed through);
#   2. compile_split_bench on the configs the first cold run compiled: each compile split into
#      NVRTC's front end + NVVM (source -> PTX), the back end (PTX -> cubin, nvJitLink), the whole
#      compile with NVRTC's --time table, and the front end alone (-fdevice-syntax-only); alone
#      (ALONE configs, default 4), all at once (one process each), the tma configs alone at once;
#      NVRTC's --pch on the front end (the same config 3 times in one process, with and without).
# Every compile here has NVRTC's cache off (CUDA_CACHE_DISABLE=1). Tables last; logs in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/split; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s)
OUT=$OUT TUNE=${TUNE:-1} SUITE=${SUITE:-1} TEST_S=0 PROGRAMS=none DEADLINE=${DEADLINE:-110} \
  bash dev/gpu_pass_device.sh > "$W/gpu_pass.txt" 2>&1
echo "gpu pass $(( $(date +%s) - T0 )) s"
PB=$PWD/pb; B=$PB/bench/compile_split_bench
export LD_LIBRARY_PATH="$PB/api:$PB/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CUDA_CACHE_DISABLE=1
tar -xzf "$OUT/gpu_pass_logs.tgz" -C "$W" ./tune_cold_p1_1.json 2>/dev/null || tar -xzf "$OUT/gpu_pass_logs.tgz" -C "$W"
python3 - "$W" <<'PY'
import json, sys
w = sys.argv[1]; t = open(f"{w}/tune_cold_p1_1.json").read()
r = json.JSONDecoder().raw_decode(t[t.find("{"):])[0]; r = r[0] if isinstance(r, list) else r
cf = [c["config"] for c in r.get("candidates", []) if c.get("source") == "jit" and c.get("status") in
      ("ok", "timeout") and not c.get("reason", "").startswith("not reached")]
cf.sort(key=lambda c: "KIND=tma" not in c)  # tma first
open(f"{w}/c.cfg", "w").write("\n".join(cf) + "\n")
print("CONFIGS", len(cf), "tma", sum("KIND=tma" in c for c in cf))
PY
N=$(grep -c . "$W/c.cfg"); NT=$(grep -c 'KIND=tma' "$W/c.cfg")
one() { "$B" --configs="$W/c.cfg" --dir="$W" "$@" >> "$W/split.txt" 2>&1; }
mode() { echo "== $1" >> "$W/split.txt"; }
wave() {  # label phase count: `count` processes (configs 0..count-1) at once
  local at; at=$(python3 -c 'import time; print(int(time.time()*1000)+1200)'); mode "$1"
  for i in $(seq 0 $(( $3 - 1 ))); do one --index=$i --phase="$2" --at="$at" --label="${1// /_}" & done
  wait
}
# Alone: ALONE configs (the first tma ones, then the last, an mma config when there is one).
ALONE=${ALONE:-4}
for i in $(seq 0 $(( ALONE - 2 ))) $(( N - 1 )); do
  for p in syntax ptx link full; do mode "alone $p"; one --index="$i" --phase="$p" --label=alone; done
done
for p in ptx link full syntax; do wave "all$N $p" "$p" "$N"; done
wave "tma$NT full" full "$NT"
mode "pch off"; one --index=0 --phase=syntax --repeat=3
mode "pch on"; one --index=0 --phase=syntax --repeat=3 "--extra=--pch;--pch-dir=$W"
mode "pch on, another config after"; one --index=1 --phase=syntax --repeat=1 "--extra=--pch;--pch-dir=$W"
tar -czf "$OUT/split.tgz" -C "$W" --exclude='*.ptx' .
cat "$W/gpu_pass.txt" | sed -n '/== tuning time/,$p' | head -40
python3 - "$W" <<'PY'
import sys, glob, os, statistics as st, collections
w = sys.argv[1]; mode = None; rows = collections.OrderedDict()
for line in open(f"{w}/split.txt"):
    if line.startswith("== "): mode = line[3:].strip(); rows.setdefault(mode, []); continue
    f = line.split()
    if f and f[0] == "SPLIT": rows[mode].append((int(f[2]), int(f[3]), float(f[4]), f[7], " ".join(f[8:])[:60]))
    elif line.strip(): print("  ", mode, line.strip()[:160])
print("\nmode                        n   tma ms mean/min/max         other ms mean   errors")
for m, r in rows.items():
    t = [x[2] for x in r if x[3] == "tma"]; o = [x[2] for x in r if x[3] != "tma"]
    bad = [x[4] for x in r if x[4] != "ok"]
    ts = f"{st.mean(t):7.0f} {min(t):7.0f} {max(t):7.0f}" if t else " " * 23
    print(f"{m:26} {len(r):3}  {ts}   {st.mean(o) if o else 0:9.0f}   {bad[:1]}")
    if "pch" in m: print("     per rep:", [f"{x[2]:.0f}" for x in r])
# NVRTC's own --time tables (time_LABEL_full_I_0.csv), per label: tma configs (the first NT).
nt = sum("KIND=tma" in l for l in open(f"{w}/c.cfg"))
ph = collections.defaultdict(list)
for p in sorted(glob.glob(f"{w}/time_*_full_*_0.csv")):
    b = os.path.basename(p)[5:-4]; lab, idx = b[:b.rfind("_full_")], int(b.split("_")[-2])
    for l in open(p):
        f = [x.strip() for x in l.split(",")]
        if len(f) >= 4 and f[3] == "ms": ph[(lab, "tma" if idx < nt else "other", f[1])].append(float(f[2]))
print("\nNVRTC --time phases per full compile (ms, mean/max):")
for (lab, kind, name), v in ph.items(): print(f"  {lab:14} {kind:5} {name:22} {st.mean(v):7.0f} {max(v):7.0f}  n={len(v)}")
PY
echo "total $(( $(date +%s) - T0 )) s"
