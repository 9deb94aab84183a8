#!/usr/bin/env bash
# Dev machine: dev/regret_stage.sh's staging (BASE, EXTRA pass through) plus the device
# comparison's GPU test programs and the worker path isolation_gemm_gpu_test was built with, for
# dev/device_compare_device.sh. Run from the checkout's root after building ktune, ktune-worker,
# device_compare_gpu_test and isolation_gemm_gpu_test (Release):
#   [BASE=dir] [EXTRA="name=dir ..."] bash dev/device_compare_stage.sh DEST
set -euo pipefail
DEST=$1
bash dev/regret_stage.sh "$DEST"
for t in device_compare_gpu_test isolation_gemm_gpu_test; do
  cp build/tests/$t "$DEST/" && strip "$DEST/$t"
done
echo "$(pwd)/build/tools/ktune-worker" > "$DEST/worker_path.txt"
du -sh "$DEST"
