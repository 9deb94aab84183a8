#!/usr/bin/env bash
# GPU machine (carry .devwork/warm, staged by dev/device_compare_stage.sh): the device
# comparison's GPU tests (device_compare_gpu_test; isolation_gemm_gpu_test, whose worker compares
# on the device) and then dev/warm_time_device.sh's warm A/B (its variables pass through:
# WHOS, N, NS, SHARE, PREP, ALT, DEADLINE, ...). Logs and tables as that script's.
set -uo pipefail
[ -d pb ] || tar -xJf pb.tar.xz
# isolation_gemm_gpu_test starts the worker at the path it was built with (KTUNE_WORKER_PATH); the
# worker finds libktune.so at $ORIGIN/../api there.
if [ -f worker_path.txt ]; then
  WP=$(cat worker_path.txt) && B=$(dirname "$(dirname "$WP")")
  mkdir -p "$(dirname "$WP")" "$B/api" && cp pb/tools/ktune-worker "$WP" && cp pb/libktune.so.0.1 "$B/api/"
fi
export GPUTEST=${GPUTEST-"device_compare_gpu_test isolation_gemm_gpu_test"}
exec bash dev/warm_time_device.sh
