#!/usr/bin/env bash
# The Python package's CI stage: installs python/ into a venv (Debian's pip is "externally
# managed", PEP 668; --system-site-packages keeps Debian's numpy and pytest) reusing the CMake
# build tree given as $1 (only the extension is compiled there), then runs python/tests on the
# simulated backend. Needs: pybind11-dev python3-dev python3-venv python3-setuptools python3-numpy
# python3-pytest (scripts/setup.sh). Usage: bash scripts/python_test.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
PY=${KTUNE_PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 )}
VENV="$BUILD/pyvenv"
[ -x "$VENV/bin/python" ] || "$PY" -m venv --system-site-packages "$VENV"
KTUNE_BUILD_DIR="$BUILD" "$VENV/bin/pip" install -q --no-build-isolation --no-index --no-deps \
  ./python
# From the tests' folder, so `import ktune` is the installed package, not python/ktune.
cd python/tests
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider -rs .
