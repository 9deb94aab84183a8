#!/usr/bin/env bash
# Build on the GPU machine (no apt there): unpack the carried nlohmann-json .deb, configure, build the
# given targets (default: all) with every core into /tmp/kb. Usage: bash dev/device_build.sh [targets...]
set -euo pipefail
if [ -d .devdeps ]; then for f in .devdeps/*.deb; do dpkg -x "$f" /opt/deps; done; fi
cmake -S . -B /tmp/kb -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=/opt/deps/usr \
      -DKTUNE_WERROR=OFF > /tmp/kb-configure.log 2>&1 || { cat /tmp/kb-configure.log; exit 1; }
if [ $# -gt 0 ]; then
  args=(); for t in "$@"; do args+=(--target "$t"); done
  cmake --build /tmp/kb -j"$(nproc)" "${args[@]}"
else
  cmake --build /tmp/kb -j"$(nproc)"
fi
