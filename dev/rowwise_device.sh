#!/usr/bin/env bash
# Row-wise kernels on the GPU machine in one call: build the row-wise test/bench targets, run the
# GPU correctness sweep, the bandwidth benchmark and the torch/Triton peers; logs under $OUT,
# a short summary last. If the CMake targets do not build (other folders mid-edit), the three
# programs are linked by hand against the libraries they need (base, runtime, compiler,
# templates). Usage: [RUN_GPU_TEST=0] bash dev/rowwise_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
# GoogleTest / Google Benchmark from carried Debian packages when the image lacks them.
if [ -d .rowdeps ] && ! ls /usr/lib/x86_64-linux-gnu/libgtest.a /usr/local/lib/libgtest.a >/dev/null 2>&1; then
  for f in .rowdeps/*.deb; do dpkg -x "$f" /opt/deps; done
fi
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
T=/tmp/kb/tests; BB=/tmp/kb/bench
if ! bash dev/device_build.sh rowwise_gpu_test rowwise_ops_gpu_test rowwise_bench rowwise_compile_test > "$OUT/build.log" 2>&1; then
  echo "cmake targets failed (see build.log); linking by hand"; grep -m5 error "$OUT/build.log"
  bash dev/device_build.sh ktune_base ktune_runtime ktune_compiler ktune_templates >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
  L="/tmp/kb/compiler/libktune_compiler.a /tmp/kb/runtime/libktune_runtime.a /tmp/kb/templates/libktune_templates.a /tmp/kb/base/libktune_base.a"
  I="-I. -I/tmp/kb/generated -I/opt/deps/usr/include -L/opt/deps/usr/lib/x86_64-linux-gnu"
  mkdir -p /tmp/rw; T=/tmp/rw; BB=/tmp/rw
  g++ -std=c++20 -O2 $I tests/gpu/rowwise_gpu_test.cc $L -lgtest -lgtest_main -pthread -ldl -o $T/rowwise_gpu_test >> "$OUT/build.log" 2>&1 &
  g++ -std=c++20 -O2 $I tests/unit/rowwise_compile_test.cc $L -lgtest -lgtest_main -pthread -ldl -o $T/rowwise_compile_test >> "$OUT/build.log" 2>&1 &
  g++ -std=c++20 -O2 $I bench/rowwise_bench.cc $L -lbenchmark -pthread -ldl -o $BB/rowwise_bench >> "$OUT/build.log" 2>&1 &
  if bash dev/device_build.sh ktune_autotune >> "$OUT/build.log" 2>&1; then
    g++ -std=c++20 -O2 $I tests/gpu/rowwise_ops_gpu_test.cc /tmp/kb/autotune/libktune_autotune.a $L -lgtest -lgtest_main -pthread -ldl -o $T/rowwise_ops_gpu_test >> "$OUT/build.log" 2>&1
  fi
  wait
fi
timeout 60 $T/rowwise_compile_test > "$OUT/compile_test.log" 2>&1; echo "compile_test rc=$?"
if [ "${RUN_GPU_TEST:-1}" = 1 ]; then timeout 150 $T/rowwise_gpu_test > "$OUT/gpu_test.log" 2>&1; echo "gpu_test rc=$?"; fi
[ -f "$OUT/gpu_test.log" ] && grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure|got .* want" "$OUT/gpu_test.log" | head -40
timeout 150 $T/rowwise_ops_gpu_test > "$OUT/ops_gpu_test.log" 2>&1; echo "ops_gpu_test rc=$?"
grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure|tuned op" "$OUT/ops_gpu_test.log" | head -20
timeout 120 $BB/rowwise_bench --benchmark_counters_tabular=true --benchmark_out="$OUT/bench.json" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
timeout 110 python3 bench/peers.py > "$OUT/peers.log" 2>&1; echo "peers rc=$?"
cat "$OUT/gpu.txt"
tail -12 "$OUT/peers.log"
tail -9 "$OUT/bench.log"
