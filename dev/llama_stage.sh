#!/usr/bin/env bash
# Developers' machine: stages this commit for dev/llama_device.sh in the checkout the device tool
# sends (default: this checkout's top level): the tree as .devwork/llama (git archive HEAD) and the C++ core built
# here as .devwork/llama_bin (libktune.so.0.1, ktune, ktune-worker, ktune_llama; the GPU machine then
# compiles only the Python extension modules). Then one device call:
#   run(carry=[".devwork/llama", ".devwork/llama_bin", ".devdeps"], command="cd .devwork/llama &&
#       ln -s ../../.devdeps .devdeps 2>/dev/null; LLAMA_BIN=../llama_bin bash dev/llama_device.sh")
#   bash dev/llama_stage.sh [CHECKOUT] [BUILD=build]
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-$(git rev-parse --show-toplevel)}
BUILD=${2:-build}
export CCACHE_BASEDIR=$PWD
cmake --build "$BUILD" -j2 --target libktune ktune ktune-worker ktune_llama
rm -rf "$DEST/.devwork/llama" "$DEST/.devwork/llama_bin"
mkdir -p "$DEST/.devwork/llama" "$DEST/.devwork/llama_bin"
git archive HEAD | tar -x -C "$DEST/.devwork/llama"
cp -L "$BUILD/api/libktune.so.0.1" "$BUILD/tools/ktune" "$BUILD/tools/ktune-worker" \
  "$BUILD/examples/ktune_llama" "$DEST/.devwork/llama_bin/"
# The PDL GPU test (dev/llama_pdl_probe.sh), when built: a static program, no libbenchmark.
[ -x "$BUILD/tests/pdl_gpu_test" ] && cp "$BUILD/tests/pdl_gpu_test" "$DEST/.devwork/llama_bin/" &&
  strip "$DEST/.devwork/llama_bin/pdl_gpu_test"
git status --porcelain --untracked-files=no | grep -q . && echo "note: uncommitted changes are not staged"
echo "staged $(git rev-parse --short HEAD) in $DEST/.devwork/llama{,_bin}"
