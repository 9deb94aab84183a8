#!/bin/bash
# GPU machine, one call (issue 32, twenty-first session): the probe knob DC_LANES = 1 (a stage's
# boxes issued by the producer warp's lanes, one each, instead of by the elected thread in turn)
# against the same configs without it. Binaries from pb/ (dev/decode/stage.sh; pb/bin/ts: the TMA
# stream probe, dev/decode/tma_stream_probe.cu); logs under $OUT:
#   0. the TMA stream probe, TS_PROCS processes (the GPU to itself);
#   1. GemmGpu.DecodeTmaLanesVsReference in the background beside process 0 of gemm_bench (it
#      compiles every config; its times are not used);
#   2. PROCS gemm_bench processes, --only each key's configs with and without the knob and --twin
#      the same, so both are timed in the same interleaved rounds with cuBLASLt's best and the read
#      (the --only order reversed in even processes);
#   3. dev/decode/l2p_table.py: per key, mode and config, both µs and LANES1/base per process.
#   OUT=$OUT DEADLINE=110 bash dev/decode/device_lanes.sh
# DC_LANES was refuted and reverted (bench/NOTES.md, twenty-first session): run it on 41740a3's tree.
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-110}"
for p in $(seq 1 "${TS_PROCS:-2}"); do
  timeout 30 "$PWD/pb/bin/ts" "${TS_ROUNDS:-25}" > "$OUT/ts$p.txt" 2>&1; echo "ts $p rc=$?"
done
KEYS="16x4096x4096:$(d 2 4 1 4 2 3 4):$(d 2 4 1 2 5 3 4)
16x6144x4096:$(d 2 4 2 2 2 3 4)
16x14336x4096:$(d 2 4 2 4 1 0 0):$(d 2 8 1 4 1 0 6)
16x4096x14336:$(d 2 4 1 4 2 0 4):$(d 2 4 1 2 5 0 4)
16x28672x4096:$(d 2 8 1 2 2 0 6):$(d 2 8 1 4 1 0 6)
32x4096x4096:$(d 4 4 1 2 2 0 4)
64x4096x4096:$(d 8 4 1 2 2 3 4)
128x4096x4096:$(d 16 4 1 2 2 1 4)"
KNOB=${KNOB:-DC_LANES=1}
list() { knob_list "$@"; }  # each config with and without $KNOB
SHAPES=${SHAPES:-16x4096x4096,16x6144x4096,16x14336x4096,16x4096x14336,16x28672x4096,32x4096x4096,64x4096x4096,128x4096x4096}
knob_ab "GemmGpu.DecodeTmaLanesVsReference" 40 30 10 14
python3 dev/decode/l2p_table.py "$OUT" "$n" 2>&1 | grep -v " pre " | cut -c1-260 > "$OUT/ab.txt"
cat "$OUT/ab.txt"
for p in $(seq 1 "${TS_PROCS:-2}"); do echo "== ts process $p"; grep "^TS X\|^TS read\|^TS empty" "$OUT/ts$p.txt" | cut -c1-200; done
end_call
