#!/usr/bin/env bash
# GPU machine: the Llama-style decoder of python/examples/llama.py, end to end, in one call:
#   1. the package built and installed in the background (with LLAMA_BIN: only the extension
#      modules, dev/llama_quick_install.sh; else dev/python_device.sh without its tests and bench,
#      over /tmp/kb, then the C++ decoder's target in the same tree); meanwhile the harness's
#      self-check, and the harness itself starts (torch's and TunableOp's entries; it waits for
#      the package before ktune's);
#   2. the harness in --procs processes (default 3): the first with cold caches of its own (ktune's
#      database and code objects, inductor, Triton, TunableOp: the tuning / compile times), the
#      device's copy rate, every variant (torch, TunableOp, torch.compile max-autotune with one
#      layer compiled and reused by every layer, ktune.ops) on decode batch 1/8/32/128 at context
#      1024 and a 2048-token prefill, timing rounds and the per-op / per-kernel breakdowns; then
#      the repeats, every variant again with the caches it warmed, while the budget lasts;
#   3. optional: each ktune.ops call's host cost beside torch's op (LLAMA_HOST_COST=1) and the
#      same decoder in C++ (LLAMA_CXX_S=60: examples/llama.cc --check against the CPU reference,
#      then tokens/s per shape, sharing the Python run's tuning database).
# The harness writes its log and JSON straight into $OUT (they come back even when the call is
# cut); $OUT also gets one tgz of the rest (the device tool returns at most 8 files). The tables
# come last.
#   bash dev/llama_device.sh                      (carry .devdeps; dev/llama_stage.sh stages a
#                                                 commit with its C++ core for LLAMA_BIN)
#   LLAMA_BUDGET_S=430      the script's wall budget (s; with the defaults an H200 run took 310 s
#                           of 425, all 3 processes and breakdowns included): the harness skips
#                           compile shapes, timing rounds past 3, breakdowns and repeat processes
#                           that would overrun it
#   LLAMA_CXX_S=0           of it, what is kept for the C++ decoder (0: not run)
#   LLAMA_HOST_COST=0       1: the host-cost table too (when 35 s are left)
#   LLAMA_PEERS_S=0         > 0: after the harness, the tuning time of one GEMM's first call to
#                           its result, ktune (cold, then warm store) beside Triton's autotuner
#                           and Inductor's max-autotune, each peer in its own process
#                           (bench/tuning_peers.py, LLAMA_PEERS_SHAPES, default 4096x4096x4096,
#                           16x4096x4096), in that many seconds kept from the budget
#   LLAMA_ARGS="--shapes d1,d32 --compile-shapes d1"   a shorter run (default: the four variants
#                           of the table, ktune_fused (gate/up + SiLU·Mul fused up to 16 rows, on
#                           the shapes of --fused-shapes, none by default) and ktune_nopdl (ktune with KTUNE_PDL off, d1 and d8), --rounds 5
#                           --breakdown d1,d8 --repeat-need-s 45; ktune_unfused is not in the table)
#   LLAMA_CXX_FUSED=1       after the C++ decoder's shapes, d8 again with gate/up + SiLU·Mul fused
#                           up to 16 rows (one more process, when 20 s of the budget are left);
#                           LLAMA_CXX_FUSED=2: then d8 unfused once more (as ktune runs it)
#   LLAMA_PDL_TEST=1        pdl_gpu_test from LLAMA_BIN first, beside the package build (0: not run)
#   LLAMA_KEYS=1            KTUNE_VERBOSE=1 for the harness: the engine's lines of each tuning run
#                           in its log, read back into the per-key tuning table (llama_keys.py)
#   LLAMA_CXX_ARGS="--layers 8"                        the C++ decoder's arguments
#   LLAMA_BIN=DIR           prebuilt libktune.so.0.1, ktune, ktune-worker, ktune_llama of this
#                           commit (dev/llama_quick_install.sh): the build takes seconds
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
W=/tmp/llw; rm -rf "$W"; mkdir -p "$W"
PY=${PYTHON:-python3}
T0=$(date +%s)
BUDGET=${LLAMA_BUDGET_S:-430}
CXX_S=${LLAMA_CXX_S:-0}
ARGS=${LLAMA_ARGS:---variants torch,tunableop,compile,ktune,ktune_fused,ktune_nopdl --rounds 5 --breakdown d1,d8 --repeat-need-s 45}
[ "${LLAMA_KEYS:-1}" != 0 ] && export KTUNE_VERBOSE=1
KB=${KTUNE_BUILD_DIR:-/tmp/kb}
elapsed() { echo $(( $(date +%s) - T0 )); }
# Cold caches of our own (a warm machine may hold a teammate's tuning database, build tree or
# inductor cache): the tuning and compile times below are first-call figures.
if [ -z "${KTUNE_CACHE_DIR:-}" ]; then export KTUNE_CACHE_DIR=/tmp/llama_kcache; rm -rf "$KTUNE_CACHE_DIR"; fi
export TORCHINDUCTOR_CACHE_DIR=/tmp/llama_inductor TRITON_CACHE_DIR=/tmp/llama_triton
rm -rf "$TORCHINDUCTOR_CACHE_DIR" "$TRITON_CACHE_DIR"
unset PYTORCH_TUNABLEOP_ENABLED  # it would override the harness's per-variant switch
if [ -f "$KB/CMakeCache.txt" ] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$PWD" "$KB/CMakeCache.txt"; then
  echo "$KB was configured for another tree: removed"; rm -rf "$KB"
