#!/bin/bash
# GPU machine, one call (issue 32, twenty-third session, helper small): the few-row start and end
# paths. (1) The picks' SASS: cuobjdump -sass of the cubins staged in sass/ (built on the dev machine
# by `ktune compile gemm_decode --arch sm_90a -D ...`), sass_paths.py's markers. (2) The bare TMA
# stream (pb/bin/ts, tma_stream_probe.cu) for the same call's entry -> first issue -> first landed.
# (3) The per-phase trace (pb/bench/gemm_bench_trace, DC_TRACE 1) of the 16-row picks with and
# without the probe knobs DC_XH / DC_ST, trace_table.py's split. (4) knob_ab: gemm_bench process 0
# compiles beside GemmGpu.DecodeTmaFewRowKnobsVsReference, then PROCS processes of the KEYS_AB list
# (each key's pick and its knob variants in the same interleaved rounds with the read and cuBLASLt's
# best, every second process reversed); l2p_table.py's X/base.
#   OUT=$OUT DEADLINE=200 bash dev/decode/device_small.sh     (needs 657f067's tree: DC_ST 1, 2 and 3 were the
#   probe's values then; its DC_ST 3 is today's DC_ST 1)
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-200}"
mkdir -p "$OUT/s"
CU=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for f in sass/*.bin; do
  n=$(basename "$f" .bin)
  "$CU" -sass "$f" > "$OUT/s/$n.sass" 2>&1 || nvdisasm "$f" > "$OUT/s/$n.sass" 2>&1
done
python3 dev/decode/sass_paths.py "$OUT"/s/*.sass > "$OUT/sass.txt" 2>&1; cut -c1-220 "$OUT/sass.txt"
[ "${TS:-1}" = 1 ] && { timeout 30 "$PWD/pb/bin/ts" "${TS_ROUNDS:-15}" > "$OUT/ts.txt" 2>&1; echo "ts rc=$?"; }
# v (common.sh): a knob list "DC_XH=1,DC_ST=3" is one entry.
P16=$(d 2 4 1 4 2 3 4); Q16=$(d 2 4 2 2 2 3 4); R16=$(d 2 8 1 4 1 0 6); R16b=$(d 2 8 1 2 2 0 6)
ALL="DC_XH=1 DC_ST=1 DC_ST=2 DC_ST=3 DC_XH=1,DC_ST=3"
TRACE_ONLY="$P16@16x4096x4096;$P16,DC_XH=1@16x4096x4096;$P16,DC_ST=3@16x4096x4096;$P16,DC_XH=1,DC_ST=3@16x4096x4096"
TRACE_ONLY="$TRACE_ONLY;$Q16@16x6144x4096;$Q16,DC_XH=1@16x6144x4096;$Q16,DC_ST=3@16x6144x4096"
TRACE_ONLY="$TRACE_ONLY;$R16@16x28672x4096;$R16,DC_ST=3@16x28672x4096"
if fits 60 trace; then
  S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_trace timeout "${TRACE_S:-35}" "$B/bench/gemm_bench_trace" --kinds=decode \
    --trace="${TRACE_N:-5}" --only="$TRACE_ONLY" --shapes=16x4096x4096,16x6144x4096,16x28672x4096 \
    > "$OUT/trace.log" 2> "$OUT/trace.err"
  echo "trace rc=$? $(( $(date +%s) - S ))s, $(grep -c '^DCT ' "$OUT/trace.log") block lines"
  python3 dev/decode/trace_table.py < "$OUT/trace.log" > "$OUT/phases.txt" 2>&1
  cut -c1-250 "$OUT/phases.txt"
fi
KEYS_AB="16x4096x4096:$(v "$P16" $ALL DC_WP=1 DC_WP=1,DC_XH=1,DC_ST=3)
16x6144x4096:$(v "$Q16" $ALL)
16x4096x14336:$(v "$P16" $ALL)
16x14336x4096:$(v "$R16" DC_ST=1 DC_ST=2 DC_ST=3)
16x28672x4096:$(v "$R16" DC_ST=1 DC_ST=2 DC_ST=3):$(v "$R16b" DC_ST=3)
4x4096x4096:$(v "$(d 1 4 1 2 5 0 4)" DC_XH=1 DC_ST=2 DC_ST=3 DC_XH=1,DC_ST=3)
4x6144x4096:$(v "$(d 1 4 2 4 1 0 4)" DC_XH=1 DC_ST=3 DC_XH=1,DC_ST=3)
4x14336x4096:$(v "$(d 1 4 2 4 1 0 0)" DC_ST=2 DC_ST=3)
4x4096x14336:$(v "$(d 1 4 1 4 2 0 4)" DC_XH=1 DC_ST=3 DC_XH=1,DC_ST=3)
4x28672x4096:$(v "$(d 1 8 1 4 1 0 6)" DC_ST=2 DC_ST=3)
1x4096x4096:$(v "$(d 1 4 1 4 2 0 4)" DC_XH=1 DC_ST=3 DC_XH=1,DC_ST=3)
1x14336x4096:$(v "$(d 1 8 1 4 1 0 6)" DC_ST=3)"
SHAPES=${SHAPES:-16x4096x4096,16x6144x4096,16x4096x14336,16x14336x4096,16x28672x4096,4x4096x4096,4x6144x4096,4x14336x4096,4x4096x14336,4x28672x4096,1x4096x4096,1x14336x4096}
knob_ab "GemmGpu.DecodeTmaFewRowKnobsVsReference" "${TEST_DEF:-90}" 60 15 "${BENCH_DEF:-45}"
python3 dev/decode/l2p_table.py "$OUT" "$n" 2>&1 | grep -v " pre " | cut -c1-230 > "$OUT/ab.txt"
cat "$OUT/ab.txt"
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err ./s 2>/dev/null; rm -rf ./*.err ./*.log ./s)
