#!/usr/bin/env bash
# consumer_test: install the build into a temporary prefix and use it as an outside project would.
#   run.sh <build-dir> <work-dir> <source-dir>
# Needs the build's libktune, ktune and ktune-worker targets (built by the default target).
set -euo pipefail
build=$1 work=$2 src=$3
cmake_bin=${CMAKE:-cmake}
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
export KTUNE_CACHE_DIR=$work/cache KTUNE_WARMUP_MS=0.1 KTUNE_REP_MS=0.5
unset KTUNE_DB KTUNE_BACKEND KTUNE_ISOLATE KTUNE_TUNING || true

echo "== install into $prefix"
"$cmake_bin" --install "$build" --prefix "$prefix" > "$work/install.log"
libdir=$(dirname "$(find "$prefix" -name 'libktune.so' | head -1)")
for f in include/ktune/ktune.hpp include/ktune/ktune.h bin/ktune bin/ktune-worker; do
  test -e "$prefix/$f" || { echo "FAIL: $f not installed"; exit 1; }
done
test -e "$libdir/cmake/ktune/ktuneConfig.cmake" -a -e "$libdir/cmake/ktune/ktuneConfigVersion.cmake" \
  -a -e "$libdir/pkgconfig/ktune.pc" || { echo "FAIL: package files missing"; exit 1; }
# Only public headers: nothing under include/ may include an internal header.
if grep -rnE '^\s*#\s*include' "$prefix/include" | grep -vE '<[a-z_]+>|<(stddef|stdint)\.h>|"ktune/'; then
  echo "FAIL: an installed header includes a non-public header"; exit 1
fi

echo "== exported symbols"
bash "$src/tests/consumer/check_exports.sh" "$libdir/libktune.so"

echo "== C++ consumer: find_package(ktune)"
"$cmake_bin" -S "$src/tests/consumer/cxx" -B "$work/cxx" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" > "$work/cxx-configure.log" || { cat "$work/cxx-configure.log"; exit 1; }
"$cmake_bin" --build "$work/cxx" > "$work/cxx-build.log" || { cat "$work/cxx-build.log"; exit 1; }
"$work/cxx/ktune_consumer"

echo "== C consumer: pkg-config + cc"
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -std=c11 -Wall -Wextra -Werror -o "$work/c_embed" "$src/examples/c_embed.c" \
  $(pkg-config --cflags --libs ktune) -lm -Wl,-rpath,"$libdir"
