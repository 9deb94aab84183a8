#!/usr/bin/env bash
# GPU machine: the Llama-style decoder of python/examples/llama.py, end to end, in one call: the
# package built and installed (dev/python_device.sh without its tests and bench, over /tmp/kb),
# the harness's self-check, then the timed run (torch, TunableOp in its own process,
# torch.compile max-autotune, ktune.ops; decode batch 1/8/32/128 at context 1024 and a 2048-token
# prefill), then the same decoder in C++ (examples/llama.cc: its --check against the CPU
# reference, then tokens/s per shape, sharing the Python run's tuning database, so only its own
# two families tune). Logs, JSON and TunableOp's results under $OUT; the tables last.
#   bash dev/llama_device.sh                      (carry .devdeps; about 9 minutes cold)
#   LLAMA_ARGS="--shapes d1,d32 --compile-shapes d1"   a shorter run
#   LLAMA_BUDGET_S=555                            the whole script's wall budget: the harness
#                                                 skips compile shapes (and timing rounds past
#                                                 3) that would overrun it
#   LLAMA_CXX_S=60                                of it, what is kept for the C++ decoder
#   LLAMA_CXX_ARGS="--layers 8"                   the C++ decoder's arguments
# The installed package is also left in $OUT/llama_kpy.tgz: unpacked into .devwork/llama_kpy and
# carried, a later call skips the build.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PY=${PYTHON:-python3}
T0=$(date +%s)
export KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/kcache}
if [ -f .devwork/llama_kpy/ktune/__init__.py ]; then
  export PYTHONPATH="$PWD/.devwork/llama_kpy${PYTHONPATH:+:$PYTHONPATH}"
  echo "python package: carried .devwork/llama_kpy"
else
  PY_TESTS=0 PY_BENCH_ARGS=--only=none bash dev/python_device.sh > "$OUT/llama_install.log" 2>&1
  grep -E "^python package|^ktune " "$OUT/llama_install.log"
  if [ -f /tmp/kpy/ktune/__init__.py ]; then
    export PYTHONPATH="/tmp/kpy${PYTHONPATH:+:$PYTHONPATH}"
    tar -C /tmp/kpy -czf "$OUT/llama_kpy.tgz" ktune 2>/dev/null
  else
    export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
  fi
fi
$PY -c "import ktune.ops" || { tail -40 "$OUT/llama_install.log"; exit 1; }
echo "build + install $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
$PY python/examples/llama.py --self-check 2>&1 | tee "$OUT/llama_selfcheck.log" | tail -2
# The C++ decoder: one more target in the package's build tree (seconds) before the harness, or,
# with the package carried, a build of its own in the background (the harness's tuning is on the
# GPU and its compiles are cached; its eager rows are host-bound and may read slower then).
KB=${KTUNE_BUILD_DIR:-/tmp/kb}
if [ -f "$KB/CMakeCache.txt" ]; then
  cmake --build "$KB" --target ktune_llama -j"$(nproc)" > "$OUT/llama_cxx_build.log" 2>&1; CXX_BUILD=
else
  bash dev/device_build.sh ktune_llama > "$OUT/llama_cxx_build.log" 2>&1 & CXX_BUILD=$!
fi
LEFT=$(( ${LLAMA_BUDGET_S:-555} - ${LLAMA_CXX_S:-60} - ($(date +%s) - T0) ))
echo "harness: $LEFT s of the budget left"
PYTHONUNBUFFERED=1 timeout "$LEFT" $PY python/examples/llama.py --json "$OUT/llama.json" \
  --deadline-s $(( LEFT - 20 )) ${LLAMA_ARGS:-} > "$OUT/llama.log" 2>&1
echo "harness rc=$? ($(( $(date +%s) - T0 )) s in all)"
grep -E "FAILED|no graph|skipped|unavailable|Error|rc " "$OUT/llama.log" | head -20 | cut -c1-220
sed -n '/^== /,$p' "$OUT/llama.log" | cut -c1-230
[ -n "$CXX_BUILD" ] && wait $CXX_BUILD
if [ -x "$KB/examples/ktune_llama" ]; then
  # The check with tuning off: the default configs against the CPU reference, in seconds (tuning
  # the tiny model's keys would take a minute).
  KTUNE_TUNING=0 timeout 60 "$KB/examples/ktune_llama" --check 2>&1 |
    tee "$OUT/llama_cxx_check.log" | tail -4
  LEFT=$(( ${LLAMA_BUDGET_S:-555} - ($(date +%s) - T0) ))
  echo "== C++ decoder (examples/llama.cc, public API only): $LEFT s left"
  timeout $(( LEFT > 30 ? LEFT : 30 )) "$KB/examples/ktune_llama" --budget-s $(( LEFT > 45 ? LEFT - 40 : 5 )) \
    ${LLAMA_CXX_ARGS:-} 2>&1 | tee "$OUT/llama_cxx.log"
  echo "C++ decoder rc=${PIPESTATUS[0]} ($(( $(date +%s) - T0 )) s in all)"
else
  tail -20 "$OUT/llama_cxx_build.log"
fi
