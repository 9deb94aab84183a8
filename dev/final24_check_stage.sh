#!/usr/bin/env bash
# Dev machine: stages dev/final24_check_device.sh into DEST: dec/ (dev/decode/stage.sh: this tree's
# gemm_bench, ktune, ktune-worker, libktune), cold/ (dev/cold_probe_stage.sh: BASE's and this tree's
# ktune) and w/ (dev/regret_stage.sh with BASE: the warm pairs), then the device script itself.
#   BASE=<the session start's build dir> BUILD_DIR=build bash dev/final24_check_stage.sh DEST
set -euo pipefail
DEST=${1:?usage: BASE=dir bash dev/final24_check_stage.sh DEST}
: "${BASE:?BASE: the build directory of the session start}"
rm -rf "$DEST" && mkdir -p "$DEST"
FILES="bench/gemm_bench tools/ktune tools/ktune-worker" bash dev/decode/stage.sh "$DEST/dec"
bash dev/cold_probe_stage.sh "$DEST/cold"
bash dev/regret_stage.sh "$DEST/w"
mkdir -p "$DEST/dev" && cp dev/final24_check_device.sh "$DEST/dev/"
du -sh "$DEST"
