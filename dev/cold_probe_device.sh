#!/usr/bin/env bash
# GPU machine (carry .devwork/cold, staged by dev/cold_probe_stage.sh): issue 34, why one GEMM
# shape's cold compile wave is as long as it is on this host, in ONE call:
#   1. the host: lscpu, nproc, SMT siblings, MHz, memory, GPUs;
#   2. cuInit (+ the first queries) against NVML, and cuInit with CUDA_VISIBLE_DEVICES=0, each in a
#      fresh process (init_probe.py, INIT_ROUNDS rounds);
#   3. one config's compile (the 4096^3 winner B, fp8_wave4096.cfg index 0) alone and as N copies
#      at once (N in NS, default "1 4 8 15 31"), each copy its own process (compile_split_bench
#      --phase=full --at, NVRTC warmed up, its cache off); wall ms per copy and user / sys CPU s;
#   4. cold `ktune tune gemm --m 4096 --n 4096 --k 4096 --layout NT` (empty store, fresh
#      CUDA_CACHE_PATH, compile workers and isolation on, timeline on), the variants in VARIANTS
#      ("tag:build:ENV=V,ENV=V" items; default base and new with no extra environment) rotated per
#      round, ROUNDS rounds, GAP s apart, while DEADLINE s last.
# Logs in $OUT/probe.tgz; tables last.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/probe; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s); DEADLINE=${DEADLINE:-60}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
pack() { tar -czf "$OUT/probe.tgz" -C "$W" --exclude='kc-*' --exclude='cc-*' --exclude='cs' . ; }
trap pack EXIT
[ -d pb ] || tar -xJf pb.tar.xz
{ lscpu; echo "nproc $(nproc)"; for c in 0 1 2 16 17; do
    f=/sys/devices/system/cpu/cpu$c/topology; [ -d $f ] && echo "cpu$c siblings $(cat $f/thread_siblings_list) core $(cat $f/core_id) pkg $(cat $f/physical_package_id)"; done
  grep MHz /proc/cpuinfo | sort | uniq -c | head -5; free -g; nvidia-smi -L
  cat /sys/fs/cgroup/cpu.max 2>/dev/null; uname -r; } > "$W/host.txt" 2>&1
timeout 20 pb/base/tools/ktune info > "$W/info.txt" 2>&1  # the call's first context: not timed
python3 - "${INIT_ROUNDS:-3}" > "$W/init.txt" 2>&1 <<'PY'
import os, statistics, subprocess, sys
got = {}
for r in range(int(sys.argv[1])):
    for tag, env in (("cuinit", {}), ("cuinit_vis0", {"CUDA_VISIBLE_DEVICES": "0"}), ("nvml", {})):
        mode = "nvml" if tag == "nvml" else "cuinit"
        e = dict(os.environ, **env)
        line = subprocess.run([sys.executable, "init_probe.py", "--child", mode], env=e,
                              capture_output=True, text=True).stdout.strip()
        print(f"round {r} {tag} {line}")
        f = line.split()
        if "init+query" in f: got.setdefault(tag, []).append(float(f[f.index("init+query") + 1]))
for k, v in got.items():
    print(f"INIT {k} median {statistics.median(v):.1f} ms (min {min(v):.1f}, max {max(v):.1f}, n {len(v)})")
PY
RU='import resource, subprocess, sys
subprocess.run(sys.argv[1:]); r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("RU %.3f %.3f %d %d" % (r.ru_utime, r.ru_stime, r.ru_minflt, r.ru_maxrss))'
export CUDA_CACHE_DISABLE=1
for n in ${NS:-1 4 8 15 31}; do
  [ "$(left)" -gt 25 ] || break
  a=$(( $(date +%s%3N) + 1500 )); mkdir -p "$W/cs"
  for i in $(seq 1 "$n"); do
    python3 -c "$RU" pb/base/bench/compile_split_bench --configs=fp8_wave4096.cfg --index=${IDX:-0} \
      --phase=full --at=$a --dir="$W/cs" --label="n$n" > "$W/cs_${n}_$i.txt" 2>&1 &
  done
  wait
done
unset CUDA_CACHE_DISABLE
source "$(dirname "$0")/cold_tune.sh"
tune() {  # tag build env run-tag
  local e=()
  IFS=, read -ra e <<< "$3"
  cold_tune "pb/$2/tools/ktune" "$1" "$4" "${e[@]}"
}
read -ra vars <<< "${VARIANTS:-base:base: new:new:}"
nv=${#vars[@]}
for r in $(seq 1 "${ROUNDS:-4}"); do
  for k in $(seq 0 $(( nv - 1 ))); do
    [ "$(left)" -gt 5 ] || break 2
    IFS=: read -r tag b env <<< "${vars[$(( (k + r - 1) % nv ))]}"
    tune "$tag" "$b" "$env" "${tag}_$r"
  done
done
pack
python3 cold_probe_table.py "$W"
echo "total $(( $(date +%s) - T0 )) s"
