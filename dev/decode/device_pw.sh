#!/bin/bash
# GPU machine, one call (issue 32, twenty-second session, second task): the probe knob DC_PW (the
# TMA producer's per-stage path: 1 the tile and k step stepped instead of divided, 2 also the whole
# producer warp in the loop with one elected lane issuing) against the same configs without it,
# paired (after the per-stage trace of the 128/64-row picks with and without the knob, from
# pb/bench/gemm_bench_stage: DC_TRACE 2): GemmGpu.DecodeTmaProducerPathVsReference beside
# gemm_bench process 0 (it compiles), then PROCS gemm_bench processes, each config, its PW1 and its PW2 as --only and --twin in the same
# interleaved rounds (flush and rotation, cuBLASLt's best), every even process reversed (knob_ab,
# common.sh; dev/decode/l2p_table.py: PW1/base, PW2/base). First the SASS of the cubins staged in
# sass/ (nvdisasm; built here by ktune compile + ptxas).
# Call 2 ran it on b679b1f with OLD=1's list: each config absent (then the old path), DC_PW=1 and
# DC_PW=2 (the warp-converged producer). Since 8dafa41 that producer is the default, so without OLD
# the list is each config absent (the default), DC_PW=1 and DC_PW=0 (the old path).
#   OUT=$OUT DEADLINE=85 bash dev/decode/device_pw.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-85}"
p() {  # a config and the same with each knob value
  if [ "${OLD:-0}" = 1 ]; then echo "$1:$1,DC_PW=1:$1,DC_PW=2"; else echo "$1:$1,DC_PW=1:$1,DC_PW=0"; fi
}
PWX=2; [ "${OLD:-0}" = 1 ] || PWX=0  # the trace's other producer path
P128=$(d 16 4 1 2 2 1 4); P64=$(d 8 4 1 2 2 3 4); P16=$(d 2 4 1 4 2 3 4)
KEYS_AB="128x4096x4096:$(p "$P128"):$(p "$(d 16 4 1 1 4 1 4)")
128x4096x14336:$(p "$P128")
64x4096x4096:$(p "$P64")
32x4096x4096:$(p "$(d 4 4 1 2 2 0 4)")
16x4096x4096:$(p "$P16")
16x28672x4096:$(p "$(d 2 8 1 4 1 0 6)")"
SHAPES=${SHAPES:-128x4096x4096,128x4096x14336,64x4096x4096,32x4096x4096,16x4096x4096,16x28672x4096}
if [ -d sass ] && command -v nvdisasm > /dev/null; then
  for f in sass/*.cubin; do
    nvdisasm -c "$f" > "/tmp/$(basename "$f" .cubin).sass" 2>&1
    echo "$(basename "$f"): $(grep -c '^ */\*[0-9a-f]*\*/' "/tmp/$(basename "$f" .cubin).sass") instructions," \
      "UTMALDG $(grep -c UTMALDG "/tmp/$(basename "$f" .cubin).sass"), R2UR $(grep -c R2UR "/tmp/$(basename "$f" .cubin).sass")," \
      "ELECT $(grep -c ELECT "/tmp/$(basename "$f" .cubin).sass"), CALL $(grep -c 'CALL' "/tmp/$(basename "$f" .cubin).sass")"
  done
  (cd /tmp && tar czf "$OUT/sass.tgz" ./*.sass)
fi
if fits 8 trace; then
  TO="$P128@128x4096x4096;$P128,DC_PW=1@128x4096x4096;$P128,DC_PW=$PWX@128x4096x4096;$P64@64x4096x4096"
  TO="$TO;$P64,DC_PW=$PWX@64x4096x4096;$P16@16x4096x4096;$P16,DC_PW=$PWX@16x4096x4096"
  stage_trace 25 "$TO" 16x4096x4096,64x4096x4096,128x4096x4096
fi
knob_ab "GemmGpu.DecodeTmaProducerPathVsReference" 60 35 12 "${AB_S:-16}"
python3 dev/decode/l2p_table.py "$OUT" "$n" 2>&1 | grep -v " pre " | cut -c1-260 > "$OUT/ab.txt"
cat "$OUT/ab.txt"
end_call
