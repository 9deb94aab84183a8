#!/usr/bin/env bash
# Installs what ktune needs to build and test on Debian 12 (run as root, or with sudo available).
# The CUDA toolkit (NVRTC, headers) is expected at /usr/local/cuda; it is not a Debian package.
set -euo pipefail
PKGS=(cmake ninja-build make g++ git pkg-config libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
      libamdhip64-dev libamd-comgr-dev rocm-device-libs clang-19 llvm-19 lld-19 mlir-19-tools
      libclang-rt-19-dev chromium ccache redis-server
      pybind11-dev python3-dev python3-venv python3-pip python3-setuptools python3-numpy
      python3-pytest)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if [ ! -e /usr/local/cuda/include/nvrtc.h ]; then
  echo "note: no CUDA toolkit at /usr/local/cuda: the NVRTC compiler tests will be skipped" >&2
fi
