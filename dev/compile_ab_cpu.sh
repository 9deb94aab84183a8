#!/usr/bin/env bash
# Dev machine (no GPU: NVRTC compiles for sm_90a on the CPU): two builds' compile of the same GEMM
# configs, alternately, one process per compile, NVRTC's cache off: per config and build the wall
# and NVRTC's --time phases (front end, NVVM, PTX -> SASS), median (min-max) over REPS processes.
#   bash dev/compile_ab_cpu.sh BASE_BENCH NEW_BENCH CONFIGS "INDICES" [REPS]
# BENCH: build/bench/compile_split_bench of each build; CONFIGS: one config a line (e.g.
# dev/fp8_compile_configs.cfg); INDICES: lines to compile (0-based). Issue 34 (bench/NOTES.md).
set -uo pipefail
BASE=$1 NEW=$2 CFG=$3 IDX=$4 REPS=${5:-3}
W=$(mktemp -d); export CUDA_CACHE_DISABLE=1
for i in $IDX; do for r in $(seq 1 "$REPS"); do for v in base new; do
  B=$BASE; [ $v = new ] && B=$NEW
  mkdir -p "$W/$v$i"
  "$B" --configs="$CFG" --index="$i" --phase=full --dir="$W/$v$i" --label="r$r" |
    awk -v v=$v '{print v, $3, $5}' >> "$W/walls.txt"
done; done; done
python3 - "$W" <<'PY'
import glob, statistics as st, sys
w = sys.argv[1]; walls = {}
for line in open(f"{w}/walls.txt"):
    v, i, ms = line.split(); walls.setdefault((i, v), []).append(float(ms))
f = lambda x: f"{st.median(x):.0f} ({min(x):.0f}-{max(x):.0f})"
for (i, v), ws in sorted(walls.items()):
    ph = {}
    for p in glob.glob(f"{w}/{v}{i}/time_*.csv"):
        for row in open(p).read().splitlines()[1:]:
            c = [t.strip() for t in row.split(",")]; ph.setdefault(c[1].split()[0], []).append(float(c[2]))
    print(f"config {i} {v:4s} wall {f(ws)}  " + "  ".join(f"{k} {f(x)}" for k, x in ph.items()))
PY
rm -rf "$W"
