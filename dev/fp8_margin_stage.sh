#!/usr/bin/env bash
# Dev machine: stages dev/fp8_margin_device.sh's call (issue 34, the tma kind's compile cut, second
# round) into DEST: main's build (MAIN: its build directory; ktune, ktune-worker, libktune.so
# for the cold walls), this tree's build (the same plus gemm_bench and gemm_fp8_gpu_test) and the
# base of the kernel A/B (HEAD_BENCH: a gemm_bench of the branch before this round's changes), the
# Google Benchmark library and the scripts, packed in pb.tar.xz.
#   MAIN=<main's build dir> HEAD_BENCH=<gemm_bench> bash dev/fp8_margin_stage.sh DEST  (BUILD_DIR=build)
set -euo pipefail
DEST=$1 B=${BUILD_DIR:-build} MAIN=${MAIN:?the main build directory} HB=${HEAD_BENCH:?gemm_bench of the base}
rm -rf "$DEST" && mkdir -p "$DEST/pb/lib" "$DEST/pb/head/bench"
for v in main new; do
  d=$B; [ $v = main ] && d=$MAIN
  mkdir -p "$DEST/pb/$v/tools" "$DEST/pb/$v/bench"
  cp "$d/tools/ktune" "$d/tools/ktune-worker" "$DEST/pb/$v/tools/"
  cp -L "$d/api/libktune.so.0.1" "$DEST/pb/$v/"  # ktune-worker's run path: $ORIGIN/..
done
cp "$B/bench/gemm_bench" "$B/tests/gemm_fp8_gpu_test" "$DEST/pb/new/bench/"
cp "$HB" "$DEST/pb/head/bench/gemm_bench"
ldd "$B/bench/gemm_bench" | awk '/libbenchmark/ {print $3}' | xargs -r -I{} cp -L {} "$DEST/pb/lib/"
strip "$DEST"/pb/*/tools/* "$DEST"/pb/*/bench/* "$DEST"/pb/*/*.so* 2>/dev/null || true
cp dev/cold_tune.sh dev/fp8_margin_device.sh dev/fp8_beta_norm.py dev/fp8_beta_table.py dev/early_wave_table.py \
  dev/fp8_wave4096.cfg "$DEST/"
tar -cJf "$DEST/pb.tar.xz" -C "$DEST" pb && rm -rf "$DEST/pb"
du -sh "$DEST" "$DEST/pb.tar.xz"