fi
finish() {  # the rest of the logs back in one file
  cp "$W"/llama_cxx.log "$OUT"/ 2>/dev/null
  tar -C "$W" -czf "$OUT/llama_logs.tgz" --exclude=llama_kpy . 2>/dev/null
}
trap finish EXIT

# 1. Build in the background. With LLAMA_BIN (C++ binaries of this commit built on the
# developers' machine, carried) only the extension modules are compiled here
# (dev/llama_quick_install.sh); else, or if that fails, the whole build. Both install into
# /tmp/kpy and then touch /tmp/kpy.done: the harness starts at once, makes torch's and TunableOp's
# entries meanwhile and waits for that file before ktune's (LLAMA_WAIT_FOR), so the build overlaps
# no tuning or compile time; the self-check runs beside both.
LLAMA_LL=$KB/examples/ktune_llama
if [ -n "${LLAMA_BIN:-}" ] && [ -x "$LLAMA_BIN/ktune_llama" ]; then
  LLAMA_BIN=$(cd "$LLAMA_BIN" && pwd); LLAMA_LL=$LLAMA_BIN/ktune_llama
  export LD_LIBRARY_PATH="/tmp/kpy/ktune${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
rm -rf /tmp/kpy /tmp/kpy.done
( if [ -n "${LLAMA_BIN:-}" ] && bash dev/llama_quick_install.sh "$LLAMA_BIN" /tmp/kpy > "$W/install.log" 2>&1; then
    echo "python package: prebuilt C++ + extension modules compiled here, $(elapsed) s" >> "$W/install.log"
  else
    [ -n "${LLAMA_BIN:-}" ] && { echo "quick install failed: the whole build"; tail -5 "$W/install.log"; }
    PY_TESTS=0 PY_BENCH=0 OUT="$W" bash dev/python_device.sh > "$W/install.log" 2>&1
    echo "install rc=$? at $(elapsed) s" >> "$W/install.log"
    cmake --build "$KB" --target ktune_llama -j"$(nproc)" > "$W/cxx_build.log" 2>&1
    echo "C++ build rc=$? at $(elapsed) s" >> "$W/install.log"
    echo "$KB/examples/ktune_llama" > "$W/cxx_path"
  fi
  touch /tmp/kpy.done ) &
BUILD=$!
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
# 0. The PDL GPU test (prebuilt by dev/llama_stage.sh, about 10 s) while the package builds: done
# before the harness reaches TunableOp's tuning, the first timing it would disturb.
PDLT=
if [ "${LLAMA_PDL_TEST:-1}" != 0 ] && [ -n "${LLAMA_BIN:-}" ] && [ -x "$LLAMA_BIN/pdl_gpu_test" ]; then
  KTUNE_CACHE_DIR=/tmp/pdl_kc timeout 30 "$LLAMA_BIN/pdl_gpu_test" > "$OUT/pdl_gpu_test.log" 2>&1 &
  PDLT=$!
fi
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" $PY python/examples/llama.py --self-check \
  > "$W/selfcheck.log" 2>&1 &
CHECK=$!
export PYTHONPATH="/tmp/kpy${PYTHONPATH:+:$PYTHONPATH}" LLAMA_WAIT_FOR=/tmp/kpy.done

# 2. The harness: its log and JSON straight into $OUT, the repeat processes' JSON and TunableOp's
# results file beside them.
PEERS_S=${LLAMA_PEERS_S:-0}
LEFT=$(( BUDGET - CXX_S - PEERS_S - $(elapsed) ))
echo "harness: $LEFT s of the budget left"
PYTHONUNBUFFERED=1 timeout "$LEFT" $PY python/examples/llama.py --json "$OUT/llama.json" \
  --engine-log "$OUT/llama.log" --deadline-s $(( LEFT - 15 )) $ARGS > "$OUT/llama.log" 2>&1
RC=$?
echo "harness rc=$RC at $(elapsed) s"
wait $BUILD $CHECK
grep -E "^python package|^ktune |rc=|failed" "$W/install.log"
tail -2 "$W/selfcheck.log"
[ -f "$W/cxx_path" ] && LLAMA_LL=$(cat "$W/cxx_path")
# (not the engine's own lines: a candidate that fails to compile or verify is part of tuning)
grep -v -E "^  (├|└)─|^ktune: |^  (winner|vs default|compile [0-9])" "$OUT/llama.log" |
  grep -E "FAILED|failed|no graph|skipped|unavailable|Error|rc |refused" | head -24 | cut -c1-220
