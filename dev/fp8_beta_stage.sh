#!/usr/bin/env bash
# Dev machine: stages dev/fp8_beta_device.sh's call (issue 34, the tma kind's compile cut) into
# DEST: this tree's and a base build's (BASE: the base commit's build directory) ktune, ktune-worker,
# libktune.so, gemm_bench and compile_split_bench, this tree's gemm_gpu_test and gemm_fp8_gpu_test,
# the Google Benchmark library, the scripts and the 4096^3 wave's configs, packed in pb.tar.xz.
#   BASE=<base build dir> bash dev/fp8_beta_stage.sh DEST     (BUILD_DIR=build; TESTS, SCRIPTS: the
#   test programs and scripts staged instead of this call's, as dev/fp8_wave_stage.sh does)
set -euo pipefail
DEST=$1 B=${BUILD_DIR:-build} BASE=${BASE:?the base commit build directory}
rm -rf "$DEST" && mkdir -p "$DEST/pb/lib"
for v in new base; do
  d=$B; [ $v = base ] && d=$BASE
  mkdir -p "$DEST/pb/$v/tools" "$DEST/pb/$v/bench"
  cp "$d/tools/ktune" "$d/tools/ktune-worker" "$DEST/pb/$v/tools/"
  # ktune-worker finds libktune.so at $ORIGIN/.. (its run path).
  cp -L "$d/api/libktune.so.0.1" "$DEST/pb/$v/"
  cp "$d/bench/gemm_bench" "$d/bench/compile_split_bench" "$DEST/pb/$v/bench/"
done
for t in ${TESTS:-gemm_gpu_test gemm_fp8_gpu_test}; do cp "$B/tests/$t" "$DEST/pb/new/bench/"; done
ldd "$B/bench/gemm_bench" | awk '/libbenchmark/ {print $3}' | xargs -r -I{} cp -L {} "$DEST/pb/lib/"
strip "$DEST"/pb/*/tools/* "$DEST"/pb/*/bench/* "$DEST"/pb/*/*.so* 2>/dev/null || true
cp ${SCRIPTS:-dev/fp8_beta_device.sh dev/fp8_beta_table.py dev/fp8_issue34_table.py} \
  dev/early_wave_table.py dev/fp8_wave4096.cfg dev/cold_tune.sh "$DEST/"
tar -cJf "$DEST/pb.tar.xz" -C "$DEST" pb && rm -rf "$DEST/pb"
du -sh "$DEST" "$DEST/pb.tar.xz"
