#!/usr/bin/env bash
# GPU machine: the Python package over the C++ tree in /tmp/kb (dev/device_build.sh), its GPU tests
# with torch, python/bench/bench_call_cpu.py (a call's host cost on the simulated backend) and
# tests/gpu/l2_flush_gpu_test (the harness's read flush), python/bench/bench_gpu.py (tuned-call
# host cost, GPU-gated CPU time and wall clock, vs a raw launch, Triton and torch, row-wise ops vs copy
# bandwidth three ways with the chosen config, ktune.ops.gemm vs torch.matmul and torch.compile
# on the 8 LLM-suite shapes; about 4 minutes cold). Logs under $OUT.
#   bash dev/python_device.sh            (also STAGE=python bash dev/device_wave2.sh)
#   PY_BENCH_ARGS=--quick                a shorter bench (2 shapes per row-wise op, 4 GEMM shapes)
#   PY_BENCH_ARGS=--no-compile           without the torch.compile peers
#   PY_BENCH_ARGS=--max-autotune         adds torch.compile(mode="max-autotune") to the GEMMs
#   PY_BENCH_ARGS=--only=call,bandwidth  some of the bench's three tables (call, bandwidth, gemm)
#   PY_TESTS=0                           no pytest, flush test or simulated-backend call cost
#   PY_BENCH=0                           no bench_gpu.py (the package alone: dev/llama_device.sh)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PY=${PYTHON:-python3}
KB=${KTUNE_BUILD_DIR:-/tmp/kb}
export KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/kcache}
T0=$(date +%s)
if [ ! -f "$KB/CMakeCache.txt" ]; then
  bash dev/device_build.sh libktune ktune > "$OUT/py_core_build.log" 2>&1 || { tail -30 "$OUT/py_core_build.log"; exit 1; }
fi
# What setup.py does, without setuptools: configure the extension into $KB, build, copy.
manual_install() {
  local pb; pb=$($PY -c 'import pybind11; print(pybind11.get_cmake_dir())' 2>/dev/null || true)
  cmake -S . -B "$KB" -DKTUNE_BUILD_PYTHON=ON -DPYTHON_EXECUTABLE="$(command -v "$PY")" \
        -DPython_EXECUTABLE="$(command -v "$PY")" ${pb:+-Dpybind11_DIR=$pb} &&
  cmake --build "$KB" --target _ktune ktune -j"$(nproc)" &&
  mkdir -p "$PKG/ktune/bin" && cp python/ktune/*.py "$PKG/ktune/" &&
  cp "$KB"/python/ktune/_ktune*.so "$PKG/ktune/" && cp -L "$KB/api/libktune.so.0.1" "$PKG/ktune/" &&
  cp "$KB/tools/ktune" "$KB/tools/ktune-worker" "$PKG/ktune/bin/"
}
# Install: pip into a target folder (no venv needed, nothing system-wide touched); if pip cannot,
# setup.py in place. Either way only the extension is compiled in $KB.
PKG=/tmp/kpy; rm -rf "$PKG"
if KTUNE_BUILD_DIR="$KB" $PY -m pip install -q --no-build-isolation --no-deps --target "$PKG" ./python \
     > "$OUT/py_install.log" 2>&1; then
  export PYTHONPATH="$PKG${PYTHONPATH:+:$PYTHONPATH}"
  echo "python package: pip install --target $PKG ok ($(( $(date +%s) - T0 ))s)"
elif (cd python && KTUNE_BUILD_DIR="$KB" $PY setup.py build_ext --inplace) >> "$OUT/py_install.log" 2>&1; then
  export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
  echo "python package: setup.py build_ext --inplace ok (pip failed, see py_install.log)"
elif manual_install >> "$OUT/py_install.log" 2>&1; then
  export PYTHONPATH="$PKG${PYTHONPATH:+:$PYTHONPATH}"
  echo "python package: CMake + copy into $PKG ok (pip and setuptools failed, see py_install.log)"
else
  tail -30 "$OUT/py_install.log"; exit 1
fi
$PY -c "import ktune, torch; print('ktune', ktune.__version__, ktune.__file__, 'torch', torch.__version__)"
if [ "${PY_TESTS:-1}" != 0 ]; then
(cd python/tests && timeout 600 $PY -m pytest -q -p no:cacheprovider -rs . > "$OUT/py_tests.log" 2>&1)
echo "pytest rc=$?: $(tail -1 "$OUT/py_tests.log")"
grep -E "^(FAILED|ERROR|SKIPPED)" "$OUT/py_tests.log" | head -20 | cut -c1-200
# The engine harness's clean (read) L2 flush on this GPU, and a 64 MiB copy after each flush kind.
if [ -x "$KB/tests/l2_flush_gpu_test" ]; then
  timeout 120 "$KB/tests/l2_flush_gpu_test" > "$OUT/l2_flush_gpu.txt" 2>&1
  echo "l2_flush_gpu_test rc=$?: $(grep -E "PASSED|FAILED" "$OUT/l2_flush_gpu.txt" | head -2 | tr '\n' ' ')"
  grep -E "^RESULT|Failure|error" "$OUT/l2_flush_gpu.txt" | head -5 | cut -c1-200
fi
(cd python/bench && timeout 60 $PY bench_call_cpu.py > "$OUT/py_call_cpu.txt" 2>&1)
echo "call cost on the simulated backend (binding + engine host work, ns):"; tail -6 "$OUT/py_call_cpu.txt"
fi
if [ "${PY_BENCH:-1}" != 0 ]; then
(cd python/bench && timeout 500 $PY bench_gpu.py ${PY_BENCH_ARGS:-} > "$OUT/py_bench.txt" 2>&1)
echo "bench rc=$?"; grep -v "^RESULT" "$OUT/py_bench.txt" | tail -70 | cut -c1-200
fi
echo "python stage $(( $(date +%s) - T0 ))s"
