#!/usr/bin/env bash
# GPU machine: dev/silu_probe.cu (SiLU·Mul structure and load cache hints vs a D2D copy, per-call
# events, two L2 flushes x two run orders) with ktune's own kernel compiled to cubins at a few
# configs, at the small and a large shape; then the Python bench's call and row-wise tables
# (dev/python_device.sh with PY_TESTS=0). Logs under $OUT.
#   bash dev/python_probe_device.sh        PROBE_ONLY=1: the probe alone (no ktune build)
#   PROBE_CONFIGS="VEC:THREADS:UNROLL:ROWS:LOAD_HINT ..."  ktune kernel configs to time
#   PROBE_BEFORE=path.cuh                   also time that kernel source (name prefix "before"; e.g.
#                                           the kernel before a change, from git show)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CONFIGS=${PROBE_CONFIGS:-"8:256:1:1:0 8:256:1:1:1 4:128:4:1:0 4:128:4:1:1 4:128:1:1:0 4:128:1:1:1 8:128:1:1:0 8:128:1:1:1"}
CUB=/tmp/probe_cubins; mkdir -p "$CUB"
specs=()
build_cubin() {  # name source vec threads unroll rows hint
  "$NVCC" -cubin -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -Icompiler -DDTYPE=2 \
    -DVEC="$3" -DTHREADS="$4" -DUNROLL="$5" -DROWS_PER_BLOCK="$6" -DLOAD_HINT="$7" -x cu "$2" \
    -o "$CUB/$1.cubin" >> "$OUT/probe_build.log" 2>&1
}
for c in $CONFIGS; do
  IFS=: read -r v t u r h <<< "$c"
  n="V${v}_T${t}_U${u}_R${r}_H${h}"
  build_cubin "$n" templates/kernels/silu_mul.cuh "$v" "$t" "$u" "$r" "$h" &
  specs+=("$n:$CUB/$n.cubin:$v:$t:$u:$r")
  if [ -n "${PROBE_BEFORE:-}" ] && [ "$h" = 0 ]; then
    build_cubin "before_$n" "$PROBE_BEFORE" "$v" "$t" "$u" "$r" 0 &
    specs+=("before_$n:$CUB/before_$n.cubin:$v:$t:$u:$r")
  fi
done
wait
if "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 dev/silu_probe.cu -o /tmp/silu_probe \
     -lcuda >> "$OUT/probe_build.log" 2>&1; then
  /tmp/silu_probe 4096 2048 40 "${specs[@]}" > "$OUT/silu_probe.txt" 2>&1
  /tmp/silu_probe 4096 14336 8 "${specs[@]}" >> "$OUT/silu_probe.txt" 2>&1
  cat "$OUT/silu_probe.txt"
else
  tail -20 "$OUT/probe_build.log"
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
[ "${PROBE_ONLY:-0}" = 1 ] && exit 0
PY_TESTS=0 PY_BENCH_ARGS="${PY_BENCH_ARGS:---only=call,bandwidth --no-compile}" \
  bash dev/python_device.sh
