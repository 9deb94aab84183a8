#!/usr/bin/env bash
# Builds the unit tests with AddressSanitizer + UBSan (-DKTUNE_SANITIZE=ON) and runs the CPU test
# suite (ctest label `unit`) under them. Any ASan report, leak or UB aborts the test that hit it.
#
#   bash scripts/sanitize.sh                 # every unit test (what CI runs)
#   bash scripts/sanitize.sh all             # the same
#   bash scripts/sanitize.sh 'hostile|cli'   # only tests matching a regex
#
# CI runs every tests/unit/*_test.cc. Measured on 2 cores (Debian 12, GCC 12), ctest -j2: the
# ASan build of all of them is the bulk (~12-14 min); the tests take ~4 min together. Slowest:
# gemm_templates_test and analysis_spaces_test (their JIT sweeps run NVRTC/hiprtc/comgr in-process
# under ASan's allocator), then cli_test, rowwise_compile_test, static_prune_test; everything else
# takes seconds. KTUNE_TEST_QUICK=1 is exported so the sweeps that honour it sample their
# largest spaces instead of compiling every config (they still cover every kernel kind).
#
# ASan options beyond the usual: use_sigaltstack=0, because LLVM inside comgr/hiprtc installs its
# own (heap-allocated) signal stack on our threads and ASan then fails to munmap it at thread
# exit ("AddressSanitizer failed to deallocate", CHECK in sanitizer_posix.cpp:61). The isolation
# tests run in a second pass with handle_segv=0: their worker raises SIGSEGV on purpose and the
# test asserts it sees SIGSEGV, which ASan's handler would turn into SIGABRT.
#
# Environment: ASAN_BUILD_DIR (default build-asan), SANITIZE_JOBS (default nproc).
# Suppressions: scripts/lsan.supp names vendor-library functions whose own leaks ktune cannot free
# (one today: a failed cublasLtCreate), each printed when it matches (print_suppressions=1);
# nothing of ktune's own is suppressed. Sanitizer reports of child processes (the isolation
# worker, the CLI) fail the test that started them (tests/support/child_sanitizer_logs.h).
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}  # ccache hits across clones (CMakeLists.txt)
BUILD=${ASAN_BUILD_DIR:-build-asan}
JOBS=${SANITIZE_JOBS:-$(nproc)}
FILTER=${1:-all}
[ "$FILTER" = all ] && FILTER=""

# GCC 12 with -fsanitize=address reports false -Wmaybe-uninitialized inside libstdc++'s
# <regex>/<functional> (a known GCC issue); every other warning stays an error.
bash scripts/configure.sh "$BUILD" -S . -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKTUNE_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS="-Wno-maybe-uninitialized" -DKTUNE_BUILD_BENCH=OFF >"$BUILD.configure.log" 2>&1 ||
  { cat "$BUILD.configure.log" >&2; exit 1; }
# Only the unit-test executables (and the CLI they drive), not the GPU tests: one Ninja build, so
# the targets compile in parallel.
mapfile -t UNIT < <(ls tests/unit/*_test.cc | xargs -n1 basename | sed 's/\.cc$//')
if [ -n "$FILTER" ]; then
  mapfile -t UNIT < <(printf '%s\n' "${UNIT[@]}" | grep -E "$FILTER" || true)
  [ ${#UNIT[@]} -eq 0 ] && { echo "sanitize.sh: no unit test matches '$FILTER'" >&2; exit 2; }
fi
cmake --build "$BUILD" -j"$JOBS" --target ktune "${UNIT[@]}"

SUPP="$PWD/scripts/lsan.supp"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:use_sigaltstack=0}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$SUPP:print_suppressions=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export KTUNE_TEST_QUICK=${KTUNE_TEST_QUICK:-1}
rm -rf "$BUILD/tests/results"  # gtest XML reports of this run only (tests/check_skips.sh)
ROOT=$PWD
cd "$BUILD"
mapfile -t ISO < <(printf '%s\n' "${UNIT[@]}" | grep -E '^isolation_' || true)
mapfile -t REST < <(printf '%s\n' "${UNIT[@]}" | grep -vE '^isolation_' || true)
rc=0
if [ ${#REST[@]} -gt 0 ]; then
  REGEX=$(printf '%s|' "${REST[@]}")
  ctest -L unit -R "^(${REGEX%|})(_shard[0-9]+)?\$" --output-on-failure -j"$JOBS" --timeout 900 || rc=1
fi
if [ ${#ISO[@]} -gt 0 ]; then
  REGEX=$(printf '%s|' "${ISO[@]}")
  ASAN_OPTIONS="$ASAN_OPTIONS:handle_segv=0" \
    ctest -L unit -R "^(${REGEX%|})(_shard[0-9]+)?\$" --output-on-failure -j"$JOBS" --timeout 900 || rc=1
fi
bash "$ROOT/tests/check_skips.sh" . unit || rc=1
exit $rc
