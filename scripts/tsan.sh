#!/usr/bin/env bash
# Builds the engine's concurrency-heavy CPU tests with ThreadSanitizer and runs them: the tuner
# (parallel compiles, concurrent first calls), background tuning (shapes_test: the tuning thread, its
# pauses and shutdown; shapes_ops_test: a GEMM op destroyed while its keys tune), the compile/bench
# pipeline (compile threads hand
# candidates to the benchmarking thread; compile_pool_test: the lazy pool's order changed by the
# race while its threads start jobs) and isolation (worker supervisor, prepare requests; the
# compile workers handed out to several threads), the suite's look-ahead thread beside the tuning
# (tune_lookahead_test), the early first wave's engine compiling into the tuner's store beside it
# (tune_early_wave_test), a warm race's early wave beside the worker's library set-up
# (isolation_early_test), the device fill's side compile (device_fill_test) and the output check's
# compare split over threads (verifier_compare_test).
# Any race report fails the stage (halt_on_error=1). The isolation tests' worker raises SIGSEGV /
# SIGABRT on purpose, so TSan must not handle those signals (handle_segv=0, handle_abort=0).
#   Environment: TSAN_BUILD_DIR (default build-tsan), SANITIZE_JOBS (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}  # ccache hits across clones (CMakeLists.txt)
BUILD=${TSAN_BUILD_DIR:-build-tsan}
JOBS=${SANITIZE_JOBS:-$(nproc)}
TESTS=(autotune_tuner_test autotune_pipeline_test isolation_worker_test isolation_pipeline_test shapes_test
       shapes_ops_test shapes_vendor_rank_test compile_pool_test isolation_compile_workers_test
       context_later_test tune_lookahead_test device_fill_test verifier_compare_test tune_early_wave_test
       isolation_early_test)
bash scripts/configure.sh "$BUILD" -S . -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKTUNE_BUILD_BENCH=OFF -DKTUNE_BUILD_EXAMPLES=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -g" -DCMAKE_C_FLAGS="-fsanitize=thread -g" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" \
  >"$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log" >&2; exit 1; }
cmake --build "$BUILD" -j"$JOBS" --target ktune-worker "${TESTS[@]}"
export TSAN_OPTIONS="halt_on_error=1:handle_segv=0:handle_abort=0:second_deadlock_stack=1:print_suppressions=1:suppressions=$PWD/scripts/tsan.supp"
fail=0
for t in "${TESTS[@]}"; do
  echo "-- $t"
  if ! "$BUILD/tests/$t" --gtest_brief=1; then
    echo "tsan.sh: $t failed under ThreadSanitizer" >&2
    fail=1
  fi
done
exit $fail
