#!/usr/bin/env bash
# Focused GPU tests on the staged binaries, each program/filter in its own process, all at once.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; [ -d pb ] || tar -xJf pb.tar.xz
PB=$PWD/pb; export LD_LIBRARY_PATH="$PB/api:$PB/lib"
BD=$(cat "$PB/BUILD_DIR"); mkdir -p "$BD/tools" "$BD/tests"
for f in tools/ktune-worker tests/libktune_isolation_gpu_plugin.so; do [ -e "$BD/$f" ] || ln -s "$PB/$f" "$BD/$f"; done
export KTUNE_CACHE_DIR=/tmp/kc-lt
T=${T:-150}
# ONLY="decode fp8 ...": just those runs; DECODE_FILTER: the decode run's gtest filter.
run() { n=$1; shift; case " ${ONLY:-$n} " in *" $n "*) ;; *) return 0 ;; esac; s=$(date +%s); timeout $T "$@" > "$OUT/$n.log" 2>&1; rc=$?;
  echo "$n rc=$rc $(( $(date +%s)-s ))s $(grep -c '^\[       OK \]' "$OUT/$n.log") ok, failed: $(grep '^\[  FAILED  \].*(' "$OUT/$n.log" | tr '\n' ' ')"; }
run decode $PB/tests/gemm_gpu_test --gtest_filter="${DECODE_FILTER:-*Decode*}" &
run tma_layout $PB/tests/gemm_gpu_test --gtest_filter='*TmaEveryLayout*' &
run tma_rest $PB/tests/gemm_gpu_test --gtest_filter='*Tma*:-*TmaEveryLayout*:*Decode*' &
run gemm_rest $PB/tests/gemm_gpu_test --gtest_filter='-*Decode*:*Tma*' &
run fp8 $PB/tests/gemm_fp8_gpu_test &
run shapes $PB/tests/shapes_gpu_test &
run iso $PB/tests/isolation_gemm_gpu_test &
wait
