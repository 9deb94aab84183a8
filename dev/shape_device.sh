#!/usr/bin/env bash
# GPU machine, one call (issue 35, any shape): the measurements of background tuning and predicted
# configs, in this order (each step time-boxed; logs under $OUT, a short table last):
#   1. first-call host cost in background mode (bench/shape_first_call_bench, isolation worker);
#   2. busy-stream loss while a key tunes in the background (bench/shape_busy_stream_bench) at the
#      duties in DUTIES (default 0.25), isolation worker on the same GPU; worst 20 ms batch;
#   3. held-out prediction quality over every N x K of the LLM suite (bench/shape_heldout_bench:
#      20 tuned M per N x K, guided; held-out M drawn with SEED, re-timed interleaved);
#   4. (PY_TEST=1) python/tests/gpu/test_graphs.py (torch.cuda.graph capture of tuned ktune.ops calls).
# Binaries: prebuilt/ (x86-64 Release build of this tree, made with dev/shape_stage.sh on the dev
# machine) when they run here, else built with dev/device_build.sh. The Python extension is
# compiled here against prebuilt/libktune.so (this Python's headers), in the background.
#   bash dev/shape_device.sh  (carry .devdeps)  HELDOUT_S=110 TRAIN_S=55 HELDOUT=26 SEED=0 ROUNDS=3
#     VENDOR=3 (cuBLASLt ranks after #0 in the held-out keys' reduced lists; TRAIN_S=0: no limit)
#     RACE=1 (the rows' "predicted" config is background mode's race pick; 0: the bare prediction)
#     REUSE_DB=bench/data/heldout_seed4/heldout_db.json.gz (that run's training, not tuned again)
#     PADDED=1 (the bench's padding probe: the vendor's pick for rounder M in each key's list)
#     VERIFY_PASS=1 (the re-timing's verification in a pass of its own; 0: in round 0)
#     AGAIN_S=45 (the same keys again, the other verification method, on this call's training)
#   SHAPE_STAGE=first_call       step 1 only;  SHAPE_STAGE=heldout  step 3 only
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
export KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/kcache}
KB=$PWD/prebuilt
if ! "$KB/ktune" --version > "$OUT/prebuilt.log" 2>&1; then
  echo "prebuilt binaries do not run here ($(tail -1 "$OUT/prebuilt.log")): building"
  bash dev/device_build.sh ktune ktune-worker libktune shape_first_call_bench shape_busy_stream_bench \
    shape_heldout_bench > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
  mkdir -p /tmp/kbin && KB=/tmp/kbin
  cp /tmp/kb/tools/ktune /tmp/kb/tools/ktune-worker /tmp/kb/bench/shape_*_bench "$KB/"
  cp -L /tmp/kb/api/libktune.so.0.1 "$KB/"
fi
echo "binaries ready: $(el) s (${KB#$PWD/})"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,driver_version --format=csv,noheader

# 1. First-call host cost (background mode, isolation worker), then in-process tuning.
[ "${SHAPE_STAGE:-all}" = heldout ] && FIRST_S=0 && BUSY_S=0
[ "${FIRST_S:-35}" -gt 0 ] && timeout ${FIRST_S:-35} "$KB/shape_first_call_bench" 32 > "$OUT/first_call.log" 2>&1
echo "first_call rc=$? ($(el) s): $(grep -sE 'RESULT|SKIP' "$OUT/first_call.log")"
grep -siE "error|fault" "$OUT/first_call.log" | head -3
if [ "${INPROC:-0}" = 1 ]; then
KTUNE_DB=/tmp/inproc_db.json KTUNE_ISOLATE=0 KTUNE_VERBOSE=1 timeout 30 \
  "$KB/shape_first_call_bench" 4 > "$OUT/first_call_inproc.log" 2>&1
echo "first_call in-process rc=$? ($(el) s): $(grep -E 'RESULT' "$OUT/first_call_inproc.log")"
fi

[ "${SHAPE_STAGE:-all}" = first_call ] && { echo "total: $(el) s"; exit 0; }