if [ "$RC" != 0 ] && [ -f "$OUT/llama.json" ]; then  # cut short: the tables from what was written
  (cd python/examples && $PY llama_report.py "$OUT/llama.json" "$OUT"/llama_proc*.json) \
    > "$W/report.log" 2>&1
  echo "== report from the JSON files (the harness did not finish)"; cat "$W/report.log" >> "$OUT/llama.log"
fi

# 3. Host cost per ktune.ops call beside torch's op, when it fits.
if [ "${LLAMA_HOST_COST:-0}" != 0 ] && [ $(( BUDGET - CXX_S - $(elapsed) )) -ge 35 ]; then
  (cd python/bench && timeout 35 $PY ops_host_cost.py 3 > "$W/host_cost.log" 2>&1)
  echo "host cost rc=$? at $(elapsed) s"
else
  echo "host cost: skipped (budget)"
fi

# 3b. The first call's tuning time, ktune in-process beside the peers (the package is installed).
if [ "$PEERS_S" -gt 0 ]; then
  PB=$(( (PEERS_S - 10) / 4 ))
  timeout "$PEERS_S" $PY bench/tuning_peers.py --peers=ktune,ktune_warm,triton,inductor --budget=$PB \
    --shapes=${LLAMA_PEERS_SHAPES:-4096x4096x4096,16x4096x4096} > "$OUT/tuning_peers.log" 2>&1
  echo "tuning peers rc=$? at $(elapsed) s"
fi

# 4. The C++ decoder.
if [ "$CXX_S" = 0 ]; then
  echo "C++ decoder: not run (LLAMA_CXX_S=0)"
elif [ -x "$LLAMA_LL" ]; then
  # The check with tuning off: the default configs against the CPU reference, in seconds.
  KTUNE_TUNING=0 timeout 30 "$LLAMA_LL" --check > "$W/cxx_check.log" 2>&1
  echo "C++ check rc=$?: $(grep -c ' ok$' "$W/cxx_check.log") ok, $(grep -c FAILED "$W/cxx_check.log") failed"
  LEFT=$(( BUDGET - $(elapsed) ))
  # --budget-s counts from the program's start (the weights take ~8 s) and is checked before each
  # shape, whose first step and timing take at most ~3 s.
  timeout $(( LEFT > 30 ? LEFT : 30 )) "$LLAMA_LL" --budget-s $(( LEFT > 20 ? LEFT - 8 : 12 )) \
    ${LLAMA_CXX_ARGS:-} > "$W/llama_cxx.log" 2>&1
  echo "C++ decoder rc=$? at $(elapsed) s"
  # Fused against unfused gate/up + SiLU·Mul at 8 rows in C++ (every launch ktune's) beside the
  # first run's d8 (unfused); with 2, unfused again last, so that both orders are seen.
  if [ "${LLAMA_CXX_FUSED:-1}" != 0 ]; then
    for f in 16 $([ "${LLAMA_CXX_FUSED:-1}" = 2 ] && echo 4); do
      [ $(( BUDGET - $(elapsed) )) -ge 20 ] || { echo "C++ d8 fused-max-rows $f: skipped (budget)"; continue; }
      timeout 25 "$LLAMA_LL" --shapes d8 --fused-max-rows $f --rep-ms 300 ${LLAMA_CXX_ARGS:-} \
        >> "$W/llama_cxx.log" 2>&1
      echo "C++ decoder d8 fused-max-rows $f rc=$? at $(elapsed) s"
    done
  fi
else
  tail -20 "$W/cxx_build.log"
fi

if [ -n "$PDLT" ]; then
  wait "$PDLT"; echo "pdl_gpu_test rc=$?"
  grep -E "^\[pdl\]|OK \]|FAILED|Failure" "$OUT/pdl_gpu_test.log" | head -6
fi
# The tables last; the markdown table and the tuning totals once more at the very end.
sed -n '/^== /,$p' "$OUT/llama.log" | grep -v "^     " | cut -c1-230
grep -E "^==|^  [a-z_]+ +[0-9]" "$W/host_cost.log" 2>/dev/null | head -8
[ -f "$OUT/tuning_peers.log" ] && { echo "== first call to result (bench/tuning_peers.py)"
  grep -E "^summary|no shape finished|child process" "$OUT/tuning_peers.log"; }
echo "== C++ decoder (examples/llama.cc, public API only)"
cat "$W/cxx_check.log" "$W/llama_cxx.log" 2>/dev/null | tail -20
sed -n '/^== table (markdown/,/^$/p' "$OUT/llama.log"
grep -E "^  whole model:|^  all: [0-9]+ keys" "$OUT/llama.log"
echo "total $(elapsed) s"
