#!/bin/bash
# GPU machine, one call (issue 32, fourteenth session, third task): the 16-row decode keys of the
# LLM suite with deeper TMA rings (6 and 10 stages, up to 216 KB in flight per block) and DC_XR = 3
# on the cluster K split, beside their shipped twins (the probe: same tile, same grid, only the
# bytes in flight or the cluster end change):
#   1. the GemmGpu tests that hold the new curated entries and knob rows (TESTS, one process per
#      ;-separated filter, TEST_S s each), the copy rate (dev/copy_rate.py);
#   2. PROCS gemm_bench processes over the four keys (the decode kind's curated list, the fair
#      method: read flush and rotation, cuBLASLt #0..7 in the same rounds), each process's pre-pass
#      (every candidate's flushed median) printed;
#   2b. the balance probe: 128-row tiles at N = 8448 and 16896 (even over 132 SMs), D2 and D3;
#   3. `ktune tune gemm --m 16 --n N --k K --layout NT --json` per key (KTUNE_VERBOSE=1, isolation,
#      a fresh database per key) and dev/decode/tunecmp.py's table.
#   OUT=$OUT DEADLINE=100 bash dev/decode/device_deep.sh     (binaries: dev/decode/stage.sh)
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-100}"
KEYS=${KEYS:-16x6144x4096 16x4096x4096 16x28672x4096 16x4096x14336}
if [ "${TESTS:-}" != none ] && fits 30 tests; then
  GT_LINES=30 gpu_tests "GemmGpu.DecodeVsReference;GemmGpu.DecodeTmaVsReference;GemmGpu.DecodeTmaClusterEnd*" 48
fi
fits 12 copy && timeout 20 python3 dev/copy_rate.py 2>&1 | tail -1
SH=$(echo $KEYS | tr ' ' ,)
SHAPES=$SH bench_procs 3 "${BENCH_S:-14}"
grep -h "^VERIFY" "$OUT"/bench*.log 2>/dev/null | grep -v " ok " | head -10
# The balance probe: 128-row tiles where they fill the SMs evenly (N = 8448: 66 tiles, 132 blocks
# of the cluster split; N = 16896: 132 tiles, one per persistent block), ring depths 2 and 3.
d() { echo "DC_WG=2,DC_WARPS=$1,DC_NT=$2,DC_MT=2,DC_U=$3,DC_DEPTH=$4,DC_PF=1,DC_XR=0,DC_GRID=$5"; }
if fits 25 balance; then
  S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout 12 "$B/bench/gemm_bench" --kinds=decode \
    "--only=$(d 4 2 2 2 4);$(d 4 2 2 3 4);$(d 8 1 2 2 6);$(d 8 1 2 3 6)" \
    --shapes=16x8448x4096,16x16896x4096 --rounds=2 > "$OUT/balance.log" 2> "$OUT/balance.err"
  echo "balance rc=$? $(( $(date +%s) - S ))s"
fi
tune_keys
final_tables "$n" balance "balance probe"