# Python extension, compiled while the benches below run (5 files, nice), with PY_TEST=1.
PY=python3
PYB=
[ "${PY_TEST:-0}" = 1 ] && (
  set -e
  PYINC=$($PY -c "import sysconfig; print(sysconfig.get_paths()['include'])")
  PBINC=$($PY -c "import pybind11; print(pybind11.get_include())")
  SUF=$($PY -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  mkdir -p /tmp/kpy/ktune /tmp/pyo
  cp python/ktune/*.py /tmp/kpy/ktune/ && cp "$KB/libktune.so.0.1" /tmp/kpy/ktune/
  for f in module kernel ops launcher raw_launch; do
    nice g++ -O1 -std=c++17 -fPIC -fvisibility=hidden -Iinclude -I"$PYINC" -I"$PBINC" \
      -c python/src/$f.cc -o /tmp/pyo/$f.o &
  done
  wait
  g++ -shared /tmp/pyo/*.o -L/tmp/kpy/ktune -l:libktune.so.0.1 -Wl,-rpath,'$ORIGIN' \
    -o "/tmp/kpy/ktune/_ktune$SUF"
  mkdir -p /tmp/kpy/ktune/bin && cp "$KB/ktune" "$KB/ktune-worker" /tmp/kpy/ktune/bin/
) > "$OUT/py_build.log" 2>&1 &
[ "${PY_TEST:-0}" = 1 ] && PYB=$!

# 2. Busy stream.
[ "${BUSY_S:-55}" -gt 0 ] && timeout ${BUSY_S:-55} "$KB/shape_busy_stream_bench" --duty "${DUTIES:-0.25}" --max-s "${BUSY_MAX_S:-20}" \
  > "$OUT/busy.log" 2>&1
echo "busy_stream rc=$? ($(el) s):"; grep -sE "RESULT|SKIP|rror" "$OUT/busy.log" | cut -c1-400

# 3. Held-out quality (its own database; the store is shared with the runs above). REUSE_DB=FILE.gz:
# that earlier run's training database is the training (its keys are not tuned again).
# heldout NAME DEADLINE_S REUSE VERIFY_PASS (the bench's --verify-pass: 1 verification in a pass of
# its own, 0 round 0 verifying each candidate before timing it).
heldout() {
  KTUNE_DB=/tmp/heldout_db.json KTUNE_WARMUP_MS=${WARMUP_MS:-2} KTUNE_REP_MS=${REP_MS:-8} \
    timeout $(( $2 + 15 )) "$KB/shape_heldout_bench" --heldout "${HELDOUT:-26}" \
    --train-s "${TRAIN_S:-55}" --deadline-s "$2" --seed "${SEED:-0}" \
    --rounds "${ROUNDS:-3}" --vendor "${VENDOR:-3}" --race "${RACE:-1}" --reuse-db "$3" \
    --verify-pass "$4" --padded "${PADDED:-0}" --out "$OUT/$1.jsonl" > "$OUT/$1.log" 2>&1
  echo "$1 rc=$? ($(el) s):"; grep -vE "^ktune:" "$OUT/$1.log" | tail -12 | cut -c1-300
}
[ -n "${REUSE_DB:-}" ] && gzip -dc "$REUSE_DB" > /tmp/heldout_db.json
heldout heldout "${HELDOUT_S:-110}" "$([ -n "${REUSE_DB:-}" ] && echo 1 || echo 0)" "${VERIFY_PASS:-1}"
# The training database (every candidate's time per tuned key, the vendor ranks included): what a
# prediction rule can be checked against offline.
gzip -c /tmp/heldout_db.json > "$OUT/heldout_db.json.gz" 2>/dev/null
# AGAIN_S=S: the same keys again in a second process on the training just written, with the other
# verification method (heldout_again.jsonl): the two methods compared on the same keys.
[ "${AGAIN_S:-0}" -gt 0 ] && heldout heldout_again "$AGAIN_S" 1 $(( 1 - ${VERIFY_PASS:-1} ))

# 4. torch.cuda.graph capture of tuned ktune.ops calls.
if [ -n "$PYB" ]; then
wait $PYB; echo "python extension build rc=$? ($(el) s)"; tail -3 "$OUT/py_build.log" | cut -c1-300
(cd python/tests/gpu && PYTHONPATH=/tmp/kpy timeout 45 $PY -m pytest -q -p no:cacheprovider -rs \
  test_graphs.py > "$OUT/test_graphs.log" 2>&1)
echo "test_graphs rc=$? ($(el) s): $(tail -1 "$OUT/test_graphs.log")"
grep -E "^E |Error" "$OUT/test_graphs.log" | head -8 | cut -c1-300
fi
echo "== table =="
grep -hs RESULT "$OUT/first_call.log" "$OUT/busy.log" | cut -c1-260
grep -vE "^ktune:|^TRAIN|^ERROR" "$OUT/heldout.log" | tail -8 | cut -c1-200
[ -s "$OUT/heldout_again.log" ] && grep -vE "^ktune:|^TRAIN|^ERROR" "$OUT/heldout_again.log" | tail -8 | cut -c1-200
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
echo "total: $(el) s"
