#!/usr/bin/env bash
# The main job: set up, build, and tune the built-in LLM-layer GEMM suite. With no GPU, ktune
# compiles and analyses the suite's configs for sm_90a and says that timing needs a GPU (the
# compiles go through the code-object store: a second run compiles nothing).
# It configures build/ exactly as scripts/test.sh does (Release, Ninja: scripts/main_build.sh), so
# after the tests it builds nothing; on its own it builds only the ktune CLI and its worker.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${KTUNE_BUILD_DIR:-build}
bash scripts/main_build.sh "$BUILD" --target ktune ktune-worker
"$BUILD/tools/ktune" info
"$BUILD/tools/ktune" tune gemm --suite llm "$@"
