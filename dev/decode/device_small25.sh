#!/bin/bash
# GPU machine, one call (issue 32, twenty-fifth session, helper small; after device_gu_ef.sh):
#   1. the L2 probe (pb/bin/l2h, dev/decode/l2_hint_probe.cu built on the dev machine) in L2H_PROCS
#      processes: four weight streams (read .cs / default, TMA default / evict-first) timed after a read
#      flush and after three launches of each stream over other weight copies;
#   2. knob_ab beside GemmGpu.DecodeTmaCacheHintVsReference:GemmGpu.DecodeCacheHintTwinsVsReference:
#      the NT2 XR0 cluster-split entries (U2 D2, U4 D1) with and without DC_EF at 1/2/4/8x6144x4096
#      (the curated twins), PROCS (default 4) processes, cuBLASLt's best and the read in the same rounds;
#   3. `ktune tune gemm` at TUNE_KEYS (default the 2/4/8-row 6144 keys), one database each.
#   OUT=$OUT DEADLINE=110 bash dev/decode/device_small25.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-110}"
for p in $(seq 1 "${L2H_PROCS:-3}"); do
  timeout 30 "$PWD/pb/bin/l2h" "${L2H_ROUNDS:-30}" > "$OUT/l2h$p.txt" 2>&1; echo "l2h $p rc=$?"
done
E30=$(d 1 4 2 2 2 0 4); E31=$(d 1 4 2 4 1 0 4); EF=DC_EF=1
KEYS_AB=${KEYS_AB:-"1x6144x4096:$(v "$E30" $EF):$(v "$E31" $EF)
2x6144x4096:$(v "$E30" $EF):$(v "$E31" $EF)
4x6144x4096:$(v "$E30" $EF):$(v "$E31" $EF)
8x6144x4096:$(v "$E30" $EF):$(v "$E31" $EF)"}
SHAPES=$(echo "$KEYS_AB" | cut -d: -f1 | paste -sd,)
PROCS=${PROCS:-4} knob_ab "GemmGpu.DecodeTmaCacheHintVsReference:GemmGpu.DecodeCacheHintTwinsVsReference" \
  "${TEST_DEF:-45}" 45 12 "${BENCH_DEF:-15}"
python3 dev/decode/gu_ef_table.py "$OUT" "$n" > "$OUT/gu_ef.txt" 2>&1
python3 dev/decode/cfg_ratios.py "$OUT" "$n" > "$OUT/cfg.txt" 2>&1
KEYS=${TUNE_KEYS:-2x6144x4096 4x6144x4096 8x6144x4096} TUNE_S=${TUNE_S:-14} tune_keys > "$OUT/tune.txt" 2>&1
grep -h "^CLOCKS" "$OUT"/bench*.log | cut -c1-160 | awk '{print $4, $5}' | sort | uniq -c | head -3
for p in $(seq 1 "${L2H_PROCS:-3}"); do echo "== l2h process $p"; cut -c1-200 "$OUT/l2h$p.txt"; done
cut -c1-230 "$OUT/gu_ef.txt"
cut -c1-170 "$OUT/cfg.txt" | head -40
cut -c1-200 "$OUT/tune.txt" | head -20
end_call
