#!/usr/bin/env bash
# Device, lead: the capture fix (engine_shapes_capture.cc) on the GPU — the whole shapes GPU
# program once, then its capture test N times under lazy loading (the default) and twice EAGER.
# Staged binaries: PACK=1 bash dev/lead_stage.sh, carry .devwork/lead.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
cd .devwork/lead && { [ -d pb ] || tar -xJf pb.tar.xz; }
PB=$PWD/pb; export LD_LIBRARY_PATH="$PB/api:$PB/lib"
KTUNE_CACHE_DIR=/tmp/kc-all timeout 120 $PB/tests/shapes_gpu_test > "$OUT/shapes_all.log" 2>&1
echo "whole program rc=$?"; grep -E '^\[  (PASSED|FAILED) ' "$OUT/shapes_all.log"
t() { KTUNE_CACHE_DIR=/tmp/kc-$1 timeout 40 $PB/tests/shapes_gpu_test \
    --gtest_filter='*CapturedTunedGemm*' > "$OUT/cap_$1.log" 2>&1; echo "$1 rc=$?"; }
for i in $(seq 1 ${N:-6}); do t lazy$i; done
for i in 1 2; do CUDA_MODULE_LOADING=EAGER t eager$i; done
grep -h 'Failure\|launch_error\|ran ' "$OUT"/cap_*.log | sort | uniq -c | head
