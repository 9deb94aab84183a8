#!/usr/bin/env bash
# Dev machine: stages dev/cold_probe_device.sh's call (issue 34, the cold 4096^3 path's compile wave)
# into DEST: a base build's (BASE, main's) and this tree's (BUILD_DIR, default build; NEW=0 leaves it
# out) ktune, ktune-worker, libktune.so and the base's compile_split_bench, packed in pb.tar.xz, and
# the scripts.
#   BASE=<the base commit's build dir> bash dev/cold_probe_stage.sh DEST
set -euo pipefail
DEST=$1 B=${BUILD_DIR:-build} BASE=${BASE:?the base commit build directory}
rm -rf "$DEST" && mkdir -p "$DEST/pb"
vs="base"; [ "${NEW:-1}" = 1 ] && vs="base new"
for v in $vs; do
  d=$B; [ $v = base ] && d=$BASE
  mkdir -p "$DEST/pb/$v/tools" "$DEST/pb/$v/bench"
  cp "$d/tools/ktune" "$d/tools/ktune-worker" "$DEST/pb/$v/tools/"
  cp -L "$d/api/libktune.so.0.1" "$DEST/pb/$v/"  # ktune-worker's run path: $ORIGIN/..
done
cp "$BASE/bench/compile_split_bench" "$DEST/pb/base/bench/"
strip "$DEST"/pb/*/tools/* "$DEST"/pb/*/bench/* "$DEST"/pb/*/*.so* 2>/dev/null || true
cp dev/cold_tune.sh dev/cold_probe_device.sh dev/cold_probe_table.py dev/init_probe.py dev/fp8_wave4096.cfg "$DEST/"
tar -cJf "$DEST/pb.tar.xz" -C "$DEST" pb && rm -rf "$DEST/pb"
du -sh "$DEST" "$DEST/pb.tar.xz"
