#!/usr/bin/env bash
# GPU side of issue 18 (per-config sources): examples/c_compiler.c on the GPU (its generated PTX,
# one module per config through the C API's source_fn, run for real); then the MLIR-written
# RMSNorm and SiLU·Mul. The GPU machine has no mlir-opt-19, so those are lowered to PTX on the dev
# machine (bash dev/mlir_lower.sh -> .mlirptx/, an ignored folder carried with the tree). Here: the
# GPU test that tunes those modules through the per-config source callback and verifies them, then
# the row-wise bench rows "mlir ..." next to the C++ templates and the same-run copy (targets:
# >= 0.95 of copy, within 3% of C++).
# Called by dev/device_wave2.sh (STAGE=mlir, or MLIR=1 with any stage); needs its build in $B.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=${B:-/tmp/kb}
KTUNE_CACHE_DIR=/tmp/kcache-ccompiler timeout 120 "$B/examples/ktune_c_compiler" auto \
  > "$OUT/c_compiler.txt" 2>&1
echo "examples/c_compiler auto rc=$?"; tail -3 "$OUT/c_compiler.txt" | cut -c1-200
if [ ! -d .mlirptx ]; then
  echo "mlir: no .mlirptx here (run bash dev/mlir_lower.sh on the dev machine, carry .mlirptx)"
  exit 0
fi
echo "mlir: $(ls .mlirptx | wc -l) lowered PTX modules"
timeout 300 "$B/tests/source_fn_mlir_gpu_test" > "$OUT/source_fn_mlir_gpu_test.txt" 2>&1
echo "source_fn_mlir_gpu_test rc=$?"
grep -E "winner|^\[  (     OK|FAILED |SKIPPED) \]|Failure|wrong" "$OUT/source_fn_mlir_gpu_test.txt" \
  | head -20 | cut -c1-200
F='^(Mlir)?(RmsNorm|SiluMul)/bf16/(4096x4096|16384x8192|4096x2x14336|16384x2x14336)(/|$)'
timeout 420 "$B/bench/rowwise_bench" --mlir-ptx="$PWD/.mlirptx" --benchmark_filter="$F" \
  > "$OUT/rowwise_mlir.txt" 2>&1
echo "rowwise_bench mlir vs C++ vs copy rc=$?"
sed -n '/^rowwise bench on/,$p' "$OUT/rowwise_mlir.txt" | cut -c1-200
