#!/usr/bin/env bash
# Configures a CMake build tree with Ninja, the generator every script and the README use:
#   bash scripts/configure.sh <build-dir> -S <source-dir> [cmake options...]
# Ninja builds all the targets of one `cmake --build` in parallel (the Makefile generator's top
# level is .NOTPARALLEL: `--target a --target b` built them one after the other). A tree made
# earlier with another generator cannot be reconfigured with Ninja (CMake refuses: "Does not match
# the generator used previously"), so its cache is dropped first, with a note; the objects are
# rebuilt (from ccache when it has them).
set -euo pipefail
build=$1; shift
cache="$build/CMakeCache.txt"
if [ -f "$cache" ]; then
  gen=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$cache")
  if [ -n "$gen" ] && [ "$gen" != "Ninja" ]; then
    echo "note: $build was configured with '$gen'; reconfiguring it with Ninja (its cache is dropped)" >&2
    rm -rf "$cache" "$build/CMakeFiles"
  fi
fi
exec cmake -B "$build" -G Ninja "$@"
