#!/usr/bin/env bash
# The test command: installs dependencies, builds everything, runs every test (tests labelled `gpu`
# skip themselves, shown as skipped, when no GPU is present), every README code block
# (scripts/readme_blocks.sh), then the CPU suite's core under AddressSanitizer + UBSan, the
# engine's threaded tests under ThreadSanitizer, and a bounded libFuzzer run of the parsers
# (config strings, tuning database, CLI arguments, store metadata). Prints each stage's time.
#   KTUNE_TEST_QUICK=1   skip the sanitizer and fuzz stages (a faster local loop)
#   FUZZ_SECONDS=N       fuzzing time per target (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}  # ccache hits across clones (CMakeLists.txt)
BUILD=${KTUNE_BUILD_DIR:-build}
# The interpreter the extension is built for is the one scripts/python_test.sh installs it into
# (a version manager's shims on PATH would otherwise give CMake another one).
export KTUNE_PYTHON=${KTUNE_PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 )}

TIMES=()
stage() {  # stage NAME command...: runs it, prints and records its wall time
  local name=$1; shift
  echo "== $name"
  local t0=$SECONDS rc=0
  "$@" || rc=$?
  local dt=$((SECONDS - t0))
  TIMES+=("$(printf '%-34s %4d min %02d s%s' "$name" $((dt / 60)) $((dt % 60)) \
            "$([ $rc -eq 0 ] || echo "  FAILED (exit $rc)")")")
  echo "== $name: $((dt / 60)) min $((dt % 60)) s"
  if [ $rc -ne 0 ]; then summary; exit $rc; fi
}
summary() {
  echo; echo "stage times (wall clock):"
  printf '  %s\n' "${TIMES[@]}"
  echo "  total: $((SECONDS / 60)) min $((SECONDS % 60)) s"
}
unit_tests() {
  rm -rf "$BUILD/tests/results"  # gtest XML reports of this run only (tests/check_skips.sh)
  (cd "$BUILD" && ctest --output-on-failure -j"$(nproc)" --timeout 900)
  bash tests/check_skips.sh "$BUILD" unit  # prints the skips; fails on any with KTUNE_REQUIRE_TOOLS=1
}

stage "setup (apt packages)" bash scripts/setup.sh
# Release, as scripts/run.sh builds it (the same configure line, scripts/main_build.sh): CI builds
# the README's main job once and tests that build.
stage "configure + build (Release)" bash scripts/main_build.sh "$BUILD"
stage "tests (ctest)" unit_tests
stage "Python package (pip + pytest, sim)" bash scripts/python_test.sh "$BUILD"
stage "README code blocks" bash scripts/readme_blocks.sh "$BUILD"
if [ "${KTUNE_TEST_QUICK:-0}" != "1" ]; then
  stage "AddressSanitizer + UBSan" bash scripts/sanitize.sh
  stage "ThreadSanitizer" bash scripts/tsan.sh
  stage "libFuzzer (${FUZZ_SECONDS:-20} s per target)" env FUZZ_SECONDS="${FUZZ_SECONDS:-20}" bash scripts/fuzz.sh
fi
summary
