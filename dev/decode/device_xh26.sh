#!/bin/bash
# GPU machine, one call (issue 32, twenty-sixth session, helper small): at 1/2/4/8 x 6144x4096 the
# cluster split NT2 U2 D2 XR0 (and U4 D1) with DC_XH + DC_ST (the hand-over without a cluster
# barrier; the first stages before the block barrier) against the curated entries, with and without
# DC_EF, in the same interleaved rounds (knob_ab: GemmGpu.DecodeCacheHintTwinsVsReference and
# DecodeTmaFewRowKnobsVsReference beside gemm_bench process 0, then PROCS processes, read flush and
# rotation, cuBLASLt's best and the read in the same rounds, every second process reversed);
# sr_table.py's X/ref (TOKEN XH1), cfg_ratios.py; then `ktune tune gemm` at TUNE_KEYS (tune_keys:
# one database each) and tunecmp.py's table of the picks.
#   OUT=$OUT DEADLINE=150 bash dev/decode/device_xh26.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-150}"
EF=DC_EF=1; XS=DC_XH=1,DC_ST=1
row() { local E0 U4; E0=$(d "$1" 4 2 2 2 0 4); U4=$(d "$1" 4 2 4 1 0 4)
  echo "$E0:$E0,$XS:$E0,$EF:$E0,$XS,$EF:$E0,DC_XH=1,$EF:$U4,$EF:$U4,$XS,$EF"; }
KEYS_AB=${KEYS_AB:-"1x6144x4096:$(row 1)
2x6144x4096:$(row 1)
4x6144x4096:$(row 1)
8x6144x4096:$(row 1)"}
SHAPES=$(echo "$KEYS_AB" | cut -d: -f1 | paste -sd,)
knob_ab "GemmGpu.DecodeCacheHintTwinsVsReference:GemmGpu.DecodeTmaFewRowKnobsVsReference" "${TEST_DEF:-90}" 60 25 "${BENCH_DEF:-16}"
grep -h "^CLOCKS" "$OUT"/bench*.log | awk '{print $4, $5}' | sort | uniq -c | head -3
python3 dev/decode/sr_table.py "$OUT" "$n" XH1 2>&1 | cut -c1-200 > "$OUT/ab.txt"
python3 dev/decode/cfg_ratios.py "$OUT" "$n" 2>&1 | cut -c1-170 > "$OUT/ratios.txt"
KEYS=${TUNE_KEYS:-2x6144x4096 4x6144x4096 8x6144x4096} TUNE_S=${TUNE_S:-14} tune_keys > "$OUT/tune.txt" 2>&1
cat "$OUT/ab.txt" "$OUT/ratios.txt"; cut -c1-200 "$OUT/tune.txt" | head -20
end_call
