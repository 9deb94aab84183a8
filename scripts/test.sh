#!/usr/bin/env bash
# The test command: installs dependencies, builds everything, runs every test (tests labelled `gpu`
# skip themselves, shown as skipped, when no GPU is present), then the CPU suite's core under
# AddressSanitizer + UBSan, the engine's threaded tests under ThreadSanitizer, and a bounded
# libFuzzer run of the parsers (config strings, tuning database, CLI arguments, store metadata).
#   KTUNE_TEST_QUICK=1   skip the sanitizer and fuzz stages (a faster local loop)
#   FUZZ_SECONDS=N       fuzzing time per target (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}  # ccache hits across clones (CMakeLists.txt)
bash scripts/setup.sh
BUILD=${KTUNE_BUILD_DIR:-build}
# Release, as scripts/run.sh builds it: CI builds the README's main job once and tests that build.
# The interpreter the extension is built for is the one scripts/python_test.sh installs it into
# (a version manager's shims on PATH would otherwise give CMake another one).
export KTUNE_PYTHON=${KTUNE_PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 )}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DKTUNE_BUILD_TESTS=ON -DKTUNE_BUILD_BENCH=ON \
      -DKTUNE_BUILD_PYTHON=ON -DPYTHON_EXECUTABLE="$KTUNE_PYTHON" -DPython_EXECUTABLE="$KTUNE_PYTHON"
cmake --build "$BUILD" -j"$(nproc)"
rm -rf "$BUILD/tests/results"  # gtest XML reports of this run only (tests/check_skips.sh)
(cd "$BUILD" && ctest --output-on-failure -j"$(nproc)" --timeout 900)
bash tests/check_skips.sh "$BUILD" unit  # prints the skips; fails on any with KTUNE_REQUIRE_TOOLS=1
echo "== Python package (pip install over the Release build, pytest on the simulated backend)"
bash scripts/python_test.sh "$BUILD"
if [ "${KTUNE_TEST_QUICK:-0}" != "1" ]; then
  echo "== AddressSanitizer + UBSan"
  bash scripts/sanitize.sh
  echo "== ThreadSanitizer (tuner, compile/bench pipeline, isolation)"
  bash scripts/tsan.sh
  echo "== libFuzzer (${FUZZ_SECONDS:-20} s per target)"
  FUZZ_SECONDS=${FUZZ_SECONDS:-20} bash scripts/fuzz.sh
fi
