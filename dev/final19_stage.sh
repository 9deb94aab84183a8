#!/usr/bin/env bash
# Dev machine: the staging of dev/final19_device.sh. This tree's binaries as `GPU=1 bash
# dev/lead_stage.sh DEST` stages them (a clean export of HEAD; tools, every GPU test program,
# benches, libktune in pb/api, the isolation plugin, pb/BUILD_DIR), plus the base commit's `ktune`,
# `ktune-worker` and libktune.so in pb/base (the worker finds the library at $ORIGIN/..), one
# pb.tar.xz in all (the carry limit is 64 MiB). BASE: a build directory of the base commit
# (tools/ktune, tools/ktune-worker, api/libktune.so.0.1; COMMIT: its commit, when present).
#   BUILD_DIR=build BASE=<the base's build dir> bash dev/final19_stage.sh DEST
# then carry DEST (relative to the checkout) and run `cd DEST && OUT=$OUT DEADLINE=330 bash
# dev/final19_device.sh`.
set -euo pipefail
DEST=${1:?usage: BASE=dir bash dev/final19_stage.sh DEST}
BASE=${BASE:?BASE: the build directory of the base commit (tools/ktune, tools/ktune-worker, api/libktune.so.0.1)}
B=${BUILD_DIR:-build}
for f in "$BASE/tools/ktune" "$BASE/tools/ktune-worker" "$BASE/api/libktune.so.0.1" \
         "$B/tools/ktune" "$B/tests/gemm_vs_default_gpu_test"; do
  [ -e "$f" ] || { echo "final19_stage: $f is missing (BASE: the base's build directory, BUILD_DIR: this tree's)" >&2; exit 1; }
done
# A stale build would time other code than HEAD's (ninja's dry run cannot tell: the glob check
# always re-runs CMake there): no library or tool source may be newer than the staged ktune.
newer=$(git ls-files -- '*.cc' '*.h' '*.cu' '*.cuh' | grep -v '^\(tests\|bench\|dev\|docs\)/' \
  | xargs -d '\n' -I{} find {} -newer "$B/tools/ktune" 2>/dev/null | head -3 || true)
if [ -n "$newer" ] && [ "${ALLOW_STALE:-0}" != 1 ]; then
  echo "final19_stage: $B/tools/ktune is older than $(echo $newer): build first (or ALLOW_STALE=1)" >&2
  exit 1
fi
GPU=1 PACK=0 BUILD_DIR=$B bash dev/lead_stage.sh "$DEST"
git rev-parse HEAD > "$DEST/pb/COMMIT"
mkdir -p "$DEST/pb/base/tools"
cp "$BASE/tools/ktune" "$BASE/tools/ktune-worker" "$DEST/pb/base/tools/"
cp -L "$BASE/api/libktune.so.0.1" "$DEST/pb/base/"
[ -f "$BASE/COMMIT" ] && cp "$BASE/COMMIT" "$DEST/pb/base/COMMIT"
strip "$DEST"/pb/base/tools/* "$DEST"/pb/base/*.so* 2>/dev/null || true
tar -cJf "$DEST/pb.tar.xz" -C "$DEST" pb && rm -rf "$DEST/pb"
du -sh "$DEST" "$DEST/pb.tar.xz"
