#!/usr/bin/env bash
# Dev machine: a clean export of HEAD with this tree's Release `ktune`, `ktune-worker` and
# libktune.so packed in pb.tar.xz, for dev/regret_device.sh (the device call then builds nothing).
# x86-64 only; the GPU libraries are opened at run time.
#   bash dev/regret_stage.sh [DEST]   (default .devwork/search in this checkout; BUILD_DIR=build;
#   NOFLOOR=path: also a build without the launch-floor rule, as pb/tools/ktune-nofloor;
#   BASE=dir: another build's binaries in pb/base; EXTRA="name=dir ...": more in pb/<name>)
set -euo pipefail
DEST=${1:-$(git rev-parse --show-toplevel)/.devwork/search}
B=${BUILD_DIR:-build}
rm -rf "$DEST" && mkdir -p "$DEST" && git archive HEAD | tar -x -C "$DEST"
mkdir -p "$DEST/pb/tools"
cp "$B/tools/ktune" "$B/tools/ktune-worker" "$DEST/pb/tools/"
# ktune-worker links libktune.so and finds it at $ORIGIN/.. (its run path): without it the worker
# cannot start there and `ktune tune` falls back to benchmarking in its own process.
cp -L "$B/api/libktune.so.0.1" "$DEST/pb/"
# NOFLOOR=path: a ktune built without a rule under test, timed beside this one by the device script.
[ -n "${NOFLOOR:-}" ] && cp "$NOFLOOR" "$DEST/pb/tools/ktune-nofloor"
# BASE=build dir of another commit (e.g. main's): its ktune, ktune-worker and libktune.so in
# pb/base, timed against this tree's in the same call (dev/regret_device.sh, step 1c).
if [ -n "${BASE:-}" ]; then
  mkdir -p "$DEST/pb/base/tools"
  cp "$BASE/tools/ktune" "$BASE/tools/ktune-worker" "$DEST/pb/base/tools/"
  cp -L "$BASE/api/libktune.so.0.1" "$DEST/pb/base/"
fi
# EXTRA="name=dir ...": more builds' binaries in pb/<name> (pb/<name>/tools/ktune, ...), timed
# beside the others by dev/warm_time_device.sh (WHOS).
for x in ${EXTRA:-}; do
  n=${x%%=*} d=${x#*=}
  mkdir -p "$DEST/pb/$n/tools"
  cp "$d/tools/ktune" "$d/tools/ktune-worker" "$DEST/pb/$n/tools/"
  cp -L "$d/api/libktune.so.0.1" "$DEST/pb/$n/"
done
# BENCH="a b": these bench programs too (pb/tools), with the Google Benchmark library they link
# (pb/: the GPU machine lacks it; run them with LD_LIBRARY_PATH=pb).
for b in ${BENCH:-}; do
  cp "$B/bench/$b" "$DEST/pb/tools/"
  ldd "$B/bench/$b" | awk '/libbenchmark/ {print $3}' | xargs -r -I{} cp -L {} "$DEST/pb/"
done
strip "$DEST"/pb/tools/* "$DEST"/pb/*.so* "$DEST"/pb/*/tools/* "$DEST"/pb/*/*.so* 2>/dev/null || true
tar -cJf "$DEST/pb.tar.xz" -C "$DEST" pb && rm -rf "$DEST/pb"
du -sh "$DEST" "$DEST/pb.tar.xz"
