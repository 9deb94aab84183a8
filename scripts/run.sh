#!/usr/bin/env bash
# The main job: set up, build, and tune the built-in LLM-layer GEMM suite. With no GPU, ktune
# compiles and analyses the suite's configs for sm_90a and says that timing needs a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${KTUNE_BUILD_DIR:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DKTUNE_BUILD_TESTS=OFF -DKTUNE_BUILD_BENCH=OFF
cmake --build "$BUILD" -j"$(nproc)" --target ktune
"$BUILD/tools/ktune" info
"$BUILD/tools/ktune" tune gemm --suite llm "$@"
