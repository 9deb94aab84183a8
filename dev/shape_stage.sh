#!/usr/bin/env bash
# Dev machine: a clean export of HEAD for the GPU machine, with this tree's Release binaries in
# prebuilt/ (dev/shape_device.sh runs them when they run there, and builds otherwise): the device
# call then spends no minute compiling. x86-64 only; the GPU libraries are opened at run time.
#   bash dev/shape_stage.sh [DEST]     (default .devwork/shape in this checkout; BUILD_DIR=build)
set -euo pipefail
DEST=${1:-$(git rev-parse --show-toplevel)/.devwork/shape}
B=${BUILD_DIR:-build}
rm -rf "$DEST" && mkdir -p "$DEST" && git archive HEAD | tar -x -C "$DEST"
mkdir -p "$DEST/prebuilt"
cp "$B/tools/ktune" "$B/tools/ktune-worker" "$B/bench/shape_first_call_bench" \
   "$B/bench/shape_busy_stream_bench" "$B/bench/shape_heldout_bench" "$DEST/prebuilt/"
cp -L "$B/api/libktune.so.0.1" "$DEST/prebuilt/"
strip "$DEST"/prebuilt/*
du -sh "$DEST" "$DEST/prebuilt"
