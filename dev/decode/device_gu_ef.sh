#!/bin/bash
# GPU machine, one call (issue 32, twenty-fifth session, helper small): DC_EF on the gate/up pair's
# 3-D weight boxes (be8e8bb). GemmGpu.DecodeTmaCacheHintVsReference and
# DecodeCacheHintTwinsVsReference (the pair's hinted boxes against float64) beside gemm_bench process
# 0, then PROCS (default 4) processes: at each key the plain pick's config with and without DC_EF
# (--only and --twin), so the plain GEMM and the pair (silu_mul, and its gtwin1) each run with and
# without the hint in the same interleaved rounds; with SET=both also DC_BB (one `full` barrier per box
# column) beside the 1..16-row picks and GemmGpu.DecodeTmaBoxBarriersVsReference; gu_ef_table.py's table.
#   OUT=$OUT DEADLINE=110 bash dev/decode/device_gu_ef.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-110}"
P16=$(d 2 4 1 4 2 3 4); M1="$(d 1 4 1 4 2 0 4),DC_XH=1"; Q16="$(d 2 4 2 2 2 3 4),DC_XH=1,DC_ST=1"
N2=$(d 1 4 2 4 1 0 4); G6U4="$(d 2 8 1 4 1 0 6),DC_EF=1"; G0="$(d 2 4 2 4 1 0 0),DC_EF=1"
EF=DC_EF=1; BB=DC_BB=1
# SET=ef: the pair's DC_EF keys alone; both (default): also DC_BB beside the picks at 1..16 rows.
KEYS_AB=${KEYS_AB:-"2x4096x14336:$(v "$M1" $EF)
4x4096x14336:$(v "$M1" $EF)
8x4096x14336:$(v "$M1" $EF)
8x4096x4096:$(v "$M1" $EF)
2x6144x4096:$(v "$N2" $EF)
4x6144x4096:$(v "$N2" $EF)"}
if [ "${SET:-both}" = both ]; then KEYS_AB="$KEYS_AB
16x4096x14336:$(v "$P16" $EF "$EF,$BB")
16x6144x4096:$(v "$Q16" $EF "$EF,$BB")
1x4096x4096:$(v "$M1,$EF" $BB)
16x4096x4096:$(v "$P16" $BB $EF "$EF,$BB")
16x14336x4096:$(v "$G0" $BB)
16x28672x4096:$(v "$G6U4" $BB)"
else KEYS_AB="$KEYS_AB
16x4096x14336:$(v "$P16" $EF)
16x6144x4096:$(v "$Q16" $EF)"; fi
SHAPES=$(echo "$KEYS_AB" | cut -d: -f1 | paste -sd,)
TESTS=${TESTS:-"GemmGpu.DecodeTmaCacheHintVsReference:GemmGpu.DecodeCacheHintTwinsVsReference;GemmGpu.DecodeTmaBoxBarriersVsReference"}
PROCS=${PROCS:-4} knob_ab "$TESTS" \
  "${TEST_DEF:-45}" 45 14 "${BENCH_DEF:-20}"
python3 dev/decode/gu_ef_table.py "$OUT" "$n" > "$OUT/gu_ef.txt" 2>&1
grep -h "^CLOCKS" "$OUT"/bench*.log | cut -c1-160 | sort | uniq -c | sort -rn | head -3
cut -c1-230 "$OUT/gu_ef.txt"
end_call
