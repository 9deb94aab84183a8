#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-19 with ASan + UBSan) and runs each one for a bounded
# time on a copy of its seed corpus, then prints how many executions each target ran.
#
#   FUZZ_SECONDS=60 bash scripts/fuzz.sh            # all targets, 60 s each (default 30)
#   bash scripts/fuzz.sh config_parse_fuzz          # one target
#
# Environment: FUZZ_SECONDS (per target), FUZZ_SEED (libFuzzer seed, default 1: CI runs are repeatable;
# use 0 for a random one), FUZZ_BUILD_DIR (default build-fuzz), FUZZ_JOBS (build
# parallelism, default nproc), CLANGXX/CLANGC (default clang++-19/clang-19), TMPDIR (scratch
# files of the targets; default /dev/shm when writable).
# Exit status: non-zero if the build fails or any target finds a crash, leak, UB or a violated
# property; the reproducer is kept under $FUZZ_BUILD_DIR/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}  # ccache hits across clones (CMakeLists.txt)
SECONDS_PER_TARGET=${FUZZ_SECONDS:-30}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${FUZZ_JOBS:-$(nproc)}
CXX_BIN=${CLANGXX:-clang++-19}
CC_BIN=${CLANGC:-clang-19}
ALL=(config_parse_fuzz database_fuzz cli_args_fuzz store_meta_fuzz gemm_args_fuzz json_readers_fuzz)
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL[@]}")

if ! command -v "$CXX_BIN" >/dev/null; then
  echo "fuzz.sh: $CXX_BIN not found (apt-get install clang-19 libclang-rt-19-dev)" >&2
  exit 3
fi
bash scripts/configure.sh "$BUILD" -S fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER="$CC_BIN" \
  -DCMAKE_CXX_COMPILER="$CXX_BIN" >"$BUILD.configure.log" 2>&1 ||
  { cat "$BUILD.configure.log" >&2; exit 1; }
cmake --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]}"

# Vendor libraries are never loaded by these targets; any leak is ours.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The targets write their scratch files thousands of times a second (with fsync inside the
# database): a tmpfs makes that cheap and spares the disk.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
status=0
declare -A EXECS RESULT
for t in "${TARGETS[@]}"; do
  corpus="$BUILD/corpus/$t"
  artifacts="$BUILD/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  log="$BUILD/$t.log"
  echo "== $t: ${SECONDS_PER_TARGET}s"
  set +e
  "$BUILD/$t" "$corpus" fuzz/corpus/"$t" -max_total_time="$SECONDS_PER_TARGET" -max_len=4096 -seed="${FUZZ_SEED:-1}" \
    -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  EXECS[$t]=${execs:-0}
  if [ $rc -eq 0 ]; then
    RESULT[$t]=ok
  else
    RESULT[$t]="FAILED (rc $rc, see $log and $artifacts)"
    status=1
    tail -40 "$log" >&2
  fi
done
echo
echo "fuzz executions run (${SECONDS_PER_TARGET}s per target):"
for t in "${TARGETS[@]}"; do printf '  %-20s %12s  %s\n' "$t" "${EXECS[$t]}" "${RESULT[$t]}"; done
exit $status
