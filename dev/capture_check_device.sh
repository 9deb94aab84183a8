#!/usr/bin/env bash
# GPU machine, one short call: the CUDA-graph capture checks (issue 35) on prebuilt binaries in pb/
# (shapes_gpu_test, ktune, ktune-worker, libktune.so from the dev machine's Release build), then
# python/tests/gpu/test_graphs.py against an extension compiled here against pb/libktune.so.
#   cd <export> && bash dev/capture_check_device.sh      (logs under $OUT)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export KTUNE_CACHE_DIR=/tmp/kcache KTUNE_DB=/tmp/cap_db.json
PY=python3
( set -e
  PYINC=$($PY -c "import sysconfig; print(sysconfig.get_paths()['include'])")
  PBINC=$($PY -c "import pybind11; print(pybind11.get_include())")
  SUF=$($PY -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  mkdir -p /tmp/kpy/ktune/bin /tmp/pyo
  cp python/ktune/*.py /tmp/kpy/ktune/ && cp pb/libktune.so.0.1 /tmp/kpy/ktune/
  for f in module kernel ops launcher raw_launch; do
    g++ -O1 -std=c++17 -fPIC -fvisibility=hidden -Iinclude -I"$PYINC" -I"$PBINC" \
      -c python/src/$f.cc -o /tmp/pyo/$f.o &
  done
  wait
  g++ -shared /tmp/pyo/*.o -L/tmp/kpy/ktune -l:libktune.so.0.1 -Wl,-rpath,'$ORIGIN' \
    -o "/tmp/kpy/ktune/_ktune$SUF"
  cp pb/ktune pb/ktune-worker /tmp/kpy/ktune/bin/ ) > "$OUT/py_build.log" 2>&1 &
PYB=$!
timeout ${SHAPES_S:-150} pb/shapes_gpu_test --gtest_color=no > "$OUT/shapes_gpu_test.log" 2>&1
echo "shapes_gpu_test rc=$? ($(el) s): $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/shapes_gpu_test.log" | tr '\n' ' ')"
grep -E '^\[  FAILED|Failure|error' "$OUT/shapes_gpu_test.log" | head -8 | cut -c1-300
wait $PYB; echo "python extension build rc=$? ($(el) s)"; tail -3 "$OUT/py_build.log" | cut -c1-300
(cd python/tests/gpu && PYTHONPATH=/tmp/kpy timeout ${PY_S:-90} $PY -m pytest -q -p no:cacheprovider -rs \
  test_graphs.py > "$OUT/test_graphs.log" 2>&1)
echo "test_graphs rc=$? ($(el) s): $(tail -1 "$OUT/test_graphs.log")"
grep -E "^E |Error" "$OUT/test_graphs.log" | head -8 | cut -c1-300
echo "total: $(el) s"
