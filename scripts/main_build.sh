#!/usr/bin/env bash
# Configures and builds the Release tree that scripts/test.sh tests and scripts/run.sh runs (one
# configure line for both, so either one after the other builds nothing new):
#   bash scripts/main_build.sh [build-dir] [--target T ...]
# The Python extension is configured for /usr/bin/python3 (Debian's, the one
# scripts/python_test.sh installs into) unless KTUNE_PYTHON names another interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}  # ccache hits across clones (CMakeLists.txt)
BUILD=${1:-build}; shift || true
PY=${KTUNE_PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 )}
bash scripts/configure.sh "$BUILD" -S . -DCMAKE_BUILD_TYPE=Release -DKTUNE_BUILD_TESTS=ON \
  -DKTUNE_BUILD_BENCH=ON -DKTUNE_BUILD_PYTHON=ON -DPYTHON_EXECUTABLE="$PY" -DPython_EXECUTABLE="$PY"
cmake --build "$BUILD" -j"$(nproc)" "$@"
