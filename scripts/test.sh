#!/usr/bin/env bash
# The test command: installs dependencies, builds everything, runs every test. Tests labelled `gpu`
# skip themselves (shown as "Not Run / Skipped") when no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${KTUNE_BUILD_DIR:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$BUILD" -j"$(nproc)"
cd "$BUILD"
ctest --output-on-failure -j"$(nproc)" --timeout 900