"$work/c_embed" | tee "$work/c1.log"
grep -q "launches=1$" "$work/c1.log" && { echo "FAIL: the first run did not tune"; exit 1; }
# A second process finds the winner in the tuning database: one launch, nothing tuned again.
"$work/c_embed" | tee "$work/c2.log"
grep -q "launches=1$" "$work/c2.log" || { echo "FAIL: the second run did not hit the database"; exit 1; }
echo "== every example under examples/ from the installed package only"
# C: pkg-config + cc, each file alone; C++: one outside project over examples/*.cc and the
# README's example project (examples/readme). Each is built; the ones that run without a GPU on the
# simulated backend run once.
for f in "$src"/examples/*.c "$src"/examples/readme/*.c; do
  name=$(basename "$f" .c)
  cc -std=c11 -Wall -Wextra -Werror -o "$work/ex_$name" "$f" $(pkg-config --cflags --libs ktune) \
    -lm -Wl,-rpath,"$libdir" || { echo "FAIL: example $f does not build from the install"; exit 1; }
done
mkdir -p "$work/ptx"
(cd "$work" && KTUNE_CACHE_DIR=$work/cache-ex ./ex_c_compiler sim "$work/ptx") > "$work/ex_c_compiler.log" ||
  { cat "$work/ex_c_compiler.log"; echo "FAIL: examples/c_compiler.c"; exit 1; }
grep -q "result ok" "$work/ex_c_compiler.log" || { cat "$work/ex_c_compiler.log"; echo "FAIL: c_compiler result"; exit 1; }
for proj in "$src/tests/consumer/examples:-DKTUNE_EXAMPLES_DIR=$src/examples" "$src/examples/readme:"; do
  dir=${proj%%:*} def=${proj#*:}
  out=$work/ex-$(basename "$dir")
  "$cmake_bin" -S "$dir" -B "$out" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" $def \
    > "$out.configure.log" 2>&1 || { cat "$out.configure.log"; echo "FAIL: configure $dir"; exit 1; }
  "$cmake_bin" --build "$out" > "$out.build.log" 2>&1 ||
    { cat "$out.build.log"; echo "FAIL: an example in $dir does not build from the install"; exit 1; }
done
KTUNE_BACKEND=sim KTUNE_CACHE_DIR=$work/cache-ex "$work/ex-examples/user_kernel" 5003 > "$work/ex_user_kernel.log" ||
  { cat "$work/ex_user_kernel.log"; echo "FAIL: examples/user_kernel.cc"; exit 1; }
grep -q "0 of 5003 elements wrong" "$work/ex_user_kernel.log" ||
  { cat "$work/ex_user_kernel.log"; echo "FAIL: user_kernel result"; exit 1; }
KTUNE_BACKEND=sim KTUNE_CACHE_DIR=$work/cache-ex "$work/ex-readme/saxpy" > "$work/ex_saxpy.log" ||
  { cat "$work/ex_saxpy.log"; echo "FAIL: examples/readme/saxpy.cc"; exit 1; }

echo "== examples/llama.cc (built above from the install): its check on the simulated backend"
KTUNE_BACKEND=sim KTUNE_CACHE_DIR=$work/cache-ex "$work/ex-examples/llama" --check | tee "$work/llama.log"
grep -q "^families registered: llama_rope_kv key" "$work/llama.log" ||
  { echo "FAIL: llama --check on the simulated backend"; exit 1; }
echo "== a worker plugin built from the install prefix only (ktune/plugin.hpp)"
"$cmake_bin" -S "$src/tests/consumer/plugin" -B "$work/plugin" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" > "$work/plugin.configure.log" 2>&1 || { cat "$work/plugin.configure.log"; exit 1; }
"$cmake_bin" --build "$work/plugin" > "$work/plugin.build.log" 2>&1 ||
  { cat "$work/plugin.build.log"; echo "FAIL: the plugin does not build from the install"; exit 1; }
plugin=$work/plugin/libsaxpy_plugin.so
# It exports the entry point (hidden visibility otherwise) and uses the installed libktune.so,
# the worker's own copy, instead of carrying an engine of its own.
nm -D --defined-only "$plugin" | grep -qw ktune_register_kernels ||
  { echo "FAIL: the plugin does not export ktune_register_kernels"; exit 1; }
readelf -d "$plugin" | grep -q 'NEEDED.*libktune\.so' || { echo "FAIL: the plugin does not link libktune.so"; exit 1; }
readelf -d "$prefix/bin/ktune-worker" | grep -q 'NEEDED.*libktune\.so' ||
  { echo "FAIL: ktune-worker does not link libktune.so"; exit 1; }
# The installed worker loads it and registers its family (a plugin that fails to load or register
# stops the worker with status 2 before its hello; EOF then ends the worker).
env -u KTUNE_WORKER_PLUGINS "$prefix/bin/ktune-worker" --cache-dir "$work/cache-plugin" --backend sim \
  --plugin "$plugin" < /dev/null > "$work/plugin-hello.log" 2> "$work/plugin-worker.err" ||
  { cat "$work/plugin-worker.err"; echo "FAIL: ktune-worker with the plugin"; exit 1; }
grep -q '^{"event":"hello"' "$work/plugin-hello.log" ||
  { cat "$work/plugin-hello.log" "$work/plugin-worker.err"; echo "FAIL: no hello from the worker with the plugin"; exit 1; }
# Isolated tuning through it: the worker's simulated costs (VEC=1 fastest) pick the winner, not
# the tuner's (VEC=4), so the candidates were timed in the worker, found beside libktune.so.
(cd "$work" && env -u KTUNE_WORKER KTUNE_BACKEND=sim KTUNE_CACHE_DIR=$work/cache-plugin \
  "$work/plugin/plugin_host" "$plugin") > "$work/plugin-host.log" 2>&1 ||
  { cat "$work/plugin-host.log"; echo "FAIL: isolated tuning with the plugin"; exit 1; }
cat "$work/plugin-host.log"
grep -q "^winner BLOCK=[0-9]*,VEC=1 (6 candidates), 0 of 5003 elements wrong$" "$work/plugin-host.log" ||
  { echo "FAIL: the candidates were not timed in the worker with the plugin's family"; exit 1; }
echo "== the library finds its worker from its own location (dladdr)"
cc -std=c11 -Wall -Wextra -Werror -o "$work/worker_lookup" "$src/tests/consumer/worker_lookup.c" \
  $(pkg-config --cflags --libs ktune) -Wl,-rpath,"$libdir"
# No worker beside the program, none on PATH, no KTUNE_WORKER: only libktune.so's location leads
# to <prefix>/bin/ktune-worker.
(cd "$work" && env -u KTUNE_WORKER PATH=/usr/bin:/bin ./worker_lookup) > "$work/lookup.log" 2>&1 ||
  { cat "$work/lookup.log"; echo "FAIL: worker_lookup"; exit 1; }
cat "$work/lookup.log"
grep -qxF "worker=$libdir/../bin/ktune-worker" "$work/lookup.log" ||
  { echo "FAIL: the worker was not found next to the library ($libdir/../bin)"; exit 1; }
# Without it there, the library says where it looked (and never picks up something else).
mv "$prefix/bin/ktune-worker" "$work/ktune-worker.moved"
(cd "$work" && env -u KTUNE_WORKER PATH=/usr/bin:/bin ./worker_lookup) > "$work/lookup2.log" 2>&1 &&
  { cat "$work/lookup2.log"; echo "FAIL: a worker was found without one installed"; exit 1; }
mv "$work/ktune-worker.moved" "$prefix/bin/ktune-worker"
grep -qF "FAIL ktune_worker_path (2): not_found: isolation worker 'ktune-worker' not found (looked at " \
  "$work/lookup2.log" && grep -qF "$libdir/../bin/ktune-worker" "$work/lookup2.log" ||
  { cat "$work/lookup2.log"; echo "FAIL: the not-found message does not name the library's bin"; exit 1; }
echo "consumer_test: OK"
