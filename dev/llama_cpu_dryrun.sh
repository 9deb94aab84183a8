#!/usr/bin/env bash
# Developers' machine (no GPU, no torch): the whole flow of python/examples/llama.py (variants,
# checks, captures, timing rounds, breakdowns, repeat processes, the report) on CPU stand-ins for
# torch and ktune (dev/llama_cpu: numpy; events are host timers, graphs replay nothing, TunableOp
# and torch.compile are switches and the identity), tiny dims. It catches what a typo or a wrong
# argument would break before a device call is spent on it; none of its figures is a measurement.
#   bash dev/llama_cpu_dryrun.sh [extra llama.py arguments]      (needs numpy; PYTHON=python)
set -euo pipefail
cd "$(dirname "$0")/.."
W=$(mktemp -d)
PY=${PYTHON:-python3}
PYTHONPATH=dev/llama_cpu:dev/llama_cpu/ktune_standin $PY python/examples/llama.py --self-check
KTUNE_VERBOSE=1 PYTHONPATH=dev/llama_cpu:dev/llama_cpu/ktune_standin timeout 600 $PY \
  python/examples/llama.py --tiny --shapes d1,d8,p128 --compile-shapes d1,p128 \
  --json "$W/llama.json" --engine-log "$W/llama.log" --deadline-s 500 --rounds 3 --breakdown d1 \
  --procs 3 --repeat-need-s 20 "$@" > "$W/llama.log" 2>&1 ||
  { tail -30 "$W/llama.log"; echo "dry run FAILED (log: $W/llama.log)"; exit 1; }
grep -E "FAILED|Traceback|Error" "$W/llama.log" && { echo "dry run FAILED (log: $W/llama.log)"; exit 1; }
(cd python/examples && $PY llama_report.py "$W/llama.json" > "$W/report.log")
grep -q "^| 1 |" "$W/llama.log" && grep -q "over 3 processes" "$W/llama.log" ||
  { echo "dry run FAILED: no table over 3 processes (log: $W/llama.log)"; exit 1; }
grep -q "^| ktune d1 qkv | gemm |" "$W/llama.log" ||
  { echo "dry run FAILED: no per-key tuning table (log: $W/llama.log)"; exit 1; }
echo "dry run ok: $(grep -c 'first call' "$W/llama.log") first calls, 3 processes, table written ($W)"
