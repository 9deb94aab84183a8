#!/usr/bin/env bash
# Dev machine (no GPU; NVRTC compiles for sm_90a on the CPU): two or more builds' compile of the
# same GEMM configs by CPU time (user + sys of one compile_split_bench --phase=full process,
# NVRTC's cache off), builds alternating in each round, so a loaded machine's drift hits all alike.
# NVRTC's own --time phases are wall times and read 1.5-2.5x the CPU time under load (issue 34,
# bench/NOTES.md), so the CPU time is the metric here.
#   bash dev/fp8_compile_cpu.sh CONFIGS "INDICES" ROUNDS NAME=BENCH [NAME=BENCH ...]
# BENCH: a build's bench/compile_split_bench (its kernel sources are embedded); prints per config
# and build the median (min-max) CPU s and each round's ratio to the first build.
set -uo pipefail
CFG=$1 IDX=$2 ROUNDS=$3; shift 3
W=$(mktemp -d); export CUDA_CACHE_DISABLE=1
for r in $(seq 1 "$ROUNDS"); do for i in $IDX; do for nb in "$@"; do
  n=${nb%%=*} b=${nb#*=}
  /usr/bin/time -f "%U %S" -o "$W/t" "$b" --configs="$CFG" --index="$i" --phase=full \
    --dir="$W/d" > /dev/null 2>&1 || echo "$n $i round $r failed" >&2
  awk -v n="$n" -v i="$i" -v r="$r" '{print n, i, r, $1 + $2}' "$W/t" >> "$W/cpu.txt"
done; done; done
python3 - "$W/cpu.txt" "${1%%=*}" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]; first = sys.argv[2]
t = {(n, i, r): float(s) for n, i, r, s in rows}
for i in sorted({i for _, i, _, _ in rows}, key=int):
    for n in dict.fromkeys(n for n, _, _, _ in rows):
        xs = [v for (a, b, _), v in t.items() if a == n and b == i]
        ratio = " ".join(f"{t[(n, i, r)] / t[(first, i, r)]:.2f}" for (a, b, r) in t
                         if a == n and b == i and (first, i, r) in t) if n != first else ""
        print(f"config {i:>2} {n:6s} cpu {st.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f}) {ratio}")
PY
rm -rf "$W"
