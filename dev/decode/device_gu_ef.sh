#!/bin/bash
# GPU machine, one call (issue 32, twenty-fifth session, helper small): DC_EF on the gate/up pair's
# 3-D weight boxes (be8e8bb). GemmGpu.DecodeTmaCacheHintVsReference and
# DecodeCacheHintTwinsVsReference (the pair's hinted boxes against float64) beside gemm_bench process
# 0, then PROCS (default 4) processes: at each key the plain pick's config with and without DC_EF
# (--only and --twin), so the plain GEMM and the pair (silu_mul, and its gtwin1) each run with and
# without the hint in the same interleaved rounds; dev/decode/gu_ef_table.py's table.
#   OUT=$OUT DEADLINE=110 bash dev/decode/device_gu_ef.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-110}"
P16=$(d 2 4 1 4 2 3 4); M1="$(d 1 4 1 4 2 0 4),DC_XH=1"; Q16="$(d 2 4 2 2 2 3 4),DC_XH=1,DC_ST=1"
N2=$(d 1 4 2 4 1 0 4)
KEYS_AB=${KEYS_AB:-"2x4096x14336:$(v "$M1" DC_EF=1)
4x4096x14336:$(v "$M1" DC_EF=1)
8x4096x14336:$(v "$M1" DC_EF=1)
16x4096x14336:$(v "$P16" DC_EF=1)
8x4096x4096:$(v "$M1" DC_EF=1)
2x6144x4096:$(v "$N2" DC_EF=1)
4x6144x4096:$(v "$N2" DC_EF=1)
16x6144x4096:$(v "$Q16" DC_EF=1)"}
SHAPES=$(echo "$KEYS_AB" | cut -d: -f1 | paste -sd,)
PROCS=${PROCS:-4} knob_ab "GemmGpu.DecodeTmaCacheHintVsReference:GemmGpu.DecodeCacheHintTwinsVsReference" \
  "${TEST_DEF:-45}" 45 14 "${BENCH_DEF:-14}"
python3 dev/decode/gu_ef_table.py "$OUT" "$n" > "$OUT/gu_ef.txt" 2>&1
grep -h "^CLOCKS" "$OUT"/bench*.log | cut -c1-160 | sort | uniq -c | sort -rn | head -3
cut -c1-200 "$OUT/gu_ef.txt"
end_call
