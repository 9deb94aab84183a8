#!/usr/bin/env bash
# Runs every code block of README.md as a newcomer would after the README's build: the bash
# blocks in order in one shell session (so an `export` carries over), from the repository root,
# with a fresh HOME (the cache, the install prefix under ~/opt and anything else a block writes
# to ~ start empty). Program blocks (C, C++, Python, CMake) must equal their files under
# examples/readme/, which the bash blocks build and run on the simulated backend.
# scripts/readme_blocks.py says which blocks are what. Usage: bash scripts/readme_blocks.sh [build]
#   (the build directory must be the Release tree of scripts/main_build.sh, already built)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
if [ "$(realpath -m "$BUILD")" != "$(realpath -m build)" ]; then
  echo "readme_blocks.sh: skipped: the README's blocks use build/, this run built $BUILD" >&2
  exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ktune-readme.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 scripts/readme_blocks.py README.md "$work/blocks.sh"
mkdir -p "$work/home"
# ccache keeps the real cache (the blocks' builds hit what the main build compiled); everything
# else a block writes to ~ goes to the fresh HOME. No KTUNE_* setting leaks in from the caller.
export CCACHE_DIR=${CCACHE_DIR:-$(ccache -k cache_dir 2>/dev/null || echo "$HOME/.cache/ccache")}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
for v in $(env | sed -n 's/^\(KTUNE_[A-Z_0-9]*\)=.*/\1/p'); do unset "$v"; done
unset XDG_CACHE_HOME
HOME="$work/home" bash "$work/blocks.sh"
echo "readme_blocks: every README block ran"
