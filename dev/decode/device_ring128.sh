#!/bin/bash
# GPU machine, one call (issue 32, twenty-second session, the 64/128-row probe): is the 128-row
# stream bound by the weight bytes the ring keeps in flight (the stage's slot is held by A's rows,
# two thirds of it at 128 rows, and by the stage's wgmmas before its release), or by the ring's
# bytes per SM whatever the split? The same cluster K split config (G4 W4 NT1 XR1 at 128 rows, XR3
# at 64) over ring shapes of equal or different weight bytes in flight (U x D), every config timed
# in the same interleaved rounds (--only/--twin, flush and rotation) in PROCS processes (the list
# reversed in even ones); then nvdisasm over the picks' cubins staged in sass/ (built on the dev
# machine by ktune compile) for the start / end code bytes.
#   OUT=$OUT DEADLINE=60 bash dev/decode/device_ring128.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-60}"
d() {  # MT U DEPTH XR
  echo "DC_WG=2,DC_WARPS=4,DC_NT=1,DC_MT=$1,DC_U=$2,DC_DEPTH=$3,DC_PF=1,DC_XR=$4,DC_GRID=4"
}
R128="$(d 16 2 2 1):$(d 16 1 2 1):$(d 16 1 3 1):$(d 16 1 4 1):$(d 16 2 1 1):$(d 16 4 1 1)"
R64="$(d 8 2 2 3):$(d 8 1 2 3):$(d 8 2 3 3):$(d 8 1 4 3)"
KEYS_AB="128x4096x4096:$R128
128x4096x14336:$R128
64x4096x4096:$R64
64x4096x14336:$R64"
SHAPES=128x4096x4096,128x4096x14336,64x4096x4096,64x4096x14336
if [ -d sass ] && command -v nvdisasm > /dev/null; then
  mkdir -p /tmp/sass
  for f in sass/*.cubin; do nvdisasm -c -fun ktune_gemm_decode "$f" > "/tmp/sass/$(basename "$f" .cubin).sass" 2>&1 \
    || cuobjdump -sass "$f" > "/tmp/sass/$(basename "$f" .cubin).sass" 2>&1; done
  (cd /tmp/sass && tar czf "$OUT/sass.tgz" ./*.sass); echo "sass: $(ls /tmp/sass | wc -l) files"
fi
PROCS=${PROCS:-2} twin_procs "${BENCH_S:-22}"
grep -h "^VERIFY" "$OUT"/bench*.log | grep -vc " ok " | sed 's/^/VERIFY not ok: /'
python3 dev/decode/l2p_table.py "$OUT" "$n" 2>&1 | grep -v " pre " | cut -c1-200 > "$OUT/ab.txt"
cat "$OUT/ab.txt"
end_call
