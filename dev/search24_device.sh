#!/usr/bin/env bash
# GPU machine, one `nvidia-h200-x2` call (issue 34, the finalists' and warm-up rules against the
# base build): staged by `BASE=<the base's build dir> bash dev/regret_stage.sh DEST` (pb/tools this
# tree, pb/base/tools the base), carry DEST, `cd DEST && OUT=$OUT bash dev/search24_device.sh`.
#   A. alone on the host: dev/warm_time_device.sh twice — base then this (own stores: one cold
#      4096^3 NT and one cold LLM suite each, PREP=1, N warm 4096^3 alternating, NS warm suites),
#      then the cold runs again in the reverse order (N=0, NS=0): the cold and warm walls per build.
#   B. the regret sets, both builds, the two GPUs at once: B1 GPU 0 this tree's GEMM set (62 keys)
#      and GPU 1 base's row-wise set (24); B2 GPU 1 base's GEMM set on a copy of B1's store, GPU 0
#      this tree's row-wise set on a copy of B1's row store (no key compiles twice; the
#      databases are fresh: only the store is copied). `ktune regret --set gpu --rounds 4
#      --exhaustive-budget 0.2` as dev/final20_device.sh runs it.
# Variables: N (5), NS (2), A_S (seconds for A, 80), B1_S (130), B2_S (95), REGRET_SET (gpu;
# a dry run on the simulated device: KTUNE_BACKEND=sim REGRET_SET=ci). Every log in
# $OUT/s24.tgz (the device returns 8 files at most); the summary last, and in $OUT/table.txt.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; R=$OUT; OUT=/tmp/s24; rm -rf "$OUT"; mkdir -p "$OUT"
T0=$(date +%s)
[ -d pb ] || tar -xJf pb.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
nproc | tee -a "$OUT/gpu.txt"

# A. Tuning walls, alone on the host.
OUT=$OUT/a WHOS="base this" SHARE=0 PREP=1 ALT=1 N=${N:-5} NS=${NS:-2} GAP=0.6 \
  DEADLINE=$(( ${A_S:-80} - 20 )) bash dev/warm_time_device.sh > "$OUT/a.txt" 2>&1
OUT=$OUT/c WHOS="this base" SHARE=0 PREP=0 N=0 NS=0 GAP=0.6 DEADLINE=20 \
  bash dev/warm_time_device.sh > "$OUT/c.txt" 2>&1
echo "phase A done at $(( $(date +%s) - T0 )) s"

regret() {  # build gpu ops name seconds [store to copy]
  local K=pb/tools/ktune; [ "$1" = base ] && K=pb/base/tools/ktune
  local C=/tmp/kc-regret-$4; rm -rf "$C"; mkdir -p "$C"
  [ -n "${6:-}" ] && cp -al "$6/store" "$C/store" 2>/dev/null
  CUDA_VISIBLE_DEVICES=$2 CUDA_CACHE_PATH=/tmp/cc-regret-$4 timeout "$5" "$K" regret --set "${REGRET_SET:-gpu}" \
    --ops "$3" --rounds 4 --exhaustive-budget 0.2 --cache "$C" --deadline $(( $5 - 15 )) \
    > "$OUT/regret_$4.txt" 2> "$OUT/regret_$4.err"
  echo "regret $4 rc=$? at $(( $(date +%s) - T0 )) s (limit $5 s)" | tee -a "$OUT/regret_$4.txt"
}
B1=${B1_S:-130}; B2=${B2_S:-95}
regret this 0 gemm gemm_this "$B1" &
regret base 1 rmsnorm,silu_mul rows_base "$B1" &
wait
regret base 1 gemm gemm_base "$B2" /tmp/kc-regret-gemm_this &
regret this 0 rmsnorm,silu_mul rows_this "$B2" /tmp/kc-regret-rows_base &
wait
{ echo "== A: warm_time (base, this; own stores)"; grep -hE "^[a-z]+_(shape|suite)_.* rc=" "$OUT/a.txt" "$OUT/c.txt"
  for s in gemm_this gemm_base rows_this rows_base; do
    echo; echo "== regret $s"; grep -E "^keys|rc=" "$OUT/regret_$s.txt" | head -4
  done
  echo "total $(( $(date +%s) - T0 )) s"; } > "$OUT/table.txt"
tar czf "$R/s24.tgz" -C "$OUT" . ; cp "$OUT/table.txt" "$R/table.txt"
cat "$OUT/table.txt"
