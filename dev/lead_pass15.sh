#!/usr/bin/env bash
# GPU machine, one call from the checkout's root (carry .devwork/lead, .devwork/llama,
# .devwork/llama_bin, .devdeps): the GPU tests the last pass did not finish (dev/lead_tests9.sh,
# ONLY=$ONLY) beside the Python package's GPU tests (the prebuilt core, dev/llama_quick_install.sh),
# then, alone on the machine, the first call's tuning time of ktune in-process beside Triton's
# autotuner (bench/tuning_peers.py, PEERS=...). Logs in $OUT/pass.tgz; a short table last.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; R=$PWD; L=/tmp/lp; rm -rf "$L"; mkdir -p "$L"
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
( cd .devwork/lead && OUT=$L/tests T=${T:-200} ONLY=${ONLY:-"tma_rest gemm_rest"} bash dev/lead_tests9.sh ) > "$L/tests.txt" 2>&1 &
TESTS=$!
cd .devwork/llama
bash dev/llama_quick_install.sh ../llama_bin /tmp/kpy > "$L/install.log" 2>&1; echo "install rc=$? at $(el) s"
export PYTHONPATH=/tmp/kpy LD_LIBRARY_PATH="/tmp/kpy/ktune${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
(cd python/tests/gpu && KTUNE_CACHE_DIR=/tmp/kc-py timeout ${PY_T:-150} python3 -m pytest -q -p no:cacheprovider -rs . > "$L/py_gpu.log" 2>&1)
echo "python gpu tests rc=$? at $(el) s: $(tail -1 "$L/py_gpu.log")"
wait $TESTS; cat "$L/tests.txt"; echo "tests done at $(el) s"
if [ -n "${PEERS:-ktune,ktune_warm,triton,inductor}" ]; then
  timeout ${PEERS_T:-200} python3 bench/tuning_peers.py --peers=${PEERS:-ktune,ktune_warm,triton,inductor} \
    --budget=${PEERS_B:-45} --shapes=${PEERS_SHAPES:-4096x4096x4096,16x4096x4096} > "$L/tuning_peers.log" 2>&1
  echo "peers rc=$? at $(el) s"
fi
tar czf "$OUT/pass.tgz" -C "$L" .
grep -E "FAILED|Error" "$L/py_gpu.log" | head -8
echo "== first call to result"; grep -E "^summary|^  |no shape finished|child process" "$L/tuning_peers.log" | tail -20
echo "total $(el) s"
