#!/usr/bin/env bash
# GPU machine: the Python package from C++ binaries built on the developers' machine (same commit,
# Release; carried in BIN: libktune.so.0.1, ktune, ktune-worker, ktune_llama), compiling there only
# what needs the device's Python and torch: the extension modules _ktune (pybind11) and
# _ktune_torch. Seconds instead of dev/python_device.sh's full build; the same package layout as
# python/setup.py (module, libktune under its soname, bin/ktune, bin/ktune-worker). The carried
# programs' run path is the developers' build tree: run them with LD_LIBRARY_PATH=PKG/ktune.
#   bash dev/llama_quick_install.sh BIN [PKG=/tmp/kpy]      exit status 0 when `import ktune` works
set -euo pipefail
BIN=$1
PKG=${2:-/tmp/kpy}
PY=${PYTHON:-python3}
CXX=${CXX:-g++}
O=$(mktemp -d)
for f in libktune.so.0.1 ktune ktune-worker; do [ -f "$BIN/$f" ] || { echo "no $BIN/$f"; exit 1; }; done
rm -rf "$PKG"; mkdir -p "$PKG/ktune/bin"
cp python/ktune/*.py "$PKG/ktune/"
cp "$BIN/libktune.so.0.1" "$PKG/ktune/"
cp "$BIN/ktune" "$BIN/ktune-worker" "$PKG/ktune/bin/"
SUFFIX=$($PY -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
PYINC=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
FLAGS=(-O3 -DNDEBUG -fPIC -fvisibility=hidden -std=c++20 -Iinclude -isystem "$PYINC")
# pybind11's headers from pip where it came from there; else the system's (already searched).
PB=$($PY -c 'import pybind11; print(pybind11.get_include())' 2>/dev/null || true)
[ -n "$PB" ] && FLAGS+=(-isystem "$PB")
pids=()
for f in module kernel ops launcher raw_launch; do
  $CXX "${FLAGS[@]}" -c "python/src/$f.cc" -o "$O/$f.o" & pids+=($!)
done
# ktune._ktune_torch, as python/CMakeLists.txt builds it where a CUDA build of torch is importable.
TORCH=$($PY -c 'import os, torch; d = os.path.dirname(torch.__file__)
assert torch.version.cuda
print(torch.__version__, int(torch._C._GLIBCXX_USE_CXX11_ABI), os.path.join(d, "include"), os.path.join(d, "lib"))' 2>/dev/null || true)
if [ -n "$TORCH" ]; then
  read -r TV ABI TI TL <<< "$TORCH"
  CUDA_INC=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")/include
  $CXX -O3 -DNDEBUG -fPIC -shared -std=c++17 -fvisibility=hidden -D_GLIBCXX_USE_CXX11_ABI="$ABI" \
    -DKTUNE_TORCH_VERSION="\"$TV\"" -Ipython/src -isystem "$TI" -isystem "$TI/torch/csrc/api/include" \
    -isystem "$PYINC" -isystem "$CUDA_INC" python/src/torch_fast.cc -o "$PKG/ktune/_ktune_torch$SUFFIX" \
    -L"$TL" -ltorch_python -ltorch_cpu -lc10 -lc10_cuda -Wl,-rpath,"$TL" &
  pids+=($!)
fi
for p in "${pids[@]}"; do wait "$p"; done
$CXX -shared -o "$PKG/ktune/_ktune$SUFFIX" "$O"/*.o -L"$PKG/ktune" -l:libktune.so.0.1 \
  -Wl,-rpath,'$ORIGIN' -ldl
rm -rf "$O"
PYTHONPATH="$PKG" $PY -c "import ktune, ktune.ops; print('ktune', ktune.__version__, ktune.__file__)"
