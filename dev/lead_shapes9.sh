#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; [ -d pb ] || tar -xJf pb.tar.xz
PB=$PWD/pb; export LD_LIBRARY_PATH="$PB/api:$PB/lib"
t() { KTUNE_CACHE_DIR=/tmp/kc-sh$1 timeout 40 $PB/tests/shapes_gpu_test \
    --gtest_filter='*CapturedTunedGemm*' > "$OUT/shapes$1.log" 2>&1; echo "$1 rc=$?"; }
for i in 1 2 3 4; do t lazy$i; done
for i in 1 2 3 4; do CUDA_MODULE_LOADING=EAGER t eager$i; done
grep -h 'launch_error\|Failure' "$OUT"/shapes*.log | sort | uniq -c
