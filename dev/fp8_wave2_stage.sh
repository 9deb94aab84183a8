#!/usr/bin/env bash
# Dev machine: stages dev/fp8_wave2_device.sh's call (issue 34) into DEST: four gemm_bench builds
# (BASE_BENCH: main's; C1, M1, BOTH: directories holding this branch's gemm_bench with the k-loop
# chain from piece 1 alone, the one flush_piece_at site alone, both) plus BOTH's
# compile_split_bench, the Google Benchmark library, the script, table and wave configs, packed in
# pb2.tar.xz.   BASE_BENCH=... C1=... M1=... BOTH=... bash dev/fp8_wave2_stage.sh DEST
set -euo pipefail
DEST=$1
rm -rf "$DEST/pb2" "$DEST/pb2.tar.xz" && mkdir -p "$DEST/pb2/lib" "$DEST/pb2/base"
cp "${BASE_BENCH:?main\'s gemm_bench}" "$DEST/pb2/base/gemm_bench"
for v in c1 m1 both; do
  d=$(eval echo "\${${v^^}:?the $v build directory}"); mkdir -p "$DEST/pb2/$v"
  cp "$d/gemm_bench" "$DEST/pb2/$v/"
done
cp "$BOTH/compile_split_bench" "$DEST/pb2/both/"
ldd "$BASE_BENCH" | awk '/libbenchmark/ {print $3}' | xargs -r -I{} cp -L {} "$DEST/pb2/lib/"
strip "$DEST"/pb2/*/* 2>/dev/null || true
cp dev/fp8_wave2_device.sh dev/fp8_wave2_table.py dev/fp8_wave4096.cfg "$DEST/"
tar -cJf "$DEST/pb2.tar.xz" -C "$DEST" pb2 && rm -rf "$DEST/pb2"
du -sh "$DEST/pb2.tar.xz"
